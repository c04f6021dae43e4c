"""One variant, one provider, one fresh process: every workload measured against the fake provider.

Run by benchmarks/run.py with the python of the variant's venv; prints one JSON object. The cost of a
stream is the process's CPU time while the SDK's iterator is consumed (the machine is shared, so wall
time, also reported, carries other people's load); a workload's figure is the minimum over its
repetitions, the driver takes medians over interleaved rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import glob
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

MESSAGES = [{"role": "user", "content": "What is the weather in Zurich?"}]


def _telemetry() -> tuple[Any, Any, Any]:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    return tracer_provider, meter_provider, exporter


def instrument(variant: str, provider: str) -> Any:
    """Sets the variant up as its documentation says; returns the span exporter (None for bare)."""
    if variant == "bare":
        return None
    tracer_provider, meter_provider, exporter = _telemetry()
    kwargs = {"tracer_provider": tracer_provider, "meter_provider": meter_provider}
    if variant == "otel_toolcalls":
        from otel_toolcalls import ToolCallsInstrumentor

        ToolCallsInstrumentor().instrument(**kwargs)
    elif variant == "anthropic_own":
        pass  # anthropic 2.x traces itself with the global tracer provider set above
    elif variant == "openllmetry":
        if provider == "openai":
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        else:
            from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as OpenAIInstrumentor
        OpenAIInstrumentor().instrument(**kwargs)
    elif variant == "otel_openai_v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(**kwargs)
    elif variant == "otel_genai_openai":
        from importlib import import_module

        for module in ("opentelemetry.instrumentation.genai.openai", "opentelemetry.instrumentation.openai"):
            try:
                instrumentor = import_module(module).OpenAIInstrumentor
                break
            except (ImportError, AttributeError):
                continue
        instrumentor().instrument(**kwargs)
    elif variant == "openinference":
        if provider == "openai":
            from openinference.instrumentation.openai import OpenAIInstrumentor
        else:
            from openinference.instrumentation.anthropic import AnthropicInstrumentor as OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    else:
        raise SystemExit(f"unknown variant {variant}")
    return exporter


def clients(
    provider: str, urls: dict[str, str]
) -> tuple[Any, Callable[[str], Any], Callable[[Any, str], Any]]:
    """(sync client factory result, sync stream opener, async stream opener) for the provider."""
    if provider == "openai":
        import openai

        def make(url: str, is_async: bool = False) -> Any:
            cls = openai.AsyncOpenAI if is_async else openai.OpenAI
            return cls(base_url=f"{url}/v1", api_key="bench", max_retries=0)

        def open_sync(client: Any) -> Any:
            return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)

        async def open_async(client: Any) -> Any:
            return await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)

    else:
        import anthropic

        def make(url: str, is_async: bool = False) -> Any:
            cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
            return cls(base_url=url, api_key="bench", max_retries=0)

        def open_sync(client: Any) -> Any:
            return client.messages.create(
                model="claude-sonnet-4-6", max_tokens=1024, messages=MESSAGES, stream=True
            )

        async def open_async(client: Any) -> Any:
            return await client.messages.create(
                model="claude-sonnet-4-6", max_tokens=1024, messages=MESSAGES, stream=True
            )

    return make, open_sync, open_async


def measure(client: Any, open_sync: Callable[[Any], Any], exporter: Any, reps: int) -> dict[str, Any]:
    best_cpu = best_wall = float("inf")
    chunks = spans = 0
    for _ in range(reps):
        wall, cpu = time.perf_counter(), time.process_time()
        chunks = 0
        for _ in open_sync(client):
            chunks += 1
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
        if exporter is not None:
            spans = len(exporter.get_finished_spans())
            exporter.clear()
    return {
        "chunks": chunks,
        "cpu_us_per_chunk": best_cpu / chunks * 1e6,
        "wall_us_per_chunk": best_wall / chunks * 1e6,
        "cpu_us_per_stream": best_cpu * 1e6,
        "spans_per_stream": spans,
    }


def memory(client: Any, open_sync: Callable[[Any], Any], exporter: Any) -> dict[str, Any]:
    """Peak traced allocation while one stream is consumed (chunks are dropped as they come)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        chunks = 0
        for _ in open_sync(client):
            chunks += 1
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    if exporter is not None:
        exporter.clear()
    return {"chunks": chunks, "peak_bytes": peak}


def concurrent(make: Any, open_async: Any, url: str, streams: int, exporter: Any) -> dict[str, Any]:
    async def one(client: Any) -> int:
        count = 0
        async for _ in await open_async(client):
            count += 1
        return count

    async def run() -> tuple[float, float, int]:
        client = make(url, True)
        await asyncio.gather(*(one(client) for _ in range(10)))  # warm-up
        wall, cpu = time.perf_counter(), time.process_time()
        counts = await asyncio.gather(*(one(client) for _ in range(streams)))
        return time.process_time() - cpu, time.perf_counter() - wall, sum(counts)

    cpu, wall, chunks = asyncio.run(run())
    if exporter is not None:
        exporter.clear()
    return {
        "streams": streams,
        "chunks": chunks,
        "cpu_us_per_chunk": cpu / chunks * 1e6,
        "streams_per_s": streams / wall,
        "wall_s": wall,
    }


