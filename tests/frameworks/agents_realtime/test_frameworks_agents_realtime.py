"""OpenAI Agents SDK realtime: the real ``RealtimeAgent`` / ``RealtimeRunner`` session, its own
``websockets`` connection to the fake provider's Realtime endpoint (127.0.0.1, real frames)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents.realtime import RealtimeAgent, RealtimeRunner
from agents_tool import WEATHER_TOOL, ran, reset
from examples_run import run_example
from websockets.exceptions import ConnectionClosedError

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls._core import names as n
from otel_toolcalls.testing.openai_realtime import MODEL, WEATHER, ToolCall, frames, response_events, turn

CUT = ToolCall(WEATHER.name, '{"location": "Zürich, Sch', call_id="call_cut_1")


@pytest.fixture(autouse=True)
def _setup() -> None:
    reset()


def _first_delta(event: Any) -> bool:
    # The session passes every server event on as a raw model event; the SDK reads no deltas itself.
    data = getattr(getattr(event, "data", None), "data", None)
    return isinstance(data, dict) and data.get("type") == "response.function_call_arguments.delta"


async def _session(fake: Any, *, until: str, on_delta: str | None = None) -> list[Any]:
    """One session: a user message, then the session's events until one of type ``until`` (or the
    session's end). ``on_delta``: at the first argument fragment the application interrupts the
    response (``"interrupt"``) or closes the session (``"close"``)."""
    agent = RealtimeAgent(name="weather", instructions="Answer briefly.", tools=[WEATHER_TOOL])
    config = {"url": fake.websocket.base_url + "/realtime?model=" + MODEL, "api_key": "sk-fake"}
    seen: list[Any] = []
    session = await RealtimeRunner(agent).run(model_config=config)  # type: ignore[arg-type]
    async with session:
        await session.send_message("weather in Zürich?")
        async with asyncio.timeout(20):
            async for event in session:
                seen.append(event)
                if on_delta and _first_delta(event):
                    if on_delta == "close":
                        break  # leaving `async with` closes the session mid-arguments
                    on_delta = None
                    await session.interrupt()
                if event.type == until:
                    break
    return seen


def _executions(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("execute_tool ")]


async def test_completed_call_executed_and_linked(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.websocket.enqueue(frames(turn(response_events([WEATHER])), turn(response_events([], text="Sunny."))))
    await _session(fake, until="tool_end")
    assert [json.loads(a)["location"] for a in ran] == ["Zürich, Schweiz"]
    call = telemetry.one("tool_call get_weather")
    assert call.attributes["toolcall.outcome"] == "completed"
    (execution,) = _executions(telemetry)
    assert execution.attributes["gen_ai.tool.call.id"] == WEATHER.call_id
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]


def _call(telemetry: Any) -> Any:
    return telemetry.one("tool_call get_weather")


async def test_socket_dies_mid_arguments(instrument: Any, telemetry: Any, fake: Any) -> None:
    """The socket drops (no close frame: code 1006) inside the arguments: the call is aborted with
    the socket's error; the SDK never hands a call without its done item to the session."""
    instrument(strict=True)
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]), cut_after=3)))
    with pytest.raises(ConnectionClosedError):  # the session's iterator raises the socket's error
        await _session(fake, until="never")
    call = _call(telemetry)
    assert call.attributes["toolcall.outcome"] == "aborted"
    assert call.attributes["toolcall.abort_reason"] == n.STREAM_ERROR
    assert call.attributes["error.type"] == "websockets.exceptions.ConnectionClosedError"
    assert ran == [] and _executions(telemetry) == []
    (response,) = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert response.attributes["gen_ai.response.model"] == MODEL
    assert response.attributes["server.address"] == "127.0.0.1"
    assert call.parent.span_id == response.context.span_id


