"""One provider, bare or instrumented, in a fresh process: its 4,000-fragment stream read by the
real SDK from the fake provider, the CPU time per chunk of the fastest of ``--reps`` repetitions.

Run by benchmarks/providers.py; prints one JSON object (worker.measure's fields).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import provider_streams  # noqa: E402
import worker  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--provider", required=True, choices=list(provider_streams.BY_NAME))
    parser.add_argument("--variant", required=True, choices=("bare", "otel_toolcalls"))
    parser.add_argument("--url", required=True)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    # Bare means bare: anthropic 2.x would otherwise trace itself once a tracer provider is set.
    os.environ["ANTHROPIC_OPEN_TELEMETRY"] = "false"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    provider = provider_streams.BY_NAME[args.provider]
    # Instrumented before the client exists: cohere's client binds its methods at construction.
    exporter = worker.instrument(args.variant, args.provider)
    opener = provider.opener(args.url)
    for _ in opener():  # warm-up: imports on first use, connection pool, the SDK's lazy caches
        pass
    if exporter is not None:
        exporter.clear()
    # As in worker.py: a full collection with the SDKs loaded must not land inside a measured stream.
    gc.collect()
    gc.freeze()
    out = worker.measure(None, lambda _client: opener(), exporter, args.reps)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