# Instructions under callgrind (benchmarks/instructions.py): valgrind collects only inside
# functools.reduce (--toggle-collect) and dumps the counts each time it returns (--dump-after), so
# one reduce around the measured turns is one dump holding exactly their instructions. Nothing the
# SDKs or peers run per stream calls reduce; a nested call would add a dump, and is refused below.
CALLGRIND_FUNCTION = "functools_reduce"


def callgrind_dumps(prefix: str) -> set[str]:
    return set(glob.glob(f"{prefix}.*"))


def callgrind_total(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise ValueError(f"no totals in {path}")


def instructions(
    client: Any, open_sync: Callable[[Any], Any], exporter: Any, turns: int, prefix: str
) -> dict[str, Any]:
    """Instructions per stream over ``turns`` streams in one dump; the dump is removed once read."""

    def consume(_: Any, __: Any) -> int:
        chunks = 0
        for _ in range(turns):
            for _ in open_sync(client):
                chunks += 1
        return chunks

    before = callgrind_dumps(prefix)
    chunks = functools.reduce(consume, (0, 0))
    new = sorted(callgrind_dumps(prefix) - before)
    spans = len(exporter.get_finished_spans()) if exporter is not None else 0
    if exporter is not None:
        exporter.clear()
    if len(new) != 1:
        raise RuntimeError(f"expected one callgrind dump for the measured turns, got {len(new)}")
    total = callgrind_total(new[0])
    if not os.environ.get("OTEL_TOOLCALLS_BENCH_KEEP_DUMPS"):  # kept for callgrind_annotate
        os.remove(new[0])
    return {
        "chunks": chunks // turns,
        "instructions_per_stream": total / turns,
        "spans_per_stream": spans / turns,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", required=True)
    parser.add_argument("--provider", required=True)
    parser.add_argument("--urls", required=True, help="JSON: workload -> base URL")
    parser.add_argument("--plan", required=True, help="JSON: workload -> repetitions")
    parser.add_argument(
        "--callgrind",
        help="run under callgrind with this --callgrind-out-file prefix: instructions per stream, "
        "the plan's repetitions being the streams counted per dump",
    )
    parser.add_argument("--snapshot", help="import otel_toolcalls from this copy (snapshot.py)")
    args = parser.parse_args()
    if args.snapshot:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import snapshot

        snapshot.use(args.snapshot)
    urls: dict[str, str] = json.loads(args.urls)
    plan: dict[str, int] = json.loads(args.plan)
    if args.provider == "anthropic":
        # Bare means bare: the SDK's own tracing is on only in the variant that measures it.
        os.environ["ANTHROPIC_OPEN_TELEMETRY"] = "true" if args.variant == "anthropic_own" else "false"
    exporter = instrument(args.variant, args.provider)
    make, open_sync, open_async = clients(args.provider, urls)
    # Everything imported so far goes to the permanent generation: a full collection costs ~0.1 s
    # with the SDKs loaded, and would otherwise land inside whichever stream happens to trigger it.
    gc.collect()
    gc.freeze()
    out: dict[str, Any] = {}
    if args.provider == "anthropic":
        out["sdk_tracing"] = bool(make(next(iter(urls.values()))).open_telemetry["traces"]["enabled"])
    if args.callgrind:
        out.update(_instructions_plan(make, open_sync, exporter, urls, plan, args.callgrind))
        print(json.dumps(out))
        return 0
    for workload, reps in plan.items():
        url = urls[workload]
        out.setdefault("seconds", {})[workload] = -time.perf_counter()
        if workload.startswith("concurrent"):
            out[workload] = concurrent(make, open_async, url, reps, exporter)
            out["seconds"][workload] += time.perf_counter()
            continue
        client = make(url)
        if workload.startswith("mem"):
            for _ in open_sync(client):  # warm-up outside the traced window
                pass
            out[workload] = memory(client, open_sync, exporter)
            out["seconds"][workload] += time.perf_counter()
            continue
        for _ in open_sync(client):
            pass
        out[workload] = measure(client, open_sync, exporter, reps)
        out["seconds"][workload] += time.perf_counter()
    print(json.dumps(out))
    return 0


def _instructions_plan(
    make: Any, open_sync: Any, exporter: Any, urls: dict[str, str], plan: dict[str, int], prefix: str
) -> dict[str, Any]:
    clients_of = {workload: make(urls[workload]) for workload in plan}
    for workload in plan:  # warm-up: every import and first-use cache outside the counted dumps
        for _ in range(2):
            for _ in open_sync(clients_of[workload]):
                pass
    if exporter is not None:
        exporter.clear()
    start = os.environ.get("OTEL_TOOLCALLS_BENCH_CGSTART")
    if start:  # callgrind instruments from here on (instructions.py: --instr-atstart=no)
        import ctypes

        ctypes.CDLL(start).otel_toolcalls_bench_start()
        for workload in plan:  # once more, instrumented: the first translation of each path
            for _ in open_sync(clients_of[workload]):
                pass
        if exporter is not None:
            exporter.clear()
    gc.collect()
    gc.freeze()
    return {
        workload: instructions(clients_of[workload], open_sync, exporter, turns, prefix)
        for workload, turns in plan.items()
    }


if __name__ == "__main__":
    sys.exit(main())
