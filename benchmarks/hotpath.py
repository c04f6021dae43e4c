"""The package's own per-chunk cost, isolated from the SDK and the socket.

The end-to-end figures carry +-3 us of noise per chunk on a shared 2-core machine, more than the
package costs. Here the SDK's parsed chunks/events (read once from the fake provider by the real
SDK) are replayed from a list, bare and through ``wrap_sync`` + the adapter's translator with a real
``StreamState`` and SDK tracer/meter providers, interleaved, the minimum of many repetitions kept.
The difference is what the package adds per chunk: the generator hop, the counters, the translator.

    python benchmarks/hotpath.py [--lengths 50,500,4000,16000] [--reps 15] [--snapshot DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _chunks(provider: str, length: int) -> list[Any]:
    # Imported here, not at the top: --snapshot must choose the package before anything imports it.
    import streams

    from otel_toolcalls.testing import FakeProvider

    build = streams.openai_script if provider == "openai" else streams.anthropic_script
    script = build(f"len{length}")
    with FakeProvider(default=script) as fake:
        if provider == "openai":
            import openai

            client = openai.OpenAI(base_url=f"{fake.base_url}/v1", api_key="bench", max_retries=0)
            stream = client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
        else:
            import anthropic

            aclient = anthropic.Anthropic(
                base_url=fake.base_url, api_key="bench", max_retries=0, open_telemetry=False
            )
            stream = aclient.messages.create(
                model="claude-sonnet-4-6", max_tokens=1, messages=[], stream=True
            )
        return list(stream)


def measure(lengths: list[int], reps: int) -> dict[str, dict[str, Any]]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_toolcalls._config import resolve
    from otel_toolcalls._core.telemetry import Telemetry
    from otel_toolcalls._providers.formats.anthropic_messages import translate_event
    from otel_toolcalls._providers.formats.chat_completions import translate_chunk

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(resolve(), tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
    out: dict[str, dict[str, Any]] = {}
    for provider, translate in (("openai", translate_chunk), ("anthropic", translate_event)):
        out[provider] = {}
        for length in lengths:
            parsed = _chunks(provider, length)
            out[provider][str(length)] = {
                "hot": replay(_hot(parsed), reps, telemetry, exporter, provider, translate),
                "cold": replay(parsed, reps, telemetry, exporter, provider, translate),
            }
    return out


def _hot(chunks: list[Any]) -> list[Any]:
    """The stream with its fragment chunks cycling through 64 objects: a chunk the SDK has just
    parsed is in the CPU cache, one of 16,000 parsed long ago is not (the cold replay pays misses
    the real stream never does)."""
    head, body, tail = chunks[:2], chunks[2:-4], chunks[-4:]
    return head + [body[i % 64] for i in range(len(body))] + tail


def replay(
    chunks: list[Any], reps: int, telemetry: Any, exporter: Any, provider: str, translate: Any
) -> dict[str, Any]:
    from otel_toolcalls._core.state import RequestInfo, StreamState
    from otel_toolcalls._core.stream import wrap_sync

    gc.collect()
    gc.freeze()
    bare = inst = float("inf")
    spans = 0
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        for _ in iter(chunks):
            pass
        bare = min(bare, time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        state = StreamState(telemetry, RequestInfo(provider=provider, model="bench"))
        for _ in wrap_sync(iter(chunks), state, translate):
            pass
        inst = min(inst, time.perf_counter() - start)
        spans = len(exporter.get_finished_spans())
        exporter.clear()
    gc.unfreeze()
    return {
        "chunks": len(chunks),
        "us_per_chunk": (inst - bare) / len(chunks) * 1e6,
        "us_per_stream": (inst - bare) * 1e6,
        "spans": spans,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lengths", default="50,500,4000,16000")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument(
        "--snapshot",
        help="import otel_toolcalls from this directory (git archive <commit> | tar -x -C DIR), "
        "not from the development install",
    )
    args = parser.parse_args()
    if args.snapshot:
        import snapshot

        print(f"[hotpath] otel_toolcalls from {snapshot.use(args.snapshot)}", file=sys.stderr)
    result = measure([int(x) for x in args.lengths.split(",")], args.reps)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
