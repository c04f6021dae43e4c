"""Cost per chunk against stream length, every variant, one panel per provider: results.json -> PNG."""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from report import LABELS


def main(source: str, target: str) -> None:
    with open(source) as f:
        summary = json.load(f)["summary"]
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
                ax.plot(xs, ys, marker="o", label=LABELS.get(variant, variant))
        ax.set_xscale("log")
        ax.set_xlabel("argument fragments per stream")
        ax.set_ylabel("client CPU microseconds per chunk (median)")
        ax.set_title(f"{provider}: cost per chunk vs stream length")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
