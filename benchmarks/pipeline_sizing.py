"""The figures behind docs/SCALE.md's sizing: the repo's Collector configs run on the binaries of
`make pipeline-bins` (.pipeline/bin: the agent Collector, Jaeger v2 as gateway and as store), fed
OTLP copies of the spans of one real 2-call turn (the openai SDK from the fake server, the package
instrumenting it), each copy a trace of its own.

``memory``: one gateway (collector-config/gateway.yaml, exporters replaced by `nop`) with a
decision_wait longer than the run, so every trace stays in flight; the Go heap (GOGC=10, so the
live heap dominates) is read from its own metrics after each step of traces: the slope is the
memory a trace in flight costs. ``cpu``: agent -> gateway -> Jaeger (Badger, in a temporary
directory), the repo's configs with local ports; CPU seconds of each process (from /proc) over the
run, per 1000 spans it received. CPU time is not wall time, but on a loaded machine it still
swells (caches, frequency): the script prints the load average with the figures.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/pipeline_sizing.py memory|cpu
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".pipeline" / "bin"
CC = ROOT / "collector-config"
sys.path.insert(0, str(ROOT / "tests" / "helpers"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def telemetry(port: int) -> dict[str, Any]:
    reader = {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": port}}}}
    return {"logs": {"level": "warn"}, "metrics": {"level": "detailed", "readers": [reader]}}


def scrape(port: int) -> dict[str, float]:
    """A Collector's own metrics, summed by name over their labels."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out: dict[str, float] = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def turn_template(calls: int = 2) -> ExportTraceServiceRequest:
    """The OTLP request of one real turn: the inference span and a tool_call span a call."""
    from turn_counts import TURNS, instrumented

    from otel_toolcalls.testing import FakeProvider

    with instrumented() as (spans, _), FakeProvider() as fake:
        TURNS["openai"](fake, calls, 0)
    finished = spans.get_finished_spans()
    assert len(finished) == calls + 1, finished
    return encode_spans(finished)


def batch(template: ExportTraceServiceRequest, first: int, traces: int) -> bytes:
    """``traces`` copies of the turn, each with a random trace id (the samplers hash it)."""
    request = ExportTraceServiceRequest()
    for _ in range(first, first + traces):
        copy_ = request.resource_spans.add()
        copy_.CopyFrom(template.resource_spans[0])
        trace_id = os.urandom(16)
        for scope in copy_.scope_spans:
            for span in scope.spans:
                span.trace_id = trace_id
    return request.SerializeToString()


def post(port: int, body: bytes) -> None:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/traces", data=body, headers={"Content-Type": "application/x-protobuf"}
    )
    urllib.request.urlopen(req, timeout=60).read()


