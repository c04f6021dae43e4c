"""Per-chunk overhead of otel_toolcalls against the bare SDK, side by side in one run.

The driver serves one fixed stream from the fake provider (its own process, so the server does not
compete with the measured client for the GIL) and runs each variant in a fresh process, interleaved
(bare, instrumented, bare, instrumented, ...), several rounds; it reports medians and the median of
paired differences, since machines here are noisy.

    python benchmarks/overhead.py --fragments 4000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _arguments(fragments: int) -> list[str]:
    # Short fragments, as models emit them (a token or two each).
    pieces = ['{"query": "', *[f"w{i % 97} " for i in range(max(0, fragments - 2))], '"}']
    return pieces[:fragments]


def serve(fragments: int, ready: Any, stop: Any) -> None:
    from otel_toolcalls.testing import FakeProvider
    from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for

    call = ToolCall(name="search", id="call_bench", arguments="", fragments=_arguments(fragments))
    script = script_for(events_for([call]), split_characters=False)
    with FakeProvider(default=script) as fake:
        ready.send(fake.base_url)
        stop.recv()


def worker(variant: str, base_url: str, streams: int) -> dict[str, float]:
    import openai

    if variant == "otel_toolcalls":
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from otel_toolcalls import ToolCallsInstrumentor

        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        ToolCallsInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)

    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="bench", max_retries=0)

    def one() -> tuple[float, int]:
        start = time.perf_counter()
        chunks = 0
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}], stream=True
        )
        for _ in stream:
            chunks += 1
        return time.perf_counter() - start, chunks

    one()  # warm-up: imports, connection, JIT-free but cache-warm
    times = []
    chunks = 0
    for _ in range(streams):
        elapsed, chunks = one()
        times.append(elapsed)
    best = min(times)
    return {"us_per_chunk": best / chunks * 1e6, "chunks": chunks}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fragments", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--streams", type=int, default=5, help="streams per process (min is kept)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.base_url, args.streams)))
        return 0

    ready_recv, ready_send = multiprocessing.Pipe(duplex=False)
    stop_recv, stop_send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=serve, args=(args.fragments, ready_send, stop_recv), daemon=True)
    server.start()
    base_url = ready_recv.recv()
    variants = ("bare", "otel_toolcalls")
    results: dict[str, list[float]] = {v: [] for v in variants}
    try:
        for _ in range(args.rounds):
            for variant in variants:
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--worker",
                        variant,
                        "--base-url",
                        base_url,
                        "--streams",
                        str(args.streams),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                results[variant].append(json.loads(out.stdout)["us_per_chunk"])
    finally:
        stop_send.send(True)
        server.join(5)
    bare, inst = results["bare"], results["otel_toolcalls"]
    diffs = [b - a for a, b in zip(bare, inst, strict=True)]
    ratios = [b / a for a, b in zip(bare, inst, strict=True)]
    print(f"openai chat, {args.fragments} argument fragments, {args.rounds} interleaved rounds")
    print(f"  bare SDK        median {statistics.median(bare):8.2f} us/chunk")
    print(f"  otel_toolcalls  median {statistics.median(inst):8.2f} us/chunk")
    print(
        f"  paired overhead median {statistics.median(diffs):+8.2f} us/chunk, "
        f"ratio {statistics.median(ratios):.3f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
