"""Someone else's inference span (TELEMETRY.md section 6) is adopted under any tracer provider.

The OpenTelemetry API gives no reader of a span's kind or attributes (only the SDK's span class
shows them), so the package also takes the context's word for it: OpenLLMetry's framework
instrumentations set ``suppress_language_model_instrumentation`` while the provider SDK's call runs
inside the LLM span they made. The tracer provider here is not the SDK's: its spans have the API's
methods and nothing else (no ``kind``, no ``attributes``). The real openai SDK reads the fake
provider's wire bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls._core import names as n
from otel_toolcalls.testing.openai_chat import WEATHER, request, tool_call_script

LLM_SPAN_IS_CURRENT = "suppress_language_model_instrumentation"


class _Span(trace.Span):
    """A recording span of another tracer provider: what it was told is kept in ``told``, which
    the package cannot know of."""

    def __init__(self, name: str, number: int, parent: int | None) -> None:
        self.name = name
        self.parent = parent
        self.told: dict[str, Any] = {}
        self.ended = False
        self._context = SpanContext(7, number, False, TraceFlags(TraceFlags.SAMPLED))

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return not self.ended

    def end(self, end_time: int | None = None) -> None:
        self.ended = True

    def set_attributes(self, attributes: Any) -> None:
        self.told.update(attributes)

    def set_attribute(self, key: str, value: Any) -> None:
        self.told[key] = value

    def add_event(self, name: str, attributes: Any = None, timestamp: Any = None) -> None: ...
    def add_link(self, context: Any, attributes: Any = None) -> None: ...
    def update_name(self, name: str) -> None: ...
    def set_status(self, status: Any, description: Any = None) -> None: ...
    def record_exception(self, exception: Any, *args: Any, **kwargs: Any) -> None: ...


class _Tracer(trace.Tracer):
    def __init__(self) -> None:
        self.started: list[_Span] = []

    def start_span(self, name: str, context: Any = None, *args: Any, **kwargs: Any) -> trace.Span:
        parent = trace.get_current_span(context).get_span_context()
        span = _Span(name, len(self.started) + 1, parent.span_id if parent.is_valid else None)
        span.set_attributes(kwargs.get("attributes") or {})
        self.started.append(span)
        return span

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class _Provider(trace.TracerProvider):
    def __init__(self) -> None:
        self.tracer = _Tracer()

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return self.tracer


@pytest.fixture
def provider() -> Iterator[_Provider]:
    provider = _Provider()
    instrumentor = ToolCallsInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=MeterProvider())
    yield provider
    instrumentor.uninstrument()


def _stream_inside(span: trace.Span, fake: Any, **values: Any) -> None:
    ctx = trace.set_span_in_context(span)
    for key, value in values.items():
        ctx = otel_context.set_value(key, value, ctx)
    fake.enqueue(tool_call_script([WEATHER]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0)
    token = otel_context.attach(ctx)
    try:
        list(client.chat.completions.create(**request()))
    finally:
        otel_context.detach(token)


def test_a_framework_llm_span_of_another_tracer_provider_is_adopted(provider, fake):
    tracer = provider.tracer
    theirs = tracer.start_span(
        "chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes={n.GEN_AI_OPERATION_NAME: "chat"}
    )
    _stream_inside(theirs, fake, **{LLM_SPAN_IS_CURRENT: True})
    assert [s.name for s in tracer.started] == ["chat gpt-4o-mini", "tool_call get_weather"]
    tool = tracer.started[1]
    assert tool.parent == theirs.get_span_context().span_id
    assert tool.told[n.TOOLCALL_OUTCOME] == "completed"
    assert theirs.told[n.TOOLCALL_COUNT] == 1
    assert theirs.told[n.TOOLCALL_OUTCOME] == "completed"
    assert not theirs.ended  # someone else's span: the package never ends it


def test_a_span_of_another_tracer_provider_with_no_word_from_the_context_is_a_parent(provider, fake):
    tracer = provider.tracer
    turn = tracer.start_span("agent turn")
    _stream_inside(turn, fake)
    assert [s.name for s in tracer.started] == ["agent turn", "chat gpt-4o-mini", "tool_call get_weather"]
    _, chat, tool = tracer.started
    assert chat.parent == turn.get_span_context().span_id and tool.parent == 2
    assert chat.ended and chat.told[n.TOOLCALL_OUTCOME] == "completed"
    assert n.TOOLCALL_OUTCOME not in turn.told