@contextmanager
def process(
    name: str, argv: list[str], workdir: Path, ready: int, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    log = (workdir / f"{name}.log").open("ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                scrape(ready)
                break
            except OSError as exc:
                if time.monotonic() > deadline or proc.poll() is not None:
                    log_tail = (workdir / f"{name}.log").read_text()[-2000:]
                    raise RuntimeError(f"{name} did not start: {log_tail}") from exc
                time.sleep(0.3)
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)


def gateway_config(
    grpc: int, http: int, prom: int, metrics: int, jaeger: int | None, wait: str
) -> dict[str, Any]:
    conf = copy.deepcopy(yaml.safe_load((CC / "gateway.yaml").read_text()))
    conf["receivers"]["otlp"]["protocols"] = {
        "grpc": {"endpoint": f"127.0.0.1:{grpc}"},
        "http": {"endpoint": f"127.0.0.1:{http}"},
    }
    conf["processors"]["tail_sampling"]["decision_wait"] = wait
    conf["exporters"]["prometheus"]["endpoint"] = f"127.0.0.1:{prom}"
    del conf["exporters"]["otlp/tempo"]
    if jaeger is None:
        del conf["exporters"]["otlp/jaeger"]
        conf["exporters"]["nop"] = {}
        conf["service"]["pipelines"]["traces/sampled"]["exporters"] = ["nop"]
    else:
        conf["exporters"]["otlp/jaeger"]["endpoint"] = f"127.0.0.1:{jaeger}"
        conf["service"]["pipelines"]["traces/sampled"]["exporters"] = ["otlp/jaeger"]
    conf["service"]["telemetry"] = telemetry(metrics)
    return dict(conf)


def memory(steps: int, per_step: int, calls: int) -> dict[str, Any]:
    template = turn_template(calls)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        grpc, http, prom, metrics = free_port(), free_port(), free_port(), free_port()
        (work / "gateway.yaml").write_text(
            json.dumps(gateway_config(grpc, http, prom, metrics, None, "3600s"))
        )
        argv = [str(BIN / "jaeger"), "--config", str(work / "gateway.yaml")]
        with process("gateway", argv, work, metrics, GOGC="10"):
            rows, sent = [], 0
            for step in range(steps + 1):
                if step:
                    for first in range(sent, sent + per_step, 500):
                        post(http, batch(template, first + 1, min(500, sent + per_step - first)))
                    sent += per_step
                time.sleep(3.0)
                m = scrape(metrics)
                rows.append(
                    {
                        "traces_in_flight": sent,
                        "heap_bytes": m.get("otelcol_process_runtime_heap_alloc_bytes", 0.0),
                        "rss_bytes": m.get("otelcol_process_memory_rss_bytes", 0.0),
                        "traces_on_memory": m.get(
                            "otelcol_processor_tail_sampling_sampling_traces_on_memory", -1
                        ),
                    }
                )
    first, last = rows[1], rows[-1]
    traces = last["traces_in_flight"] - first["traces_in_flight"]
    return {
        "spans_per_trace": calls + 1,
        "template_bytes_per_trace": len(template.SerializeToString()),
        "rows": rows,
        "heap_bytes_per_trace": round((last["heap_bytes"] - first["heap_bytes"]) / traces),
        "rss_bytes_per_trace": round((last["rss_bytes"] - first["rss_bytes"]) / traces),
    }


PORTS = (
    "j_grpc",
    "j_http",
    "j_query",
    "j_qgrpc",
    "j_m",
    "g_grpc",
    "g_http",
    "g_prom",
    "g_m",
    "a_http",
    "a_m",
)


def agent_config(p: dict[str, int]) -> dict[str, Any]:
    agent = copy.deepcopy(yaml.safe_load((CC / "agent.yaml").read_text()))
    agent["receivers"]["otlp"]["protocols"] = {"http": {"endpoint": f"127.0.0.1:{p['a_http']}"}}
    agent["exporters"]["loadbalancing"]["resolver"] = {"static": {"hostnames": [f"127.0.0.1:{p['g_grpc']}"]}}
    agent["exporters"]["otlp/gateway"]["endpoint"] = f"127.0.0.1:{p['g_grpc']}"
    agent["service"]["telemetry"] = telemetry(p["a_m"])
    return dict(agent)


@contextmanager
def chain(work: Path, p: dict[str, int]) -> Iterator[dict[str, int]]:
    """Agent -> gateway -> Jaeger on the repo's configs; yields each tier's pid."""
    gateway_conf = gateway_config(p["g_grpc"], p["g_http"], p["g_prom"], p["g_m"], p["j_grpc"], "2s")
    (work / "gateway.yaml").write_text(json.dumps(gateway_conf))
    (work / "agent.yaml").write_text(json.dumps(agent_config(p)))
    names = ("OTLP_GRPC", "OTLP_HTTP", "QUERY_HTTP", "QUERY_GRPC", "METRICS")
    jaeger_env = {f"JAEGER_{n}_PORT": str(p[k]) for n, k in zip(names, PORTS[:5], strict=True)}
    jaeger_env["JAEGER_DATA_DIR"] = str(work / "jaeger-data")
    jaeger = [str(BIN / "jaeger"), "--config", str(CC / "jaeger.yaml")]
    gateway = [str(BIN / "jaeger"), "--config", str(work / "gateway.yaml")]
    agent = [str(BIN / "otelcol-agent"), "--config", str(work / "agent.yaml")]
    with (
        process("jaeger", jaeger, work, p["j_m"], **jaeger_env) as j,
        process("gateway", gateway, work, p["g_m"]) as g,
        process("agent", agent, work, p["a_m"]) as a,
    ):
        yield {"agent": a.pid, "gateway": g.pid, "jaeger": j.pid}


def cpu(traces: int, rate: float, calls: int) -> dict[str, Any]:
    template = turn_template(calls)
    p = {k: free_port() for k in PORTS}
    tiers = {"agent": p["a_m"], "gateway": p["g_m"], "jaeger": p["j_m"]}
    with tempfile.TemporaryDirectory() as tmp, chain(Path(tmp), p) as pids:
        time.sleep(5.0)
        idle0 = {t: cpu_seconds(pid) for t, pid in pids.items()}
        time.sleep(10.0)
        idle = {t: (cpu_seconds(pid) - idle0[t]) / 10.0 for t, pid in pids.items()}
        before = {t: cpu_seconds(pid) for t, pid in pids.items()}
        # About the SDK's export batch (512 spans) a request, as a busy app sends them.
        start, per_post = time.monotonic(), max(1, 512 // (calls + 1))
        for i, first in enumerate(range(0, traces, per_post)):
            time.sleep(max(0.0, start + i * per_post / rate - time.monotonic()))
            post(p["a_http"], batch(template, first + 1, min(per_post, traces - first)))
        elapsed = time.monotonic() - start
        time.sleep(15.0)  # decision_wait, batch timeouts, Jaeger's writes
        used = {t: cpu_seconds(pid) - before[t] for t, pid in pids.items()}
        accepted = {
            t: scrape(port).get("otelcol_receiver_accepted_spans_total", 0.0) for t, port in tiers.items()
        }
    window = elapsed + 15.0
    return {
        "traces": traces,
        "spans": traces * (calls + 1),
        "seconds": round(elapsed, 1),
        "loadavg": os.getloadavg()[0],
        "accepted_spans": accepted,
        "idle_cpu_per_s": {t: round(v, 4) for t, v in idle.items()},
        "cpu_s": {t: round(v, 2) for t, v in used.items()},
        "cpu_s_per_1000_spans": {t: round(used[t] / accepted[t] * 1000, 3) for t in tiers if accepted[t]},
        "cpu_s_per_1000_spans_less_idle": {
            t: round((used[t] - idle[t] * window) / accepted[t] * 1000, 3) for t in tiers if accepted[t]
        },
    }


# The measured figures docs/SCALE.md sizes with (`memory` and `cpu` above, 2026-12-07), and its
# assumptions: each Collector at half a core at most, the tail sampler at 80% of num_traces, the
# memory_limiter's soft limit (limit minus spike: 60% of the memory limit) above what a gateway holds.
CPU_S_PER_SPAN = {"agent": 0.012e-3, "gateway": 0.014e-3, "jaeger": 0.171e-3}
RSS_PER_TRACE = {3: 5520, 9: 11506}
RSS_BASE = 63e6
DECISION_WAIT_S, NUM_TRACES, KEPT = 30, 100_000, 0.12
CORE_BUDGET, SAMPLER_FILL, SOFT_LIMIT = 0.5, 0.8, 0.6


def sizing_rows() -> list[str]:
    """SCALE.md's table: agents, gateways and memory for 100 to 10,000 turns a second."""
    rows = []
    for rate in (100, 1_000, 10_000):
        for calls in (2, 8):
            spans = rate * (calls + 1)
            cores = {tier: spans * cost for tier, cost in CPU_S_PER_SPAN.items()}
            cores["jaeger"] *= KEPT
            in_flight = rate * DECISION_WAIT_S
            gateways = max(
                2, -(-cores["gateway"] // CORE_BUDGET), -(-in_flight // (NUM_TRACES * SAMPLER_FILL))
            )
            held = RSS_BASE + in_flight / gateways * RSS_PER_TRACE[calls + 1]
            rows.append(
                f"| {rate:,} | {calls} | {spans:,} | {cores['agent']:.2f} | "
                f"{max(1, -(-cores['agent'] // CORE_BUDGET)):.0f} | {cores['gateway']:.2f} | "
                f"{in_flight:,} | {gateways:.0f} | {held / 1e6:,.0f} MB | "
                f"{held / SOFT_LIMIT / 1e6:,.0f} MB | "
                f"{cores['jaeger']:.2f} |"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("memory", "cpu", "table"))
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--per-step", type=int, default=10000)
    parser.add_argument("--traces", type=int, default=20000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args()
    if args.what == "table":
        print("\n".join(sizing_rows()))
        return
    result = (
        memory(args.steps, args.per_step, args.calls)
        if args.what == "memory"
        else cpu(args.traces, args.rate, args.calls)
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
