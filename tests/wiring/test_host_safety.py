"""The SDK behaves the same with and without the package, and our faults never reach the host."""


from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls.testing import Script, sse
from otel_toolcalls.testing.openai_chat import (
    PARALLEL,
    WEATHER,
    chunk,
    events_for,
    legacy_error,
    raw_script,
    request,
    tool_call_script,
)

Scenario = Callable[[openai.OpenAI], Any]


def _scripts() -> dict[str, Script]:
    before_error = [sse(chunk(e)) for e in events_for([WEATHER], finish_reason=None)[:4]]
    return {
        "completed": tool_call_script(PARALLEL),
        "cut": tool_call_script([WEATHER], cut_after=5),
        "legacy_error": Script([*before_error, legacy_error("overloaded")]),
        "length": tool_call_script([WEATHER], finish_reason="length"),
        "odd_shapes": raw_script(
            [
                {"id": "x", "object": "chat.completion.chunk", "model": "m", "created": 1},  # no choices
                {"id": "x", "object": "chat.completion.chunk", "choices": None},
                {"choices": [{"index": 0, "delta": None, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": None}]}}]},
                {"choices": [{"delta": {"tool_calls": [{"function": {"name": "x", "arguments": 5}}]}}]},
                {"choices": "not a list"},
                {"weird": True},
            ]
        ),
    }


def _consume(client: openai.OpenAI, style: str) -> tuple[list[dict], tuple[type, str] | None]:
    """(model_dump of every chunk yielded, (exception type, message) or None)."""
    got: list[dict] = []
    try:
        if style == "for":
            for c in client.chat.completions.create(**request()):
                got.append(c.model_dump())
        elif style == "next":
            stream = client.chat.completions.create(**request())
            while True:
                try:
                    got.append(next(stream).model_dump())
                except StopIteration:
                    break
        elif style == "with_close":
            with client.chat.completions.create(**request()) as stream:
                for i, c in enumerate(stream):
                    got.append(c.model_dump())
                    if i == 3:
                        stream.close()
                        break
            # What iterating after close() yields depends on what the socket had buffered: not compared.
        elif style == "helper":
            kwargs = request()
            del kwargs["stream"]
            with client.chat.completions.stream(**kwargs) as helper:
                got.extend(e.model_dump() if hasattr(e, "model_dump") else {"e": repr(e)} for e in helper)
    except Exception as exc:
        return got, (type(exc), str(exc))
    return got, None


def _run(fake: Any, script: Script, style: str) -> tuple[list[dict], tuple[type, str] | None]:
    fake.enqueue(script)
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    return _consume(client, style)


@pytest.mark.parametrize("style", ["for", "next", "with_close", "helper"])
@pytest.mark.parametrize("name", ["completed", "cut", "legacy_error", "length", "odd_shapes"])
def test_same_chunks_and_exceptions(telemetry, instrument, fake, name, style):
    instrumentor = instrument()
    instrumentor.uninstrument()
    bare = _run(fake, _scripts()[name], style)
    instrument()
    traced = _run(fake, _scripts()[name], style)
    assert traced == bare
    if name in ("cut", "legacy_error") and style != "with_close":  # closed before the error
        assert bare[1] is not None
    if name == "completed" and style != "with_close":
        assert len(telemetry.tool_spans()) == 2


class Exploding(SpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor on_start")

    def on_end(self, span: Any) -> None:
        raise RuntimeError("processor on_end")


class ExplodingMeterProvider(MeterProvider):
    """Every instrument it makes raises on record/add."""

    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        meter = super().get_meter(*args, **kwargs)

        class Boom:
            def __getattr__(self, name: str) -> Any:
                if name.startswith("create_"):

                    def make(*a: Any, **k: Any) -> Any:
                        return _Raising()

                    return make
                return getattr(meter, name)

        return Boom()


class _Raising:
    def add(self, *a: Any, **k: Any) -> None:
        raise RuntimeError("counter add")

    def record(self, *a: Any, **k: Any) -> None:
        raise RuntimeError("histogram record")


@pytest.mark.parametrize("name", ["completed", "cut", "length"])
def test_faulty_processor_and_meter_change_nothing(telemetry, instrument, fake, name):
    instrumentor = instrument()
    instrumentor.uninstrument()
    bare = _run(fake, _scripts()[name], "for")
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(Exploding())
    faulty = ToolCallsInstrumentor()
    faulty.instrument(tracer_provider=tracer_provider, meter_provider=ExplodingMeterProvider())
    try:
        traced = _run(fake, _scripts()[name], "for")
        assert traced == bare
        from otel_toolcalls import execute_tool

        with execute_tool(WEATHER.id, name="get_weather"):
            pass
    finally:
        faulty.uninstrument()


def test_odd_shapes_still_trace_the_good_chunks(telemetry, instrument, fake):
    good = [sse(chunk(e)) for e in events_for([WEATHER])]
    odd = sse({"id": "x", "object": "chat.completion.chunk", "model": "m", "created": 1})
    fake.enqueue(Script([good[0], odd, *good[1:], sse("[DONE]")]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    assert len(list(client.chat.completions.create(**request()))) == len(good) + 1
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
