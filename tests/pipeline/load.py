"""`make pipeline-load`: a steady rate of streamed turns through the pipeline (tests/pipeline/stack.py)
for a fixed time, then the same with one fault each: a gateway killed mid-run and restarted, an
agent restarted, Jaeger restarted. Prints, per phase, spans in and out of each tier (the Collectors'
own counters), CPU seconds per 1000 spans of each tier (from /proc), and how many of the traces
holding an aborted call Jaeger has whole afterwards. Numbers go in the note, not in a test: they
depend on the machine.

    .venv/bin/python tests/pipeline/load.py [--seconds 30] [--rate 10]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.stack import Stack, attrs

COUNTERS = {
    "accepted": "otelcol_receiver_accepted_spans_total",
    "refused": "otelcol_receiver_refused_spans_total",
    "sent": "otelcol_exporter_sent_spans_total",
    "send_failed": "otelcol_exporter_send_failed_spans_total",
    "enqueue_failed": "otelcol_exporter_enqueue_failed_spans_total",
}
TIERS = {"agents": ("agent-0", "agent-1"), "gateways": ("gateway-0", "gateway-1"), "jaeger": ("jaeger",)}


def metrics_port(stack: Stack, name: str) -> int:
    p = stack.ports
    if name == "jaeger":
        return p.jaeger_metrics
    kind, i = name.rsplit("-", 1)
    return (p.agent_metrics if kind == "agent" else p.gateway_metrics)[int(i)]


def snapshot(stack: Stack) -> dict[str, dict[str, float]]:
    snap: dict[str, dict[str, float]] = {}
    for tier, names in TIERS.items():
        totals: dict[str, float] = defaultdict(float)
        for name in names:
            port = metrics_port(stack, name)
            for key, metric in COUNTERS.items():
                totals[key] += stack.collector_metric(port, metric)
            totals["cpu"] += stack.procs[name].cpu_seconds()
        snap[tier] = dict(totals)
    return snap


def settle(stack: Stack, quiet_s: float) -> None:
    """Until no tier's counters moved for quiet_s (the tail sampler's wait included)."""
    last, since = snapshot(stack), time.monotonic()
    while time.monotonic() - since < quiet_s:
        time.sleep(1.0)
        now = snapshot(stack)
        moved = any(now[t][k] != last[t][k] for t in now for k in COUNTERS)
        last, since = (now, time.monotonic()) if moved else (last, since)


def run_apps(
    stack: Stack, seconds: float, rate: float, fault: Callable[[], None] | None
) -> list[dict[str, Any]]:
    apps = [
        stack.app(f"load-{time.monotonic_ns()}-{i}", i, "--seconds", str(seconds), "--rate", str(rate))
        for i in (0, 1)
    ]
    if fault is not None:
        time.sleep(seconds / 2)
        fault()
    rows = []
    for app in apps:
        out, _ = app.communicate(timeout=seconds + 300)
        rows.extend(json.loads(line) for line in out.splitlines() if line.startswith('{"trace_id"'))
    return rows


def aborted_kept(stack: Stack, rows: list[dict[str, Any]], start_ns: int) -> dict[str, int]:
    aborted = {r["trace_id"] for r in rows if r["outcome"] == "aborted"}
    spans_by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in stack.traces(start_ns, time.time_ns() + 60_000_000_000):
        spans_by_trace[span["traceId"]].append(span)
    whole = split = missing = 0
    for trace_id in aborted:
        spans = spans_by_trace.get(trace_id, [])
        names = [s["name"].split(" ", 1)[0] for s in spans]
        gateways = {attrs(s).get("pipeline.gateway") for s in spans}
        if not spans:
            missing += 1
        elif names.count("tool_call") == 2 and names.count("execute_tool") == 2 and names.count("chat") == 2:
            whole += 1
            split += len(gateways) > 1
        else:
            split += 1
    return {
        "aborted_traces": len(aborted),
        "whole": whole,
        "partial": len(aborted) - whole - missing,
        "missing": missing,
        "whole_but_from_two_gateways": split,
    }


def phase(
    stack: Stack, name: str, seconds: float, rate: float, fault: Callable[[], None] | None = None
) -> dict[str, Any]:
    before = snapshot(stack)
    start_ns = time.time_ns() - 1_000_000_000
    started = time.monotonic()
    rows = run_apps(stack, seconds, rate, fault)
    settle(stack, quiet_s=8.0)
    after = snapshot(stack)
    result: dict[str, Any] = {"phase": name, "turns": len({r["trace_id"] for r in rows}), "calls": len(rows)}
    for tier in TIERS:
        delta = {k: round(after[tier][k] - before[tier][k], 3) for k in after[tier]}
        spans = delta["accepted"]
        delta["cpu_s_per_1000_spans"] = round(1000 * delta["cpu"] / spans, 3) if spans > 0 else None
        result[tier] = delta
    result["wall_s"] = round(time.monotonic() - started, 1)
    result["jaeger"]["aborted_traces"] = aborted_kept(stack, rows, start_ns)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=10.0, help="turns a second per app (two apps)")
    parser.add_argument("--decision-wait", default="5s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pipeline-load-") as tmp:
        stack = Stack(Path(tmp), decision_wait=args.decision_wait, monitoring=False)
        try:
            stack.start()
            procs = stack.procs
            faults: list[tuple[str, Callable[[], None] | None]] = [
                ("steady", None),
                (
                    "gateway-1 killed (SIGKILL), restarted 5 s later",
                    lambda: kill_then_start(procs["gateway-1"], 5.0),
                ),
                ("agent-0 restarted (SIGTERM)", lambda: procs["agent-0"].restart()),
                ("jaeger restarted (SIGTERM)", lambda: procs["jaeger"].restart()),
            ]
            for name, fault in faults:
                # Counters restart with a restarted process: read deltas over the steady phase only.
                print(json.dumps(phase(stack, name, args.seconds, args.rate, fault)), flush=True)
        finally:
            stack.close()
    return 0


def kill_then_start(proc: Any, down_s: float) -> None:
    proc.stop(signal.SIGKILL)
    time.sleep(down_s)
    proc.start()


if __name__ == "__main__":
    sys.exit(main())
