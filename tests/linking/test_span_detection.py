"""The package knows its own execution spans by its own record of them, not by reading
``span.attributes`` (only the OpenTelemetry SDK's span class has it): under another tracer
provider an execution inside ``execute_tool`` must not get a second execution span."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_toolcalls._config import resolve
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, execution_in_progress


class _BareSpan(trace.Span):
    """A recording span of another tracer provider: the API's methods, no ``attributes``."""

    def __init__(self, name: str, number: int) -> None:
        self.name = name
        self._context = SpanContext(1, number, False, TraceFlags(TraceFlags.SAMPLED))
        self.ended = False

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return not self.ended

    def end(self, end_time: int | None = None) -> None:
        self.ended = True

    def set_attributes(self, attributes: Any) -> None: ...
    def set_attribute(self, key: str, value: Any) -> None: ...
    def add_event(self, name: str, attributes: Any = None, timestamp: Any = None) -> None: ...
    def add_link(self, context: Any, attributes: Any = None) -> None: ...
    def update_name(self, name: str) -> None: ...
    def set_status(self, status: Any, description: Any = None) -> None: ...
    def record_exception(self, exception: Any, *args: Any, **kwargs: Any) -> None: ...


class _BareTracer(trace.Tracer):
    def __init__(self) -> None:
        self.started: list[_BareSpan] = []

    def start_span(self, name: str, context: Any = None, *args: Any, **kwargs: Any) -> trace.Span:
        span = _BareSpan(name, len(self.started) + 1)
        self.started.append(span)
        return span

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class _BareProvider(trace.TracerProvider):
    def __init__(self) -> None:
        self.tracer = _BareTracer()

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return self.tracer


def test_an_execution_inside_execute_tool_is_not_spanned_twice_under_another_provider() -> None:
    from otel_toolcalls import execute_tool

    provider = _BareProvider()
    telemetry = Telemetry(resolve(), tracer_provider=provider)
    with execute_tool("call_1", name="get_weather", telemetry=telemetry) as span:
        assert execution_in_progress() is span
        with Execution("call_1", "get_weather", telemetry):
            pass
    assert [s.name for s in provider.tracer.started] == ["execute_tool get_weather"]


def test_a_span_the_package_never_saw_is_not_an_execution() -> None:
    span = NonRecordingSpan(SpanContext(1, 7, False))
    with trace.use_span(span):
        assert execution_in_progress() is None
