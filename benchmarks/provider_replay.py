"""The package's own per-chunk cost for every adapter, SDK and socket excluded (hotpath.py's method).

The chunks each real SDK parsed from the fake provider are replayed from a list, bare and through
``wrap_sync`` + the adapter's translator with a real ``StreamState`` and SDK providers. For Bedrock
the adapter calls the translator from botocore's ``_parse_event`` rather than from ``wrap_sync``,
and for LiteLLM it pulls through a patched ``__next__``: the replay measures the same translator and
finalize-once wrapper, not those hooks (a wrapt call each; the end-to-end table includes them).

    python benchmarks/provider_replay.py [--providers responses,groq] [--reps 15]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hotpath  # noqa: E402
import provider_streams  # noqa: E402

# Chunks kept in place at either end of a stream (start, stop and settle events); those between
# are argument fragments (or, for the Gemini streams, whole calls / text parts), cycled for "hot".
EDGE = 4


def _parsed(provider: provider_streams.Provider) -> list[Any]:
    from otel_toolcalls.testing import FakeProvider

    with FakeProvider(default=provider.script()) as fake:
        # Held while the stream is read: a collected genai.Client closes its HTTP client.
        opener = provider.opener(fake.base_url)
        return list(opener())


def _hot(chunks: list[Any]) -> list[Any]:
    """hotpath's hot replay for any stream: fragment chunks cycle through 64 objects, as warm in the CPU
    cache as a chunk the SDK has just parsed."""
    head, body, tail = chunks[:EDGE], chunks[EDGE:-EDGE], chunks[-EDGE:]
    return head + [body[i % 64] for i in range(len(body))] + tail


def measure(names: list[str], reps: int) -> dict[str, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_toolcalls._config import resolve
    from otel_toolcalls._core.telemetry import Telemetry

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(resolve(), tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
    out: dict[str, Any] = {}
    for name in names:
        provider = provider_streams.BY_NAME[name]
        parsed = _parsed(provider)
        translate = provider_streams.translator(provider)
        out[name] = {
            "hot": hotpath.replay(_hot(parsed), reps, telemetry, exporter, name, translate),
            "cold": hotpath.replay(parsed, reps, telemetry, exporter, name, translate),
        }
        print(f"[replay] {name}: {out[name]['hot']['us_per_chunk']:+.3f} us/chunk", file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--providers", default=",".join(p.name for p in provider_streams.PROVIDERS))
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    os.environ["ANTHROPIC_OPEN_TELEMETRY"] = "false"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    print(json.dumps(measure(args.providers.split(","), args.reps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
