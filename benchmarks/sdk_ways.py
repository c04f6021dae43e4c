"""Ways of making one tool call's span and records with the OpenTelemetry SDK, counted apart.

The same telemetry (a tool_call span with its start and end attributes, ``toolcall.duration``,
``toolcall.arguments.size`` and ``toolcall.arguments.deltas``) made several ways, each counted in
instructions per call under callgrind (instructions.py's method: a fresh process, the start
library, one dump around the measured calls), against the SDK providers the worker sets up
(SimpleSpanProcessor into memory, an in-memory metric reader). The cheapest way that leaves the
exported span and points identical is the one the package uses (calls.py, state.py, metrics.py).

    python benchmarks/sdk_ways.py [--calls 200]
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

_START = {
    "gen_ai.provider.name": "openai",
    "toolcall.tool.name": "get_weather",
    "toolcall.tool.type": "function",
    "toolcall.request.model": "gpt-4o-mini",
    "toolcall.call.id": "call_0123456789",
    "toolcall.index": 0,
}
_END = {"toolcall.arguments.deltas": 12, "toolcall.arguments.size": 96, "toolcall.outcome": "completed"}
_METRIC = {
    "gen_ai.provider.name": "openai",
    "gen_ai.tool.name": "get_weather",
    "toolcall.outcome": "completed",
    "gen_ai.request.model": "gpt-4o-mini",
}


def _setup() -> tuple[Any, Any, Any, Any]:
    from opentelemetry import trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("ways")
    tracer = tracer_provider.get_tracer("ways")
    parent = tracer.start_span("chat gpt-4o-mini", kind=trace.SpanKind.CLIENT)
    return tracer, meter, exporter, trace.set_span_in_context(parent)


def _ways(tracer: Any, meter: Any, context: Any) -> dict[str, Callable[[], None]]:
    from opentelemetry.trace import SpanKind

    hist = [meter.create_histogram(name) for name in ("duration", "size", "deltas")]
    internal = SpanKind.INTERNAL

    def span_start_then_set_attributes() -> None:
        span = tracer.start_span(
            "tool_call get_weather",
            context,
            kind=internal,
            attributes=dict(_START),
            start_time=time.time_ns(),
        )
        span.set_attributes(dict(_END))
        span.end(end_time=time.time_ns())

    def span_one_set_attribute_each() -> None:
        span = tracer.start_span("tool_call get_weather", context, kind=internal, start_time=time.time_ns())
        for key, value in {**_START, **_END}.items():
            span.set_attribute(key, value)
        span.end(end_time=time.time_ns())

    def span_all_attributes_at_start() -> None:
        # Started when its end is known, with its start time: one attribute set, no set_attributes.
        start = time.time_ns()
        span = tracer.start_span(
            "tool_call get_weather", context, kind=internal, attributes={**_START, **_END}, start_time=start
        )
        span.end(end_time=time.time_ns())

    def span_no_attributes() -> None:
        # Not the same telemetry: what the attributes cost, by difference.
        span = tracer.start_span("tool_call get_weather", context, kind=internal, start_time=time.time_ns())
        span.end(end_time=time.time_ns())

    def span_sdk_clock() -> None:
        span = tracer.start_span("tool_call get_weather", context, kind=internal, attributes=dict(_START))
        span.set_attributes(dict(_END))
        span.end()

    def records_dict_per_call() -> None:
        attributes = dict(_METRIC)
        for h, v in zip(hist, (0.5, 96, 12), strict=True):
            h.record(v, attributes)

    def records_dict_built_once() -> None:
        for h, v in zip(hist, (0.5, 96, 12), strict=True):
            h.record(v, _METRIC)

    def records_one_histogram() -> None:
        hist[0].record(0.5, _METRIC)

    def records_with_context() -> None:
        for h, v in zip(hist, (0.5, 96, 12), strict=True):
            h.record(v, _METRIC, context)

    return {
        name: fn for name, fn in locals().items() if callable(fn) and name.startswith(("span_", "records_"))
    }


def _count(way: str, calls: int, prefix: str) -> float:
    import worker

    tracer, meter, exporter, context = _setup()
    fn = _ways(tracer, meter, context)[way]
    for _ in range(20):
        fn()
    exporter.clear()
    gc.collect()
    gc.freeze()
    start = os.environ.get("OTEL_TOOLCALLS_BENCH_CGSTART")
    if start:
        ctypes.CDLL(start).otel_toolcalls_bench_start()
        fn()
        exporter.clear()
    before = worker.callgrind_dumps(prefix)

    def run(_: int, __: int) -> int:
        for _ in range(calls):
            fn()
        return 0

    functools.reduce(run, (0, 0))
    (dump,) = sorted(worker.callgrind_dumps(prefix) - before)
    total = worker.callgrind_total(dump)
    os.remove(dump)
    return total / calls


def main() -> int:
    import instructions

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--way", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.way:
        print(json.dumps(_count(args.way, args.calls, args.prefix)))
        return 0
    with tempfile.TemporaryDirectory(prefix="otel-toolcalls-ways-") as tmp:
        start = instructions.start_library(tmp)
        env = {**os.environ, "PYTHONHASHSEED": "0", "OTEL_TOOLCALLS_BENCH_CGSTART": start or ""}
        tracer, meter, _, context = _setup()
        print("| way | instructions per call |\n|---|---|")
        for way in _ways(tracer, meter, context):
            prefix = os.path.join(tmp, f"cg-{way}")
            command = [
                *instructions.callgrind_command(prefix, start),
                sys.executable, __file__, "--way", way, "--calls", str(args.calls), "--prefix", prefix,
            ]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
            print(f"| {way} | {float(done.stdout.strip().splitlines()[-1]) / 1e3:,.1f} k |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
