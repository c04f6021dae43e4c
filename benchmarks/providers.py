"""Every provider adapter against its bare SDK, on a 4,000-fragment tool-call stream: one command.

    python benchmarks/providers.py                  # ~8 min: 5 rounds, the replay, then writes the
                                                    # "Every adapter ..." section of RESULTS.md and
                                                    # providers.json
    python benchmarks/providers.py --rounds 2 --print-only --providers groq,bedrock

Each round runs every provider bare and instrumented, each in a fresh process (provider_worker.py),
the pair's order alternating between rounds; the fake provider serves every stream from a process
of its own. Overheads are medians of per-round paired differences and ratios (report.paired), as in
run.py; the package's own cost comes from provider_replay.py (hotpath.py's method).
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

import machine  # noqa: E402
import provider_streams  # noqa: E402
import report  # noqa: E402

HEADING = "## Every adapter against its bare SDK"
VARIANTS = ("bare", "otel_toolcalls")


def serve(names: list[str], ready: Any, stop: Any) -> None:
    from otel_toolcalls.testing import FakeProvider

    fakes = {name: FakeProvider(default=provider_streams.BY_NAME[name].script()).start() for name in names}
    ready.send({name: fake.base_url for name, fake in fakes.items()})
    stop.recv()
    for fake in fakes.values():
        fake.stop()


def run_worker(provider: str, variant: str, url: str, reps: int) -> Any:
    command = [sys.executable, os.path.join(HERE, "provider_worker.py")]
    command += ["--provider", provider, "--variant", variant, "--url", url, "--reps", str(reps)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        print(f"[bench] {provider}/{variant} failed:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
        return None
    # Each round's result in report.paired's shape: one workload, "stream".
    return {"stream": json.loads(done.stdout.strip().splitlines()[-1])}


def replay(names: list[str], reps: int) -> dict[str, Any] | None:
    command = [sys.executable, os.path.join(HERE, "provider_replay.py")]
    command += ["--providers", ",".join(names), "--reps", str(reps)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        print(f"[bench] replay failed:\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def summarize(runs: dict[str, dict[str, list[Any]]], replayed: dict[str, Any] | None) -> list[dict[str, Any]]:
    rows = []
    for name, variants in runs.items():
        bare = variants.get("bare", [])
        mine = variants.get("otel_toolcalls", [])
        bare_value = report.paired(bare, bare, "stream", "cpu_us_per_chunk")[0]
        value, extra, ratio = report.paired(mine, bare, "stream", "cpu_us_per_chunk")
        own = (replayed or {}).get(name)
        rows.append(
            {
                "provider": name,
                "label": provider_streams.BY_NAME[name].label,
                "chunks": next((r["stream"]["chunks"] for r in bare + mine if r), None),
                "bare": bare_value,
                "instrumented": value,
                "extra": extra,
                "ratio": ratio,
                "replay_hot": own["hot"]["us_per_chunk"] if own else None,
                "replay_cold": own["cold"]["us_per_chunk"] if own else None,
                "replay_per_stream": own["hot"]["us_per_stream"] if own else None,
                "spans": report.median([r["stream"]["spans_per_stream"] for r in mine if r]),
                "expected_spans": provider_streams.BY_NAME[name].calls + 1,
                "rounds_ok": min(sum(1 for r in bare if r), sum(1 for r in mine if r)),
            }
        )
    return rows


def _f(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def section(rows: list[dict[str, Any]], info: dict[str, Any]) -> str:
    load = "/".join(f"{x:.1f}" for x in info["loadavg_start"])
    load_end = "/".join(f"{x:.1f}" for x in info["loadavg_end"])
    lines = [
        HEADING,
        "",
        f"`make bench-providers` (benchmarks/providers.py). Date: {info['date']}. {info['nproc']} cores, "
        f"{info['cpu']}, Python {info['python']}. Load average (1/5/15 min) {load} at start, {load_end} "
        f"at end. {info['rounds']} interleaved rounds, {info['reps']} repetitions per process, bare and "
        f"instrumented each in a fresh process per round, {info['seconds']} s in all."
        + (f" Tree: {info['commit']}." if info.get("commit") else ""),
        "",
        f"Every stream: one tool call of {provider_streams.FRAGMENTS:,} argument fragments, one socket "
        "write per fragment, in the provider's own wire format (`otel_toolcalls/testing/<provider>.py`), "
        "read by the real SDK client over a real socket. *bare* / *instrumented*: CPU time of the client "
        "process per chunk the SDK yields (fastest repetition in a process, median over rounds); *extra* "
        "and *ratio*: medians of per-round paired differences and ratios. *package alone*: the parsed "
        "chunks replayed through `wrap_sync` + the adapter's translator with a real `StreamState` "
        "(provider_replay.py; *hot* / *cold* as in the replay table above). *spans*: finished per "
        "instrumented stream (inference span + one per call). Gemini's Developer API sends calls whole, "
        "never fragmented: one row has 4,000 chunks of one whole call each (a span per chunk: the cost "
        "of a call, not of a fragment), one has 3,999 text chunks and a whole call at the end; Vertex "
        "streams the call as `partial_args` fragments.",
        "",
        "| provider | chunks | bare us/chunk | instrumented us/chunk | extra us/chunk | ratio "
        "| package alone, hot (cold) us/chunk | spans |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        spans = _f(row["spans"], ".0f")
        if row["spans"] is not None and row["spans"] != row["expected_spans"]:
            spans += f" (**expected {row['expected_spans']}**)"
        lines.append(
            f"| {row['label']} | {_f(row['chunks'], ',')} | {_f(row['bare'], '.2f')} | "
            f"{_f(row['instrumented'], '.2f')} | {_f(row['extra'], '+.2f')} | {_f(row['ratio'], '.3f')}x | "
            f"{_f(row['replay_hot'], '+.3f')} ({_f(row['replay_cold'], '+.3f')}) | {spans} |"
        )
    short = [r["label"] for r in rows if r["rounds_ok"] < info["rounds"]]
    if short:
        lines += ["", f"Rounds that failed (see stderr of the run): {', '.join(short)}."]
    lines.append("")
    return "\n".join(lines)


def replace_section(text: str, new: str) -> str:
    """RESULTS.md with this section replaced (or appended): it runs from its heading to the next
    level-2 heading."""
    start = text.find(HEADING)
    if start < 0:
        return text.rstrip("\n") + "\n\n" + new
    following = text.find("\n## ", start + len(HEADING))
    end = len(text) if following < 0 else following + 1
    return text[:start] + new + ("\n" + text[end:] if end < len(text) else "")


def section_of(path: str) -> str | None:
    """The section as it stands in the file (run.py keeps it when it rewrites RESULTS.md)."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read()
    start = text.find(HEADING)
    if start < 0:
        return None
    following = text.find("\n## ", start + len(HEADING))
    return text[start:] if following < 0 else text[start : following + 1]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=2, help="streams per process; the fastest counts")
    parser.add_argument("--replay-reps", type=int, default=15)
    parser.add_argument("--providers", help="comma-separated subset of " + ",".join(provider_streams.BY_NAME))
    parser.add_argument("--print-only", action="store_true", help="print the section, write nothing")
    parser.add_argument("--out", default=HERE, help="where RESULTS.md and providers.json are")
    args = parser.parse_args()
    names = args.providers.split(",") if args.providers else [p.name for p in provider_streams.PROVIDERS]

    info = machine.describe()
    ready_recv, ready_send = multiprocessing.Pipe(duplex=False)
    stop_recv, stop_send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=serve, args=(names, ready_send, stop_recv), daemon=True)
    server.start()
    urls = ready_recv.recv()
    runs: dict[str, dict[str, list[Any]]] = {name: {v: [] for v in VARIANTS} for name in names}
    started = time.monotonic()
    try:
        for r in range(args.rounds):
            for name in names:
                # Alternate which variant goes first: a slow second process is not always the same one.
                for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                    runs[name][variant].append(run_worker(name, variant, urls[name], args.reps))
            print(
                f"[bench] round {r + 1}/{args.rounds} done, {time.monotonic() - started:.0f} s",
                file=sys.stderr,
            )
    finally:
        stop_send.send(True)
        server.join(10)
    replayed = replay(names, args.replay_reps)
    info.update(
        loadavg_end=os.getloadavg(),
        seconds=round(time.monotonic() - started),
        rounds=args.rounds,
        reps=args.reps,
    )
    rows = summarize(runs, replayed)
    text = section(rows, info)
    print(text)
    if args.print_only:
        return 0
    with open(os.path.join(args.out, "providers.json"), "w") as f:
        json.dump({"machine": info, "rows": rows, "runs": runs, "replay": replayed}, f, indent=1)
    path = os.path.join(args.out, "RESULTS.md")
    old = "# Benchmark results\n"
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    with open(path, "w") as f:
        f.write(replace_section(old, text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
