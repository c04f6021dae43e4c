"""Event shapes the SDKs accept and their own test suites send (tests/sdk_suites/run.py found them):
read without an internal error, the telemetry right. The real openai SDK against the fake provider."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import openai
import pytest
from opentelemetry.trace import SpanKind
from outcomes import assert_outcome

from otel_toolcalls import tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls._providers.openai import realtime as openai_realtime
from otel_toolcalls._providers.openai import responses_ws as openai_responses_ws
from otel_toolcalls._wiring.patches import resolve
from otel_toolcalls.testing import openai_realtime as realtime_fake
from otel_toolcalls.testing.openai_realtime import frames, turn
from otel_toolcalls.testing.openai_responses import MODEL, RESPONSE_ID, WEATHER, events_for, script_for

if importlib.util.find_spec("openai.resources.responses") is None:
    pytest.skip(f"openai {openai.__version__} has no Responses API", allow_module_level=True)

EMPTY_ADDED = {"type": "response.output_item.added", "output_index": 0, "item": None}
EMPTY_DONE = {"type": "response.output_item.done", "output_index": 0, "item": None}


def no_internal_errors(telemetry: Any) -> None:
    assert telemetry.points("toolcall.internal_errors") == []


def inference_spans(telemetry: Any) -> list[Any]:
    return sorted(
        (s for s in telemetry.spans() if s.kind is SpanKind.CLIENT), key=lambda s: s.start_time or 0
    )


def weather_completed(telemetry: Any, response: Any) -> None:
    (span,) = [s for s in telemetry.tool_spans() if s.name == f"tool_call {WEATHER.name}"]
    assert_outcome(span, None, None)
    assert span.parent is not None and span.parent.span_id == response.context.span_id
    assert tool_call_outcome(WEATHER.call_id) == "completed"


def with_empty_items(events: list[dict[str, Any]], *empty: dict[str, Any]) -> list[dict[str, Any]]:
    # After response.created and response.in_progress: an output index held empty, then the call.
    return [*events[:2], *empty, *events[2:]]


@pytest.mark.parametrize("empty", [[EMPTY_ADDED], [EMPTY_ADDED, EMPTY_DONE]], ids=["added", "added-done"])
def test_null_output_items_before_a_call(telemetry: Any, instrument: Any, fake: Any, empty: Any) -> None:
    fake.enqueue(script_for(with_empty_items(events_for([WEATHER]), *empty)))
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    seen = [event.type for event in client.responses.create(model=MODEL, input="weather?", stream=True)]
    assert seen.count("response.output_item.added") == 2
    (response,) = inference_spans(telemetry)
    assert response.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert response.attributes[n.TOOLCALL_COUNT] == 1
    weather_completed(telemetry, response)
    no_internal_errors(telemetry)


def test_null_output_item_through_the_stream_helper(telemetry: Any, instrument: Any, fake: Any) -> None:
    fake.enqueue(script_for(with_empty_items(events_for([WEATHER]), EMPTY_ADDED)))
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)

    async def consume() -> Any:
        async with client.responses.stream(model=MODEL, input="weather?") as stream:
            return await stream.get_final_response()

    final = asyncio.run(consume())
    assert [item.call_id for item in final.output] == [WEATHER.call_id]
    (response,) = inference_spans(telemetry)
    assert response.attributes[n.TOOLCALL_OUTCOME] == "completed"
    weather_completed(telemetry, response)
    no_internal_errors(telemetry)


def test_lifecycle_events_without_their_response_fields(telemetry: Any, instrument: Any, fake: Any) -> None:
    """``response.created`` with no response, ``response.completed`` with no status: the response's
    id comes from the final event, the status defaults to completed, as the SDK's does."""
    events = events_for([WEATHER])
    events[0] = {"type": "response.created", "sequence_number": 1}
    del events[-1]["response"]["status"]
    fake.enqueue(script_for(events))
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    for _ in client.responses.create(model=MODEL, input="weather?", stream=True):
        pass
    (response,) = inference_spans(telemetry)
    assert response.attributes[n.GEN_AI_RESPONSE_ID] == RESPONSE_ID
    assert response.attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("completed",)
    weather_completed(telemetry, response)
    no_internal_errors(telemetry)


def _websocket_client(fake: Any) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test", base_url=fake.base_url + "/v1", websocket_base_url=fake.websocket.base_url
    )


