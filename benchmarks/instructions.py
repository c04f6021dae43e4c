"""Instructions per agent turn under valgrind's callgrind: the load-independent measure.

CPU time on this shared 2-core machine moves with the other processes' load (caches, frequency,
preemption); the number of instructions a turn executes does not. Each (variant, provider) runs
``worker.py --callgrind`` in a fresh process under ``valgrind --tool=callgrind``, which counts only
the measured streams (worker.CALLGRIND_FUNCTION); the package's extra is the difference to the bare
SDK's count of the same workload. Python under callgrind runs ~50x slower, so a few turns per
workload are counted, after two warm-up streams each.

    python benchmarks/instructions.py                  # bare vs otel_toolcalls, this venv, prints
    python benchmarks/instructions.py --variants bare,otel_toolcalls --turns 3 --workloads turn2

``make bench`` (run.py) calls ``measure`` for every variant in its venv and reports the result
next to the CPU times.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import streams  # noqa: E402
import venvs  # noqa: E402
from variants import VARIANTS  # noqa: E402

TURNS = tuple(f"turn{count}" for count in streams.TURN_CALLS)

# Instrumenting the interpreter's start and imports under callgrind takes minutes per process on
# this machine; with --instr-atstart=no valgrind only translates until the worker, warmed up, calls
# this client request (a C macro, hence the two-line library, built once with the system compiler).
_START = """#include <valgrind/callgrind.h>
void otel_toolcalls_bench_start(void) { CALLGRIND_START_INSTRUMENTATION; }
"""


def available() -> bool:
    return shutil.which("valgrind") is not None


def start_library(directory: str) -> str | None:
    """The shared library whose one function starts callgrind's instrumentation, or None (no C
    compiler or no valgrind headers: then everything is instrumented from the start, slower)."""
    source, library = os.path.join(directory, "cgstart.c"), os.path.join(directory, "libcgstart.so")
    with open(source, "w") as f:
        f.write(_START)
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    done = subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", library, source], capture_output=True)
    return library if done.returncode == 0 else None


def worker_command(
    python: str, variant: str, provider: str, urls: dict[str, str], plan: dict[str, int]
) -> list[str]:
    """worker.py's command line for one variant x provider (run.py's CPU rounds and the counts here)."""
    return [
        python,
        os.path.join(HERE, "worker.py"),
        "--variant",
        variant,
        "--provider",
        provider,
        "--urls",
        json.dumps(urls),
        "--plan",
        json.dumps(plan),
    ]


def callgrind_command(prefix: str, start: str | None) -> list[str]:
    """valgrind's part of the command line: count only inside worker.CALLGRIND_FUNCTION, one dump
    per return, into ``prefix``.<pid>; instrument from the start only without the start library."""
    from worker import CALLGRIND_FUNCTION

    return [
        "valgrind",
        "--tool=callgrind",
        f"--instr-atstart={'no' if start else 'yes'}",
        "--collect-atstart=no",
        f"--toggle-collect={CALLGRIND_FUNCTION}",
        f"--dump-after={CALLGRIND_FUNCTION}",
        f"--callgrind-out-file={prefix}.%p",
    ]


def _one(
    python: str, variant: str, provider: str, urls: dict[str, str], plan: dict[str, int], start: str | None
) -> Any:
    # "otel_toolcalls@/some/dir": the package as found in that directory (a snapshot to compare).
    variant, _, snapshot = variant.partition("@")
    with tempfile.TemporaryDirectory(prefix="otel-toolcalls-cg-") as tmp:
        prefix = os.path.join(tmp, "cg")
        command = [
            *callgrind_command(prefix, start),
            *worker_command(python, variant, provider, urls, plan),
            "--callgrind",
            prefix,
        ]
        if snapshot:
            # Not PYTHONPATH: the editable install's finder wins over it (snapshot.py).
            command += ["--snapshot", snapshot]
        # Fixed hash seed: set and dict iteration orders, hence the instructions, repeat run to run.
        env = {**os.environ, "PYTHONHASHSEED": "0", "OTEL_TOOLCALLS_BENCH_CGSTART": start or ""}
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=env)
    if done.returncode != 0:
        print(f"[bench] callgrind {variant}/{provider} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(
    jobs: list[tuple[str, str, str]],
    urls: dict[str, dict[str, str]],
    plan: dict[str, int],
    *,
    parallel: int = 2,
) -> dict[str, dict[str, Any]]:
    """``jobs``: (python, variant, provider). Instruction counts do not depend on the machine's load,
    so the jobs run ``parallel`` at a time."""
    out: dict[str, dict[str, Any]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="otel-toolcalls-cgstart-") as tmp,
        ThreadPoolExecutor(max_workers=parallel) as pool,
    ):
        start = start_library(tmp)
        futures = {
            (variant, provider): pool.submit(_one, python, variant, provider, urls[provider], plan, start)
            for python, variant, provider in jobs
        }
        for (variant, provider), future in futures.items():
            out.setdefault(provider, {})[variant] = future.result()
    return out


def extra_table(results: dict[str, dict[str, Any]], workloads: list[str]) -> list[str]:
    """Markdown rows: instructions per turn, and the extra over bare, per variant and workload."""
    lines = []
    for provider, variants in results.items():
        bare = variants.get("bare") or {}
        for variant, row in variants.items():
            if row is None:
                lines.append(f"| {provider} | {variant} |" + " n/a |" * len(workloads))
                continue
            cells = []
            for w in workloads:
                mine = row.get(w, {}).get("instructions_per_stream")
                base = bare.get(w, {}).get("instructions_per_stream")
                if mine is None:
                    cells.append("n/a")
                elif variant == "bare" or base is None:
                    cells.append(f"{mine / 1e6:.3f} M")
                else:
                    cells.append(f"{mine / 1e6:.3f} M (+{(mine - base) / 1e3:,.0f} k)")
            lines.append(f"| {provider} | {variant} | " + " | ".join(cells) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", default="bare,otel_toolcalls")
    parser.add_argument("--providers", default="openai,anthropic")
    parser.add_argument("--workloads", default=",".join(TURNS))
    parser.add_argument("--turns", type=int, default=3, help="streams counted per workload")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument(
        "--venvs",
        action="store_true",
        help="each variant in its venv under .bench-venvs/ (run.py's), not this one",
    )
    parser.add_argument(
        "--snapshots",
        help="directories (comma-separated) each holding an otel_toolcalls/ copy "
        "(git archive <commit> | tar -x -C DIR)",
    )
    args = parser.parse_args()
    workloads = args.workloads.split(",")
    plan = {w: args.turns for w in workloads}
    ready_recv, ready_send = multiprocessing.Pipe(duplex=False)
    stop_recv, stop_send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(
        target=streams.serve, args=(workloads, ready_send, stop_recv), daemon=True
    )
    server.start()
    urls = ready_recv.recv()
    try:
        venv_of = {variant: venv for variant, venv, _ in VARIANTS}
        serves = {variant: providers for variant, _, providers in VARIANTS}
        jobs = [
            (venvs.ensure(venv_of[variant]) or "" if args.venvs else sys.executable, variant, provider)
            for provider in args.providers.split(",")
            for variant in args.variants.split(",")
            if variant and provider in serves[variant]
        ]
        # Snapshots of the package to compare (before/after a change), each counted as otel_toolcalls.
        jobs += [
            (sys.executable, f"otel_toolcalls@{snapshot}", provider)
            for provider in args.providers.split(",")
            for snapshot in (args.snapshots.split(",") if args.snapshots else [])
        ]
        results = measure(jobs, urls, plan)
    finally:
        stop_send.send(True)
        server.join(10)
    print("| provider | variant | " + " | ".join(workloads) + " |")
    print("|---|---|" + "---|" * len(workloads))
    print("\n".join(extra_table(results, workloads)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
