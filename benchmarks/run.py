"""The benchmark: the bare SDKs, otel_toolcalls and every peer, on the same streams, in one run.

    python benchmarks/run.py            # full: every peer (each in its venv under .bench-venvs/),
                                        # writes benchmarks/RESULTS.md, results.json, cost_per_chunk.png
    python benchmarks/run.py --quick    # bare vs otel_toolcalls in this venv, under a minute, prints

Each (variant, provider) runs in a fresh process; rounds are interleaved (every variant once per
round, the order rotated each round) and the figures are medians over rounds, with overheads taken
as the median of per-round paired differences and ratios against the bare SDK, since the machine is
shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import instructions  # noqa: E402
import machine  # noqa: E402
import report  # noqa: E402
import sdk_floor  # noqa: E402
import streams  # noqa: E402
import venvs  # noqa: E402
from variants import VARIANTS  # noqa: E402

FULL_PLAN = {
    "len50": 30,
    "len500": 10,
    "len4000": 5,
    "len16000": 3,
    **{f"turn{count}": 40 for count in streams.TURN_CALLS},
    "concurrent": 1000,
    "mem1MB": 1,
    "mem10MB": 1,
}
QUICK_PLAN = {
    "len50": 10,
    "len500": 4,
    "len4000": 2,
    **{f"turn{count}": 20 for count in streams.TURN_CALLS},
    "concurrent": 100,
    "mem10MB": 1,
}
# Streams counted per turn workload under callgrind (each ~50x slower than natively).
CALLGRIND_TURNS = 2
# bench-quick counts the two-call turn only (bare and otel_toolcalls, about a minute).
QUICK_CALLGRIND = ("turn2",)


def run_worker(python: str, variant: str, provider: str, urls: dict[str, str], plan: dict[str, int]) -> Any:
    command = instructions.worker_command(python, variant, provider, urls, plan)
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        print(f"[bench] {variant}/{provider} failed:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _count_instructions(
    args: Any, chosen: list[Any], pythons: dict[str, str], urls: Any, plan: dict[str, int], info: Any
) -> Any:
    """Instruction counts under callgrind, before the CPU rounds: the counts do not depend on the
    load, the rounds do (two valgrind processes beside them on this 2-core machine doubled every
    variant's CPU time, bare included)."""
    turns = list(QUICK_CALLGRIND) if args.quick else [w for w in plan if w.startswith("turn")]
    reused: dict[str, dict[str, Any]] = {}
    if args.instructions_from:
        with open(args.instructions_from) as f:
            loaded = json.load(f)
        loaded = loaded.get("instructions", loaded)
        reused = {
            provider: {v: row for v, row in variants.items() if v != "otel_toolcalls" and "@" not in v}
            for provider, variants in loaded.items()
        }
        info["instructions_reused"] = {
            "from": os.path.basename(args.instructions_from),
            "variants": sorted({v for variants in reused.values() for v in variants}),
        }
    jobs = [
        (pythons[venv], v, p)
        for v, venv, ps in chosen
        for p in ("openai", "anthropic")
        if p in ps and v not in reused.get(p, {})
    ]

    # The OpenTelemetry SDK's own cost of each variant's spans and records (sdk_floor.py): counted
    # afresh for every variant, reused counts or not (a few seconds each under callgrind).
    floor_jobs = [
        (pythons[venv], v, p)
        for v, venv, ps in chosen
        for p in ("openai", "anthropic")
        if p in ps and v != "bare"
    ]

    def count() -> Any:
        fresh = instructions.measure(jobs, urls, {w: CALLGRIND_TURNS for w in turns})
        merged = {p: dict(reused.get(p, {})) for p in ("openai", "anthropic")}
        for provider, variants in fresh.items():
            merged[provider].update(variants)
        for provider, variants in sdk_floor.measure(floor_jobs, turns).items():
            for variant, by_workload in variants.items():
                row = merged[provider].get(variant)
                if not row:  # its count failed: no extra to split
                    continue
                for workload, floor in by_workload.items():
                    row.setdefault(workload, {}).update(floor)
        return merged

    return count()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="bare vs otel_toolcalls only, under a minute")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (full: 5, quick: 2)")
    parser.add_argument("--variants", help="comma-separated subset of variants")
    parser.add_argument("--out", default=HERE, help="where RESULTS.md, results.json and the plot go")
    parser.add_argument(
        "--no-instructions", action="store_true", help="skip the instruction counts (valgrind callgrind)"
    )
    parser.add_argument("--workloads", help="comma-separated subset of the plan's workloads")
    parser.add_argument(
        "--instructions-from",
        help="instructions.py --json output (or a results.json) whose counts are taken for every variant "
        "but otel_toolcalls, which is counted again: the others' code does not change with this tree",
    )
    args = parser.parse_args()

    plan = QUICK_PLAN if args.quick else FULL_PLAN
    if args.workloads:
        plan = {w: reps for w, reps in plan.items() if w in args.workloads.split(",")}
    rounds = args.rounds or (2 if args.quick else 5)
    chosen = [v for v in VARIANTS if not args.variants or v[0] in args.variants.split(",")]
    if args.quick:
        chosen = [v for v in chosen if v[0] in ("bare", "otel_toolcalls")]
    pythons: dict[str, str] = {}
    versions: dict[str, dict[str, str]] = {}
    for _, venv, _ in chosen:
        if venv in pythons:
            continue
        python = sys.executable if args.quick else venvs.ensure(venv)
        if python is None:
            continue
        pythons[venv] = python
        versions[venv] = venvs.versions(python)
    chosen = [v for v in chosen if v[1] in pythons]

    info = machine.describe()
    ready_recv, ready_send = multiprocessing.Pipe(duplex=False)
    stop_recv, stop_send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(
        target=streams.serve, args=(list(plan), ready_send, stop_recv), daemon=True
    )
    server.start()
    urls = ready_recv.recv()
    runs: dict[str, dict[str, list[Any]]] = {"openai": {}, "anthropic": {}}
    started = time.monotonic()
    counted = None
    try:
        if not args.no_instructions and instructions.available():
            counted = _count_instructions(args, chosen, pythons, urls, plan, info)
            print(f"[bench] instructions counted, {time.monotonic() - started:.0f} s", file=sys.stderr)
            # The rounds' own window: their load and duration, the counts' apart.
            info["instructions_seconds"] = round(time.monotonic() - started)
            started, info["loadavg_start"] = time.monotonic(), os.getloadavg()
        for r in range(rounds):
            for provider in ("openai", "anthropic"):
                order = [v for v in chosen if provider in v[2]]
                shift = r % len(order)
                for variant, venv, _ in order[shift:] + order[:shift]:
                    result = run_worker(pythons[venv], variant, provider, urls[provider], plan)
                    runs[provider].setdefault(variant, []).append(result)
            print(f"[bench] round {r + 1}/{rounds} done, {time.monotonic() - started:.0f} s", file=sys.stderr)
    finally:
        stop_send.send(True)
        server.join(10)
    lengths = ",".join(w[3:] for w in plan if w.startswith("len"))
    done = subprocess.run(
        [
            pythons["base"],
            os.path.join(HERE, "hotpath.py"),
            "--lengths",
            lengths,
            "--reps",
            "5" if args.quick else "15",
        ],
        capture_output=True,
        text=True,
    )
    hotpath = json.loads(done.stdout) if done.returncode == 0 else None
    if hotpath is None:
        print(f"[bench] hotpath failed:\n{done.stderr[-3000:]}", file=sys.stderr)
    info["loadavg_end"] = os.getloadavg()
    info["seconds"] = round(time.monotonic() - started)
    info["rounds"] = rounds
    info["plan"] = plan

    summary = report.summarize(runs, plan)
    venv_of = {v[0]: v[1] for v in chosen}
    text = report.markdown(summary, info, versions, venv_of, hotpath, quick=args.quick, instructions=counted)
    if args.quick:
        print(text)
        return 0
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(
            {
                "machine": info,
                "versions": versions,
                "hotpath": hotpath,
                "runs": runs,
                "summary": summary,
                "instructions": counted,
            },
            f,
            indent=1,
        )
    path = os.path.join(args.out, "RESULTS.md")
    # The per-adapter section comes from `make bench-providers` (providers.py): kept across reruns.
    import providers

    kept = providers.section_of(path)
    with open(path, "w") as f:
        f.write(text if kept is None else text.rstrip("\n") + "\n\n" + kept)
    subprocess.run(
        [
            pythons["base"],
            os.path.join(HERE, "plot.py"),
            os.path.join(args.out, "results.json"),
            os.path.join(args.out, "cost_per_chunk.png"),
            os.path.join(args.out, "cost_per_turn.png"),
        ],
        check=False,
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
