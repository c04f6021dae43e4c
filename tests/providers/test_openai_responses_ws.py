"""The real openai SDK's Responses WebSocket client (``client.responses.connect()``, sync and async)
against the fake provider's WebSocket endpoint: the Responses events, many responses and lanes on
one connection, and every way a connection ends mid-arguments."""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import replace
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind
from outcomes import assert_outcome

from otel_toolcalls import tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls._providers.openai import responses_ws as openai_responses_ws
from otel_toolcalls._wiring.patches import resolve
from otel_toolcalls.testing.openai_realtime import frames, turn
from otel_toolcalls.testing.openai_responses import MODEL, USAGE, WEATHER, ToolCall, events_for

if resolve(openai_responses_ws.MODULE, "ResponsesConnection") is None:
    pytest.skip(f"openai {openai.__version__} has no Responses WebSocket", allow_module_level=True)
if importlib.util.find_spec("websockets") is None:
    pytest.skip("websockets is not installed (openai[realtime])", allow_module_level=True)

LOOKUP = ToolCall("lookup", '{"q": "straße", "n": 12345}', call_id="call_lookup_2")


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def on_lane(events: list[dict[str, Any]], lane: str | None, response_id: str) -> list[dict[str, Any]]:
    """The events of one response, on a lane (the Responses WebSocket echoes the create's stream_id)."""
    for event in events:
        if lane is not None:
            event["stream_id"] = lane
        if "response" in event:
            event["response"]["id"] = response_id
    return events


def run(
    fake: Any, mode: str, creates: list[dict[str, Any]], until: int, close_after: int | None = None
) -> Any:
    """Sends each ``response.create`` (its keywords), then reads until ``until`` responses ended, or
    ``close_after`` argument deltas arrived (then closes), or the connection ended."""
    final = {"response.completed", "response.incomplete", "response.failed", "error"}
    cls = openai.OpenAI if mode == "sync" else openai.AsyncOpenAI
    client = cls(
        api_key="sk-test", base_url=fake.base_url + "/v1", websocket_base_url=fake.websocket.base_url
    )

    def done(seen: list[Any]) -> bool:
        deltas = sum(1 for e in seen if e.type == "response.function_call_arguments.delta")
        return sum(1 for e in seen if e.type in final) >= until or deltas == close_after

    def sync() -> Any:
        seen: list[Any] = []
        with client.responses.connect() as connection:
            for create in creates:
                # A lane by hand: create(stream_id=...) came after the transport (2.22 lacks it).
                if "stream_id" in create:
                    connection.send({"type": "response.create", **create})
                else:
                    connection.response.create(**create)
            try:
                for event in connection:
                    seen.append(event)
                    if done(seen):
                        return seen
            except Exception as exc:
                return exc
        return seen

    async def async_() -> Any:
        seen: list[Any] = []
        async with client.responses.connect() as connection:
            for create in creates:
                if "stream_id" in create:
                    await connection.send({"type": "response.create", **create})
                else:
                    await connection.response.create(**create)
            try:
                async for event in connection:
                    seen.append(event)
                    if done(seen):
                        return seen
            except Exception as exc:
                return exc
        return seen

    return sync() if mode == "sync" else asyncio.run(async_())


def tool_span(telemetry: Any, call: ToolCall) -> ReadableSpan:
    found = [
        s for s in telemetry.tool_spans() if (s.attributes or {}).get(n.TOOLCALL_CALL_ID) == call.call_id
    ]
    assert len(found) == 1, [s.name for s in telemetry.spans()]
    return found[0]


def responses(telemetry: Any) -> dict[str, ReadableSpan]:
    return {s.attributes[n.GEN_AI_RESPONSE_ID]: s for s in telemetry.spans() if s.kind is SpanKind.CLIENT}  # type: ignore[index]


def assert_call(span: ReadableSpan, call: ToolCall, *, reason: str | None, delivered: int | None = None,
                error_type: str | None = None, model: str = MODEL) -> None:  # fmt: skip
    attrs = span.attributes or {}
    pieces = call.pieces()[:delivered]
    assert (attrs[n.GEN_AI_PROVIDER_NAME], attrs[n.TOOLCALL_REQUEST_MODEL]) == ("openai", model)
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(pieces)
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(pieces).encode("utf-8"))
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs
    assert_outcome(span, reason, error_type)


def test_a_completed_call(fake: Any, instrument: Any, telemetry: Any, mode: str) -> None:
    fake.websocket.enqueue(
        frames(turn(on_lane(events_for([WEATHER], usage=USAGE), None, "resp_1")), session=False)
    )
    run(fake, mode, [{"model": MODEL, "input": "weather?"}], until=1)
    response = responses(telemetry)["resp_1"]
    attrs = response.attributes or {}
    assert response.name == f"chat {MODEL}"
    assert (attrs[n.TOOLCALL_OUTCOME], attrs[n.GEN_AI_RESPONSE_MODEL]) == ("completed", MODEL)
    assert (attrs[n.GEN_AI_USAGE_INPUT_TOKENS], attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS]) == (36, 87)
    span = tool_span(telemetry, WEATHER)
    assert_call(span, WEATHER, reason=None)
    assert span.parent is not None and span.parent.span_id == response.context.span_id
    assert tool_call_outcome(WEATHER.call_id) == "completed"
    assert "response.create" in fake.websocket.received_types()