@pytest.mark.skipif(
    resolve(openai_responses_ws.MODULE, "ResponsesConnection") is None
    or not importlib.util.find_spec("websockets"),
    reason="no Responses WebSocket in this openai (or no websockets)",
)
def test_a_list_valued_stream_id_on_the_responses_websocket(
    telemetry: Any, instrument: Any, fake: Any
) -> None:
    """The SDK passes on a stream_id that is no string (its own tests send a list): no lane is named
    by it, the response is the default lane's, traced whole."""
    events = events_for([WEATHER])
    for event in events:
        event["stream_id"] = ["lane_a"]
    fake.websocket.enqueue(frames(turn(events), session=False))
    with _websocket_client(fake).responses.connect() as connection:
        connection.send({"type": "response.create", "model": MODEL, "stream_id": ["lane_a"]})  # type: ignore[typeddict-item]
        for event in connection:
            if event.type == "response.completed":
                break
    (response,) = inference_spans(telemetry)
    assert response.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert response.attributes[n.GEN_AI_REQUEST_MODEL] == MODEL
    weather_completed(telemetry, response)
    no_internal_errors(telemetry)


@pytest.mark.skipif(
    importlib.util.find_spec(openai_realtime.MODULES[0].rpartition(".")[0]) is None
    or not importlib.util.find_spec("websockets"),
    reason="no Realtime API in this openai (or no websockets)",
)
def test_a_realtime_response_created_without_its_response(telemetry: Any, instrument: Any, fake: Any) -> None:
    """No response id to route its events by: that response is not traced (nothing claimed of it),
    the next one on the connection is."""
    unrouted = realtime_fake.response_events([WEATHER], response_id="resp_unrouted")
    unrouted[0] = {"type": "response.created", "event_id": "event_created"}
    fake.websocket.enqueue(frames(turn(unrouted), turn(realtime_fake.response_events([WEATHER]))))
    done = 0
    with _websocket_client(fake).realtime.connect(model=MODEL) as connection:
        connection.response.create()
        for event in connection:
            if event.type == "response.done":
                done += 1
                if done == 2:
                    break
                connection.response.create()
    (response,) = inference_spans(telemetry)
    assert response.attributes[n.GEN_AI_RESPONSE_ID] == "resp_fake_1"
    assert response.attributes[n.TOOLCALL_COUNT] == 1
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    no_internal_errors(telemetry)


# -- the sweep: fields other SDKs declare Optional, or parse without checking ----------------------------


def test_cohere_tool_call_events_without_their_optional_parts(
    telemetry: Any, instrument: Any, fake: Any
) -> None:
    """cohere types delta, its message and the message's tool_calls Optional, each: such an event
    carries no fragment, the call around it completes with the fragments that came."""
    import cohere

    from otel_toolcalls.testing import cohere as cohere_fake
    from otel_toolcalls.testing.openai_chat import WEATHER as CALL

    events = cohere_fake.events_for([CALL])
    hollow = [
        cohere_fake.event("tool-call-delta", index=0),
        cohere_fake.event("tool-call-delta", index=0, delta={"message": None}),
        cohere_fake.event("tool-call-delta", index=0, delta={"message": {"tool_calls": None}}),
        cohere_fake.event("tool-call-start", index=1, delta={"message": {}}),
    ]
    start = next(i for i, data in enumerate(events) if b"tool-call-start" in data)
    fake.enqueue(cohere_fake.script_for([*events[: start + 2], *hollow, *events[start + 2 :]]))
    seen = list(
        cohere.ClientV2(base_url=fake.base_url, api_key="x").chat_stream(model=cohere_fake.MODEL, messages=[])
    )
    assert seen[-1].type == "message-end"
    (span,) = telemetry.tool_spans()
    assert span.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(CALL.arguments.encode("utf-8"))
    assert telemetry.one("chat ").attributes[n.TOOLCALL_OUTCOME] == "completed"
    no_internal_errors(telemetry)


def test_bedrock_converse_events_without_their_required_members(
    telemetry: Any, instrument: Any, fake: Any
) -> None:
    """botocore parses an event that lacks a member its shape requires (no validation of output):
    a contentBlockDelta without its delta, a contentBlockStart without its start say nothing."""
    from otel_toolcalls.testing import bedrock, eventstream

    frames = bedrock.frames_for([bedrock.WEATHER])
    frames[2:2] = [
        eventstream.event("contentBlockDelta", {"contentBlockIndex": 0}),
        eventstream.event("contentBlockStart", {"contentBlockIndex": 1}),
    ]
    fake.enqueue(bedrock.script_for(frames))
    client = bedrock.client(fake.base_url)
    response = client.converse_stream(
        modelId=bedrock.MODEL, messages=[{"role": "user", "content": [{"text": "?"}]}]
    )
    events = list(response["stream"])
    assert "metadata" in events[-1]
    (span,) = telemetry.tool_spans()
    assert span.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(bedrock.WEATHER.input.encode("utf-8"))
    no_internal_errors(telemetry)