async def _until_a_call_ended(fake: Any, telemetry: Any) -> None:
    """A session that reads no events: it waits for a tool_call span to end, then closes."""
    agent = RealtimeAgent(name="weather", instructions="Answer briefly.", tools=[WEATHER_TOOL])
    config = {"url": fake.websocket.base_url + "/realtime?model=" + MODEL, "api_key": "sk-fake"}
    session = await RealtimeRunner(agent).run(model_config=config)  # type: ignore[arg-type]
    async with session:
        await session.send_message("weather in Zürich?")
        async with asyncio.timeout(20):  # a hang guard: the socket's close ends the call
            while not [s for s in telemetry.spans() if s.name.startswith("tool_call ")]:
                await asyncio.sleep(0.01)


async def test_server_closes_cleanly_mid_arguments(instrument: Any, telemetry: Any, fake: Any) -> None:
    """Close code 1000 before the response's end: the response ended without its final event
    (incomplete), before the application closed anything (that would be closed). The session's
    iterator ends (0.24) or waits on (0.19): the session is not read here."""
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]), close_after=3)))
    await _until_a_call_ended(fake, telemetry)
    call = _call(telemetry)
    assert call.attributes["toolcall.outcome"] == "aborted"
    assert call.attributes["toolcall.abort_reason"] == n.INCOMPLETE
    assert ran == []


async def test_call_labelled_complete_but_cut_runs_unlinked(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    """The server's done item says completed, its arguments stop mid-document: the SDK runs the
    tool on the cut text; the execution is aborted / unterminated and not linked."""
    fake.websocket.enqueue(frames(turn(response_events([CUT])), turn(response_events([], text="Sorry."))))
    await _session(fake, until="tool_end")
    assert ran == [CUT.arguments]
    assert _call(telemetry).attributes["toolcall.abort_reason"] == n.UNTERMINATED
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.links == ()


async def test_strict_refuses_the_cut_call_before_the_body(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    instrument(strict=True)
    fake.websocket.enqueue(frames(turn(response_events([CUT]))))
    # The session records the tool task's failure and raises it from its iterator.
    with pytest.raises(IncompleteToolCallError):
        await _session(fake, until="tool_end")
    assert ran == []
    (execution,) = _executions(telemetry)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert execution.links == ()


async def test_user_interrupt_mid_arguments(instrument: Any, telemetry: Any, fake: Any) -> None:
    """The application interrupts at the first fragment: response.cancel, the server's cancelled
    response.done ends the open call aborted / cancelled."""
    cut = ToolCall(WEATHER.name, WEATHER.arguments, call_id="call_interrupted_1", status="incomplete")
    events = response_events([cut], end="cancelled", reason="client_cancelled")
    fake.websocket.enqueue(frames(turn(events, cancel_after=3)))
    await _session(fake, until="agent_end", on_delta="interrupt")
    assert "response.cancel" in fake.websocket.received_types()
    call = _call(telemetry)
    assert call.attributes["toolcall.abort_reason"] == n.CANCELLED
    assert ran == [] and _executions(telemetry) == []


async def test_session_closed_mid_arguments(instrument: Any, telemetry: Any, fake: Any) -> None:
    # The server waits for a response.cancel that never comes: the session closes first.
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]), cancel_after=3)))
    await _session(fake, until="never", on_delta="close")
    call = _call(telemetry)
    assert call.attributes["toolcall.abort_reason"] == n.CLOSED
    assert ran == []


def test_the_example_under_opentelemetry_instrument() -> None:
    lines, spans = run_example("openai_agents_realtime_agent.py")
    # The interrupted call never reached the tool body.
    assert [line for line in lines if line.startswith("ran ")] == ["ran get_weather('Zürich')"]
    assert "done" in lines
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert {k: v["attributes"]["toolcall.outcome"] for k, v in calls.items()} == {
        "call_whole": "completed",
        "call_interrupted": "aborted",
    }
    assert calls["call_interrupted"]["attributes"]["toolcall.abort_reason"] == "cancelled"
    (execution,) = [s for s in spans if s["name"].startswith("execute_tool ")]
    assert execution["attributes"]["gen_ai.tool.call.id"] == "call_whole"
    linked = [link["context"]["span_id"] for link in execution["links"]]
    assert linked == [calls["call_whole"]["context"]["span_id"]]
