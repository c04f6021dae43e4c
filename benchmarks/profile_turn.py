"""Where one agent turn's extra cost goes: cProfile over many instrumented turns, grouped by owner.

    python benchmarks/profile_turn.py [--provider openai] [--workload turn2] [--turns 300] [--top 40]

The fake provider runs in this process's threads (the profile shows the client's functions only:
cProfile sees the thread that enabled it). Functions are grouped as the package's own
(otel_toolcalls), the OpenTelemetry SDK/API's, and the rest (SDK, httpx, stdlib); the bare turn is
profiled too, so the difference of the totals is the instrumentation's.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import streams  # noqa: E402
import worker  # noqa: E402


def _owner(filename: str) -> str:
    if "otel_toolcalls" in filename and "/testing/" not in filename:
        return "otel_toolcalls"
    if "/opentelemetry/" in filename:
        return "opentelemetry"
    return "other"


def profile(provider: str, workload: str, turns: int, instrumented: bool) -> pstats.Stats:
    from otel_toolcalls.testing import FakeProvider

    build = streams.openai_script if provider == "openai" else streams.anthropic_script
    with FakeProvider(default=build(workload)) as fake:
        exporter = worker.instrument("otel_toolcalls" if instrumented else "bare", provider)
        make, open_sync, _ = worker.clients(provider, {})
        client = make(fake.base_url)
        for _ in range(5):
            for _ in open_sync(client):
                pass
        gc.collect()
        gc.freeze()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(turns):
            for _ in open_sync(client):
                pass
        profiler.disable()
        if exporter is not None:
            exporter.clear()
    return pstats.Stats(profiler)


def by_owner(stats: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():
        out[_owner(filename)] = out.get(_owner(filename), 0.0) + tottime
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--provider", default="openai")
    parser.add_argument("--workload", default="turn2")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument(
        "--bare", action="store_true", help="profile the bare SDK (run separately: instrument() is for good)"
    )
    args = parser.parse_args()
    if args.provider == "anthropic":
        os.environ["ANTHROPIC_OPEN_TELEMETRY"] = "false"
    stats = profile(args.provider, args.workload, args.turns, not args.bare)
    owners = by_owner(stats)
    print(
        "us per turn (profiled, so inflated) by owner: "
        + ", ".join(f"{k} {v / args.turns * 1e6:,.0f}" for k, v in sorted(owners.items()))
    )
    stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
