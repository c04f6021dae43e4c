"""results.json -> two PNGs: cost per chunk against stream length, and the extra per agent turn
against calls per turn (CPU time, and instructions where counted), every variant, a panel per provider."""

from __future__ import annotations

import json
import sys
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from report import LABELS
from turn_report import calls_of, floor_of, instruction_extra

# One colour per variant in every panel and plot (matplotlib's cycle would follow each panel's order).
_COLOURS = dict(
    zip(
        [
            "bare",
            "otel_toolcalls",
            "anthropic_own",
            "openllmetry",
            "otel_openai_v2",
            "otel_genai_openai",
            "openinference",
        ],
        plt.rcParams["axes.prop_cycle"].by_key()["color"],
        strict=False,
    )
)


def _style(variant: str) -> dict[str, Any]:
    return {"marker": "o", "label": LABELS.get(variant, variant), "color": _COLOURS.get(variant)}


def per_chunk(summary: dict[str, Any], target: str) -> None:
    providers = [p for p in summary if summary[p]]
    fig, axes = plt.subplots(1, len(providers), figsize=(6.5 * len(providers), 4.8), squeeze=False)
    for ax, provider in zip(axes[0], providers, strict=True):
        for variant, row in summary[provider].items():
            points = sorted(
                (int(w[3:]), cell["value"])
                for w, cell in row.items()
                if w.startswith("len") and isinstance(cell, dict) and cell.get("value") is not None
            )
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, **_style(variant))
        ax.set_xscale("log")
        ax.set_xlabel("argument fragments per stream")
        ax.set_ylabel("client CPU microseconds per chunk (median)")
        ax.set_title(f"{provider}: cost per chunk vs stream length")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=110)


def per_turn(summary: dict[str, Any], instructions: dict[str, Any] | None, target: str) -> None:
    providers = [p for p in summary if summary[p]]
    rows = 2 if instructions else 1
    fig, axes = plt.subplots(rows, len(providers), figsize=(6.5 * len(providers), 4.6 * rows), squeeze=False)
    for column, provider in enumerate(providers):
        ax = axes[0][column]
        for variant, row in summary[provider].items():
            if variant == "bare":
                continue
            points = sorted(
                (calls_of(w), cell["extra"])
                for w, cell in row.items()
                if w.startswith("turn") and isinstance(cell, dict) and cell.get("extra") is not None
            )
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, **_style(variant))
        ax.set_xlabel("tool calls per turn")
        ax.set_ylabel("extra client CPU us per turn over bare (median of paired)")
        ax.set_title(f"{provider}: extra CPU per agent turn")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        if not instructions:
            continue
        ax = axes[1][column]
        counted = instructions.get(provider) or {}
        for variant, row in counted.items():
            if variant == "bare" or not row:
                continue
            points = sorted(
                (calls_of(w), extra / 1e3)
                for w in row
                if w.startswith("turn") and (extra := instruction_extra(counted, variant, w)) is not None
            )
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, **_style(variant))
        _floor_line(ax, counted)
        ax.set_xlabel("tool calls per turn")
        ax.set_ylabel("extra instructions per turn over bare (thousands)")
        ax.set_title(f"{provider}: extra instructions per agent turn (callgrind)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=110)


def _floor_line(ax: Any, counted: dict[str, Any]) -> None:
    """The SDK's own cost of the package's spans and records (sdk_floor.py), dashed: the least any
    code emitting them pays."""
    row = counted.get("otel_toolcalls") or {}
    points = sorted(
        (calls_of(w), floor / 1e3)
        for w in row
        if (floor := floor_of(counted, "otel_toolcalls", w)) is not None
    )
    if points:
        xs, ys = zip(*points, strict=True)
        ax.plot(
            xs,
            ys,
            linestyle="--",
            color=_COLOURS["otel_toolcalls"],
            label="otel_toolcalls: SDK's cost of its signals",
        )


def main(source: str, chunk_target: str, turn_target: str | None = None) -> None:
    with open(source) as f:
        data = json.load(f)
    per_chunk(data["summary"], chunk_target)
    if turn_target:
        per_turn(data["summary"], data.get("instructions"), turn_target)


if __name__ == "__main__":
    main(*sys.argv[1:4])
