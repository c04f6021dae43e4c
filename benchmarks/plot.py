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


def _line(ax: Any, points: list[tuple[float, float]], **style: Any) -> None:
    if points:
        xs, ys = zip(*sorted(points), strict=True)
        ax.plot(xs, ys, **style)


def _label(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def per_chunk(summary: dict[str, Any], target: str) -> None:
    providers = [p for p in summary if summary[p]]
    fig, axes = plt.subplots(1, len(providers), figsize=(6.5 * len(providers), 4.8), squeeze=False)
    for ax, provider in zip(axes[0], providers, strict=True):
        for variant, row in summary[provider].items():
            _line(ax, _cells(row, "len", "value", lambda w: int(w[3:])), **_style(variant))
        ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(bottom=0)
        _label(ax, "argument fragments per stream", "client CPU microseconds per chunk (median)",
               f"{provider}: cost per chunk vs stream length")  # fmt: skip
    fig.tight_layout()
    fig.savefig(target, dpi=110)


def _cells(row: dict[str, Any], prefix: str, key: str, x_of: Any) -> list[tuple[float, float]]:
    """(x, cell[key]) for the row's workloads named ``prefix``...: a summary row's points."""
    return [
        (x_of(w), cell[key])
        for w, cell in row.items()
        if w.startswith(prefix) and isinstance(cell, dict) and cell.get(key) is not None
    ]


def per_turn(summary: dict[str, Any], instructions: dict[str, Any] | None, target: str) -> None:
    providers = [p for p in summary if summary[p]]
    rows = 2 if instructions else 1
    fig, axes = plt.subplots(rows, len(providers), figsize=(6.5 * len(providers), 4.6 * rows), squeeze=False)
    for column, provider in enumerate(providers):
        ax = axes[0][column]
        for variant, row in summary[provider].items():
            if variant != "bare":
                _line(ax, _cells(row, "turn", "extra", calls_of), **_style(variant))
        ax.grid(True, alpha=0.3)
        _label(ax, "tool calls per turn", "extra client CPU us per turn over bare (median of paired)",
               f"{provider}: extra CPU per agent turn")  # fmt: skip
        if instructions:
            _instruction_panel(axes[1][column], provider, instructions.get(provider) or {})
    fig.tight_layout()
    fig.savefig(target, dpi=110)


def _instruction_panel(ax: Any, provider: str, counted: dict[str, Any]) -> None:
    """Extra instructions per turn, every variant; dashed, the SDK's own cost of the package's spans
    and records (sdk_floor.py): the least any code emitting them pays."""
    for variant, row in counted.items():
        if variant == "bare" or not row:
            continue
        extras = ((w, instruction_extra(counted, variant, w)) for w in row if w.startswith("turn"))
        _line(ax, [(calls_of(w), e / 1e3) for w, e in extras if e is not None], **_style(variant))
    floors = ((w, floor_of(counted, "otel_toolcalls", w)) for w in counted.get("otel_toolcalls") or {})
    _line(ax, [(calls_of(w), f / 1e3) for w, f in floors if f is not None], linestyle="--",
          color=_COLOURS["otel_toolcalls"], label="otel_toolcalls: SDK's cost of its signals")  # fmt: skip
    ax.grid(True, alpha=0.3)
    _label(ax, "tool calls per turn", "extra instructions per turn over bare (thousands)",
           f"{provider}: extra instructions per agent turn (callgrind)")  # fmt: skip


def main(source: str, chunk_target: str, turn_target: str | None = None) -> None:
    with open(source) as f:
        data = json.load(f)
    per_chunk(data["summary"], chunk_target)
    if turn_target:
        per_turn(data["summary"], data.get("instructions"), turn_target)


if __name__ == "__main__":
    main(*sys.argv[1:4])
