"""When does the Python SDK's BatchSpanProcessor start dropping the package's spans?

Streamed turns (2 or 8 tool calls each: 3 or 9 spans) through the real openai SDK from the fake
server, paced at a fixed rate, exported by the standard OTLP/HTTP exporter through a
BatchSpanProcessor with the SDK's defaults (or the OTEL_BSP_* of the environment) to the agent
Collector built by `make pipeline-bins` (.pipeline/bin/otelcol-agent: OTLP in, debug out). With
``--stall S`` the Collector is stopped (SIGSTOP) for S seconds mid-run, as a gateway that stops
answering: the exporter's request hangs, the queue fills. Drops are read from the SDK's own
``otel.sdk.processor.span.processed{error.type="queue_full"}`` (OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED),
and checked against what the Collector accepted. The figures go in docs/GUIDE.md ("Span queue").

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bsp_queue.py --calls 2 --rate 40 --stall 10
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, request, tool_call_script

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / ".pipeline" / "bin" / "otelcol-agent"
ARGUMENTS = '{"location": "Zürich", "days": 3}'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def collector(workdir: Path, otlp: int, metrics: int) -> subprocess.Popen[bytes]:
    config = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": f"127.0.0.1:{otlp}"}}}},
        "exporters": {"debug": {"verbosity": "basic"}},
        "service": {
            "telemetry": {
                "logs": {"level": "warn"},
                "metrics": {
                    "level": "detailed",
                    "readers": [
                        {"pull": {"exporter": {"prometheus": {"host": "127.0.0.1", "port": metrics}}}}
                    ],
                },
            },
            "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["debug"]}},
        },
    }
    path = workdir / "sink.yaml"
    path.write_text(json.dumps(config))
    log = (workdir / "sink.log").open("ab")
    proc = subprocess.Popen([str(AGENT), "--config", str(path)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            accepted(metrics)
            return proc
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the sink Collector did not start")


def accepted(port: int) -> float:
    name = "otelcol_receiver_accepted_spans_total"
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines() if line.startswith(name))


def by_error(reader: InMemoryMetricReader, name: str) -> dict[str, int]:
    """A counter of the SDK's own metrics by error.type ("ok" where it has none)."""
    out: dict[str, int] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        key = str(point.attributes.get("error.type", "ok"))
                        out[key] = out.get(key, 0) + int(point.value)
    return out


class Pacer:
    """Hands out turn slots at ``rate`` a second across the worker threads for ``seconds``, and
    stops the Collector for ``stall`` seconds in the middle of the run."""

    def __init__(self, rate: float, seconds: float, stall: float, sink: subprocess.Popen[bytes]) -> None:
        self.rate, self.seconds, self.stall, self.sink = rate, seconds, stall, sink
        self.lock = threading.Lock()
        self.turns = 0
        self.stall_turns = 0
        self.start = time.monotonic()
        self.stopped = self.resumed = False

    def next_slot(self) -> float | None:
        """When the next turn may start, or None when the run is over."""
        with self.lock:
            elapsed = time.monotonic() - self.start
            if elapsed >= self.seconds:
                return None
            if self.stall and not self.stopped and elapsed >= (self.seconds - self.stall) / 2:
                self.sink.send_signal(signal.SIGSTOP)
                self.stopped = True
            if self.stopped and not self.resumed and elapsed >= (self.seconds + self.stall) / 2:
                self.sink.send_signal(signal.SIGCONT)
                self.resumed = True
            slot = self.start + self.turns / self.rate
            self.turns += 1
            self.stall_turns += self.stopped and not self.resumed
            return slot


def turns_of(fake: FakeProvider, calls: int, clock: Pacer, worker: int) -> None:
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="x", max_retries=0)
    turn = 0
    while (slot := clock.next_slot()) is not None:
        time.sleep(max(0.0, slot - time.monotonic()))
        tools = [
            ToolCall(name="get_weather", id=f"c{worker}_{turn}_{i}", arguments=ARGUMENTS)
            for i in range(calls)
        ]
        fake.enqueue(tool_call_script(tools))
        for _ in client.chat.completions.create(**request()):
            pass
        turn += 1


def export_seconds(reader: InMemoryMetricReader) -> float:
    """Time the exporter spent in its export calls (otel.sdk.exporter.operation.duration's sum)."""
    data = reader.get_metrics_data()
    return sum(
        point.sum
        for resource in (data.resource_metrics if data else ())
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "otel.sdk.exporter.operation.duration"
        for point in metric.data.data_points
    )


def run(calls: int, rate: float, seconds: float, stall: float, threads: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        otlp, metrics = free_port(), free_port()
        sink = collector(Path(tmp), otlp, metrics)
        reader = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[reader])
        tracer_provider = TracerProvider()
        endpoint = f"http://127.0.0.1:{otlp}/v1/traces"
        tracer_provider.add_span_processor(
            BatchSpanProcessor(
                OTLPSpanExporter(endpoint=endpoint, meter_provider=meter_provider),
                meter_provider=meter_provider,
            )
        )
        instrumentor = ToolCallsInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider())
        clock = Pacer(rate, seconds, stall, sink)
        try:
            with FakeProvider() as fake:
                workers = [
                    threading.Thread(target=turns_of, args=(fake, calls, clock, w), daemon=True)
                    for w in range(threads)
                ]
                for worker in workers:
                    worker.start()
                for worker in workers:
                    worker.join()
            elapsed = time.monotonic() - clock.start
            turns = clock.turns
            sink.send_signal(signal.SIGCONT)
            tracer_provider.force_flush(60_000)
            time.sleep(1.0)
            counts = by_error(reader, "otel.sdk.processor.span.processed")
            exported = by_error(reader, "otel.sdk.exporter.span.exported")
            exporting = export_seconds(reader)
            received = accepted(metrics)
        finally:
            instrumentor.uninstrument()
            tracer_provider.shutdown()
            sink.send_signal(signal.SIGCONT)
            sink.terminate()
            sink.wait(30)
    return {
        "calls": calls,
        "spans_per_turn": calls + 1,
        "rate_asked": rate,
        "rate_run": round(turns / elapsed, 1),
        "stall_s": stall,
        "spans_during_stall": clock.stall_turns * (calls + 1),
        "threads": threads,
        "spans": turns * (calls + 1),
        "handed_to_exporter": counts.get("ok", 0),
        "dropped_queue_full": counts.get("queue_full", 0),
        "export_failed": sum(v for k, v in exported.items() if k != "ok"),
        "export_errors": sorted(k for k in exported if k != "ok"),
        "collector_accepted": int(received),
        "export_s_per_1000_spans": round(exporting / max(1, counts.get("ok", 0)) * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--stall", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    # Read when the processor and the exporter are built: their own counts, drops included.
    os.environ["OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED"] = "true"
    print(json.dumps(run(args.calls, args.rate, args.seconds, args.stall, args.threads)), flush=True)


if __name__ == "__main__":
    main()
