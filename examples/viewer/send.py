"""Sends the demo's turns (examples/demo.py) to a trace viewer over OTLP/HTTP, one trace a turn.

Each turn runs under a root span of its own, `demo: {title}`, so that the viewer shows the
inference span, its tool_call spans and the execute_tool span (or its refusal) as one tree. Prints
one line a trace, `{trace_id} {title}`; `--url` (the viewer's base URL) sets the endpoint.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls.testing import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "otel-toolcalls-demo"
CHAIN = {"openinference.span.kind": "CHAIN"}


def _demo() -> object:
    sys.path.insert(0, str(ROOT / "examples"))
    return importlib.import_module("demo")


def send(*, url: str, project: str = PROJECT) -> list[tuple[str, str]]:
    """Runs every demo turn; returns (trace id, title) for each, once the exporter has sent them."""
    demo = _demo()
    # Phoenix files spans under the project this resource attribute names.
    resource = Resource.create({"service.name": project, "openinference.project.name": project})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    # Global too: the anthropic SDK traces itself through the global provider.
    trace.set_tracer_provider(provider)
    instrumentor = ToolCallsInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=MeterProvider())
    tracer = provider.get_tracer("otel_toolcalls.demo")
    sent = []
    try:
        with FakeProvider() as fake:
            for title, run in demo.scenarios(fake):  # type: ignore[attr-defined]
                # The turn's own span; Phoenix shows a span of this kind as a chain of steps.
                with tracer.start_as_current_span(f"demo: {title}", attributes=CHAIN) as root:
                    run()
                sent.append((format(root.get_span_context().trace_id, "032x"), title))
    finally:
        instrumentor.uninstrument()
        if not provider.force_flush():
            raise SystemExit(f"the spans could not be sent to {url}/v1/traces")
        provider.shutdown()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:6006")
    parser.add_argument("--project", default=PROJECT)
    args = parser.parse_args()
    for trace_id, title in send(url=args.url, project=args.project):
        print(trace_id, title)


if __name__ == "__main__":
    main()