def test_events_read_with_recv_bytes_are_said_once_not_to_be_traced(
    fake: Any, instrument: Any, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    from otel_toolcalls._core import process

    process.reset()  # sites warned about by earlier tests: said again
    fake.websocket.enqueue(frames(turn(on_lane(events_for([WEATHER]), None, "resp_1")), session=False))
    client = (openai.OpenAI if mode == "sync" else openai.AsyncOpenAI)(
        api_key="sk-test", base_url=fake.base_url + "/v1", websocket_base_url=fake.websocket.base_url
    )

    def sync() -> list[Any]:
        with client.responses.connect() as connection:
            connection.response.create(model=MODEL, input="weather?")
            return [connection.recv_bytes() for _ in range(3)]

    async def async_() -> list[Any]:
        async with client.responses.connect() as connection:
            await connection.response.create(model=MODEL, input="weather?")
            return [await connection.recv_bytes() for _ in range(3)]

    with caplog.at_level("WARNING", logger="otel_toolcalls"):
        raw = sync() if mode == "sync" else asyncio.run(async_())
    assert all(isinstance(message, bytes) for message in raw)
    said = [
        r.getMessage()
        for r in caplog.records
        if r.name == "otel_toolcalls" and "recv_bytes()" in r.getMessage()
    ]
    assert len(said) == 1 and "ResponsesConnection.recv_bytes() are not traced" in said[0]


def test_two_lanes_interleaved_and_a_second_response(
    fake: Any, instrument: Any, telemetry: Any, mode: str
) -> None:
    """Lane a and lane b stream at once, events interleaved; then lane a's second response is cut by
    its token limit. Each call is under its own response, with its own request's model."""
    a = on_lane(events_for([WEATHER]), "lane_a", "resp_a")
    b = on_lane(events_for([LOOKUP], model="gpt-5-mini"), "lane_b", "resp_b")
    cut = replace(LOOKUP, call_id="call_cut", status="incomplete")
    again = on_lane(events_for([cut], end="incomplete"), "lane_a", "resp_a2")
    mixed = [event for pair in zip(a, b, strict=False) for event in pair] + a[len(b) :] + b[len(a) :]
    steps = [*turn(mixed)[:1], turn([])[0], turn([])[0], *turn(mixed)[1:], *turn(again)[1:]]
    fake.websocket.enqueue(frames(steps, session=False))
    creates = [{"model": MODEL, "stream_id": "lane_a"}, {"model": "gpt-5-mini", "stream_id": "lane_b"},
               {"model": MODEL, "stream_id": "lane_a"}]  # fmt: skip
    run(fake, mode, creates, until=3)
    spans = responses(telemetry)
    assert sorted(spans) == ["resp_a", "resp_a2", "resp_b"]
    for call, response, model in ((WEATHER, "resp_a", MODEL), (LOOKUP, "resp_b", "gpt-5-mini")):
        span = tool_span(telemetry, call)
        assert_call(span, call, reason=None, model=model)
        assert span.parent.span_id == spans[response].context.span_id  # type: ignore[union-attr]
    assert_call(tool_span(telemetry, cut), cut, reason=n.TRUNCATED)
    assert spans["resp_a2"].attributes[n.TOOLCALL_ABORT_REASON] == n.TRUNCATED  # type: ignore[index]


@pytest.mark.parametrize(("end", "error_type"), [("failed", "server_error"), ("error", "server_error")])
def test_a_failed_response_or_an_error_event(fake: Any, instrument: Any, telemetry: Any, mode: str, end: str,
                                             error_type: str) -> None:  # fmt: skip
    call = replace(WEATHER, status=None)
    fake.websocket.enqueue(frames(turn(on_lane(events_for([call], end=end), None, "resp_1")), session=False))
    run(fake, mode, [{"model": MODEL}], until=1)
    assert_call(tool_span(telemetry, call), call, reason=n.STREAM_ERROR, error_type=error_type)


def test_a_dropped_socket_mid_arguments(fake: Any, instrument: Any, telemetry: Any, mode: str) -> None:
    events = on_lane(events_for([WEATHER]), None, "resp_1")
    fake.websocket.enqueue(frames(turn(events, cut_after=6), session=False))  # created, in_progress, added, 3
    raised = run(fake, mode, [{"model": MODEL}], until=1)
    assert isinstance(raised, Exception)
    error_type = f"{type(raised).__module__}.{type(raised).__qualname__}"
    assert_call(
        tool_span(telemetry, WEATHER), WEATHER, reason=n.STREAM_ERROR, delivered=3, error_type=error_type
    )


def test_closed_by_the_user_mid_arguments(fake: Any, instrument: Any, telemetry: Any, mode: str) -> None:
    events = on_lane(events_for([WEATHER]), None, "resp_1")
    fake.websocket.enqueue(frames(turn(events, cancel_after=6), session=False))  # holds after 3 deltas
    run(fake, mode, [{"model": MODEL}], until=1, close_after=3)
    assert_call(tool_span(telemetry, WEATHER), WEATHER, reason=n.CLOSED, delivered=3)
    assert responses(telemetry)["resp_1"].attributes[n.TOOLCALL_ABORT_REASON] == n.CLOSED  # type: ignore[index]
