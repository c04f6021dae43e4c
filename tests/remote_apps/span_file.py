"""The MCP processes' spans: each, as it ends, one JSON object a line in a file the test reads."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor


def export_spans(path: str, service: str) -> None:
    """The global tracer provider, for ``service``, writing to ``path`` (appended, open for the life
    of the process)."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    out = open(path, "a", encoding="utf-8")  # noqa: SIM115
    provider.add_span_processor(
        SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=lambda s: s.to_json(indent=None) + "\n"))
    )
    trace.set_tracer_provider(provider)
