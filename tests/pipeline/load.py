"""`make pipeline-load`: a steady rate of streamed turns through the pipeline (tests/pipeline/stack.py)
for a fixed time, then the same with one fault each, in the middle of the apps' traffic: a gateway
killed and back 5 s later, a gateway restarted, an agent restarted, an agent killed, Jaeger
restarted. Prints, per phase, the spans the apps ended, spans in and out of each tier (the
Collectors' own counters, per process lifetime: a restarted process counts from 0 again), CPU
seconds per 1000 spans of each tier (from /proc), and how many of the traces holding an aborted
call Jaeger has whole afterwards. Numbers go in docs/observability.md ("What a restart loses"),
not in a test: they depend on the machine.

    .venv/bin/python tests/pipeline/load.py [--seconds 30] [--rate 10] [--decision-wait 5s]
        [--agent-queue file|memory] [--only gateway]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import tempfile
import threading
import time
import urllib.error
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.stack import BIN, Stack, attrs, wait_for

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


Reading = dict[str, float]


def read(stack: Stack, name: str) -> Reading:
    port = metrics_port(stack, name)
    # The gateways' build (Collector v0.161) writes its counters without `_total` in the text
    # format, Jaeger's (v0.139) with it; Prometheus, reading OpenMetrics, sees `_total` on both.
    reading = {
        key: sum(stack.collector_metric(port, name) for name in (metric, metric.removesuffix("_total")))
        for key, metric in COUNTERS.items()
    }
    reading["cpu"] = stack.procs[name].cpu_seconds()
    return reading


class Lifetimes:
    """Each process's own counters, read every half second and kept per lifetime (name, pid).

    A restarted process counts from 0 again, so a phase's count is, per lifetime, its last reading
    minus its reading when the phase began (0 for a process started during the phase): never a
    negative delta. A killed process's last half second, and what a stopping one sends while it
    shuts down, are not seen (the fault calls `poll` just before it stops a process).
    """

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.last: dict[tuple[str, int], Reading] = {}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(0.5):
            self.poll()

    def poll(self) -> None:
        for names in TIERS.values():
            for name in names:
                proc = self.stack.procs[name]
                if proc.popen.poll() is not None:
                    continue
                with contextlib.suppress(OSError, ValueError, urllib.error.URLError):
                    reading = read(self.stack, name)
                    with self.lock:
                        self.last[(name, proc.popen.pid)] = reading

    def mark(self) -> dict[tuple[str, int], Reading]:
        self.poll()
        with self.lock:
            return dict(self.last)

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()


def tier_of(name: str) -> str:
    return next(tier for tier, names in TIERS.items() if name in names)


def increase(
    before: dict[tuple[str, int], Reading], after: dict[tuple[str, int], Reading]
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {tier: defaultdict(float) for tier in TIERS}
    for lifetime, last in after.items():
        first = before.get(lifetime, {})
        for key, value in last.items():
            out[tier_of(lifetime[0])][key] += value - first.get(key, 0.0)
    return {tier: dict(values) for tier, values in out.items()}


def settle(lifetimes: Lifetimes, quiet_s: float) -> None:
    """Until no process's counters moved for quiet_s (the tail sampler's wait included)."""
    last, since = lifetimes.mark(), time.monotonic()
    while time.monotonic() - since < quiet_s:
        time.sleep(1.0)
        now = lifetimes.mark()
        moved = any(now[k].get(c) != last.get(k, {}).get(c) for k in now for c in COUNTERS)
        last, since = (now, time.monotonic()) if moved else (last, since)


def accepted(counted: dict[str, dict[str, float]]) -> float:
    return counted["agents"].get("accepted", 0.0)


def run_apps(
    stack: Stack, lifetimes: Lifetimes, seconds: float, rate: float, fault: Callable[[], None] | None
) -> tuple[list[dict[str, Any]], int]:
    apps = [
        stack.app(f"load-{time.monotonic_ns()}-{i}", i, "--seconds", str(seconds), "--rate", str(rate))
        for i in (0, 1)
    ]
    if fault is not None:
        # Mid-traffic: the apps' start (seconds on a loaded machine) is not part of their run.
        began = lifetimes.mark()
        wait_for("the apps' first spans", lambda: accepted(increase(began, lifetimes.mark())) > 0)
        time.sleep(seconds / 2)
        fault()
    rows: list[dict[str, Any]] = []
    spans = 0
    for app in apps:
        out, _ = app.communicate(timeout=seconds + 300)
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        rows.extend(line for line in lines if "trace_id" in line)
        spans += sum(line["spans"] for line in lines if "spans" in line)
    return rows, spans


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
    stack: Stack,
    lifetimes: Lifetimes,
    name: str,
    seconds: float,
    rate: float,
    fault: Callable[[], None] | None = None,
) -> dict[str, Any]:
    before = lifetimes.mark()
    start_ns = time.time_ns() - 1_000_000_000
    started = time.monotonic()
    rows, app_spans = run_apps(stack, lifetimes, seconds, rate, fault)
    settle(lifetimes, quiet_s=8.0)
    counted = increase(before, lifetimes.mark())
    result: dict[str, Any] = {
        "phase": name,
        "turns": len({r["trace_id"] for r in rows}),
        "calls": len(rows),
        "app_spans": app_spans,
    }
    for tier in TIERS:
        delta = {k: round(v, 3) for k, v in counted[tier].items()}
        spans = delta["accepted"]
        delta["cpu_s_per_1000_spans"] = round(1000 * delta["cpu"] / spans, 3) if spans > 0 else None
        result[tier] = delta
    result["wall_s"] = round(time.monotonic() - started, 1)
    result["jaeger"]["aborted_traces"] = aborted_kept(stack, rows, start_ns)
    return result


def faults(stack: Stack, lifetimes: Lifetimes) -> list[tuple[str, Callable[[], None] | None]]:
    procs = stack.procs

    def stop_then_start(name: str, sig: int, down_s: float = 0.0) -> Callable[[], None]:
        def fault() -> None:
            lifetimes.poll()
            procs[name].stop(sig)
            time.sleep(down_s)
            procs[name].start()

        return fault

    return [
        ("steady", None),
        ("gateway-1 killed (SIGKILL), back 5 s later", stop_then_start("gateway-1", signal.SIGKILL, 5.0)),
        ("gateway-1 restarted (SIGTERM)", stop_then_start("gateway-1", signal.SIGTERM)),
        ("agent-0 restarted (SIGTERM)", stop_then_start("agent-0", signal.SIGTERM)),
        ("agent-0 killed (SIGKILL), restarted", stop_then_start("agent-0", signal.SIGKILL)),
        ("jaeger restarted (SIGTERM)", stop_then_start("jaeger", signal.SIGTERM)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=10.0, help="turns a second per app (two apps)")
    parser.add_argument("--decision-wait", default="5s")
    parser.add_argument("--agent-queue", choices=("file", "memory"), default="file")
    parser.add_argument("--gateway-bin", type=Path, default=BIN / "otelcol-agent", help="the gateways' build")
    parser.add_argument("--only", default="", help="run the phases whose name contains this (and steady)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pipeline-load-") as tmp:
        stack = Stack(
            Path(tmp),
            decision_wait=args.decision_wait,
            monitoring=False,
            agent_queue=args.agent_queue,
            gateway_bin=args.gateway_bin,
        )
        try:
            stack.start()
            lifetimes = Lifetimes(stack)
            for name, fault in faults(stack, lifetimes):
                if fault is None or args.only in name:
                    result = phase(stack, lifetimes, name, args.seconds, args.rate, fault)
                    print(json.dumps(result), flush=True)
            lifetimes.close()
        finally:
            stack.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
