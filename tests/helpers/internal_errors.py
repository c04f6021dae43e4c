"""The package's own failures as a test plants and reads them: a span processor that raises, and
``toolcall.internal_errors`` by site and type."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_toolcalls._core import names as n


class RaisingProcessor(SpanProcessor):
    """Raises in ``where`` (``on_start`` or ``on_end``) for every span whose name starts with
    ``prefix`` (all of them by default). The SDK's multi-span processor calls each processor
    without catching: the raise reaches whoever started or ended the span."""

    def __init__(self, where: str, prefix: str = "") -> None:
        assert where in ("on_start", "on_end"), where
        self.where, self.prefix = where, prefix

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        if self.where == "on_start" and span.name.startswith(self.prefix):
            raise RuntimeError("a processor that fails in on_start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.where == "on_end" and span.name.startswith(self.prefix):
            raise RuntimeError("a processor that fails in on_end")


def internal_errors(telemetry: Any) -> dict[tuple[str, str], int]:
    """``(error.site, error.type)`` -> the count of ``toolcall.internal_errors`` so far."""
    counts: dict[tuple[str, str], int] = {}
    for point in telemetry.points(n.METRIC_TOOLCALL_INTERNAL_ERRORS):
        key = (point.attributes[n.ERROR_SITE], point.attributes[n.ERROR_TYPE])
        counts[key] = counts.get(key, 0) + point.value
    return counts
