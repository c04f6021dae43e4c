"""OpenAI Agents SDK's Responses model over WebSocket (``OpenAIResponsesWSModel``): the real agent
loop (``Runner``) against the fake provider's WebSocket endpoint (127.0.0.1, real frames)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, Runner
from agents.exceptions import ModelBehaviorError, UserError
from agents.models import openai_responses as responses
from agents_tool import WEATHER_TOOL, ran, reset
from openai import AsyncOpenAI
from websockets.exceptions import ConnectionClosedError

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls._core import names as n
from otel_toolcalls.testing.openai_realtime import frames, turn
from otel_toolcalls.testing.openai_responses import MODEL, WEATHER, ToolCall, events_for

if not hasattr(responses, "OpenAIResponsesWSModel"):
    pytest.skip("this openai-agents has no Responses WebSocket model", allow_module_level=True)

CUT = ToolCall(WEATHER.name, '{"location": "Zürich, Sch', call_id="call_cut_1")


@pytest.fixture(autouse=True)
def _setup() -> None:
    reset()


def _agent(fake: Any) -> Agent[Any]:
    client = AsyncOpenAI(
        api_key="sk-fake", base_url=fake.base_url + "/v1", websocket_base_url=fake.websocket.base_url,
        max_retries=0,
    )  # fmt: skip
    model = responses.OpenAIResponsesWSModel(MODEL, client)
    return Agent(name="weather", instructions="Answer briefly.", model=model, tools=[WEATHER_TOOL])


async def _run(fake: Any, *turns: list[Any], streamed: bool = True) -> Any:
    """The agent loop over one connection the model keeps: each turn waits for its response.create."""
    fake.websocket.enqueue(frames(*turns, session=False))
    # A hang guard: a request the script does not answer waits on the socket for ever.
    async with asyncio.timeout(20):
        if not streamed:
            return await Runner.run(_agent(fake), "weather in Zürich?")
        result = Runner.run_streamed(_agent(fake), "weather in Zürich?")
        async for _ in result.stream_events():
            pass
        return result


def _executions(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("execute_tool ")]


def _inference(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("chat ")]


@pytest.mark.parametrize("streamed", [True, False], ids=["run_streamed", "run"])
async def test_completed_call_executed_and_linked(
    instrument: Any, telemetry: Any, fake: Any, streamed: bool
) -> None:
    turns = [turn(events_for([WEATHER])), turn(events_for([], text="Sunny."))]
    result = await _run(fake, *turns, streamed=streamed)
    assert result.final_output == "Sunny."
    assert ran == [WEATHER.arguments]
    call = telemetry.one("tool_call get_weather")
    assert call.attributes["toolcall.outcome"] == "completed"
    (execution,) = _executions(telemetry)
    assert execution.attributes["gen_ai.tool.call.id"] == WEATHER.call_id
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    first, second = _inference(telemetry)
    assert first.attributes["gen_ai.request.model"] == MODEL
    assert first.attributes["server.address"] == "127.0.0.1"
    assert call.parent.span_id == first.context.span_id
    assert second.attributes["toolcall.outcome"] == "completed"
    # The execution's answer went back over the same socket.
    assert fake.websocket.received_types() == ["response.create", "response.create"]
    assert len(fake.websocket.paths) == 1


async def test_socket_dies_mid_arguments(instrument: Any, telemetry: Any, fake: Any) -> None:
    """The socket drops (no close frame: code 1006) inside the arguments: the run raises the
    socket's error, nothing runs, the call is aborted with that error."""
    instrument(strict=True)
    with pytest.raises(ConnectionClosedError):
        await _run(fake, turn(events_for([WEATHER]), cut_after=5))
    call = telemetry.one("tool_call get_weather")
    assert call.attributes["toolcall.abort_reason"] == n.STREAM_ERROR
    assert call.attributes["error.type"] == "websockets.exceptions.ConnectionClosedError"
    assert ran == [] and _executions(telemetry) == []
    (response,) = _inference(telemetry)
    assert response.attributes["toolcall.abort_reason"] == n.STREAM_ERROR


async def test_call_labelled_complete_but_cut_runs_unlinked_and_its_replay_is_flagged(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    """The done item says completed, the arguments stop mid-document: the runner runs the tool on
    the cut text; unlinked, and the next request, carrying the call back, is flagged."""
    await _run(fake, turn(events_for([CUT])), turn(events_for([], text="Sorry.")))
    assert ran == [CUT.arguments]
    assert telemetry.one("tool_call get_weather").attributes["toolcall.abort_reason"] == n.UNTERMINATED
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.links == ()
    second = _inference(telemetry)[-1]
    assert second.attributes["toolcall.replayed_aborted"] == 1


async def test_strict_refuses_the_cut_call_before_the_body(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    instrument(strict=True)
    with pytest.raises(UserError) as raised:
        await _run(fake, turn(events_for([CUT])))
    assert isinstance(raised.value.__cause__, IncompleteToolCallError)
    assert ran == []
    (execution,) = _executions(telemetry)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert fake.websocket.received_types() == ["response.create"]


async def test_token_limit_inside_the_arguments(instrument: Any, telemetry: Any, fake: Any) -> None:
    """response.incomplete (max_output_tokens): the call is truncated; the runner raises, nothing runs."""
    cut = ToolCall(WEATHER.name, CUT.arguments, call_id="call_truncated_1", status="incomplete")
    with pytest.raises(ModelBehaviorError):
        await _run(fake, turn(events_for([cut], end="incomplete")))
    assert telemetry.one("tool_call get_weather").attributes["toolcall.abort_reason"] == n.TRUNCATED
    assert ran == [] and _executions(telemetry) == []
