"""OpenAI Agents SDK: Runner.run_streamed on OpenAIChatCompletionsModel against the fake provider."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from agents.exceptions import UserError
from openai import AsyncOpenAI

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing.openai_chat import WEATHER, events_for, script_for, tool_call_script

ran: list[str] = []


@function_tool
def get_weather(location: str, unit: str, days: int, note: str) -> str:
    """Weather for a place."""
    ran.append(location)
    return "sunny"


@pytest.fixture(autouse=True)
def _setup() -> None:
    set_tracing_disabled(True)  # the SDK's own (non-OpenTelemetry) tracing would export to OpenAI
    ran.clear()


async def _run(fake: Any, finish_reason: str) -> Any:
    fake.enqueue(
        tool_call_script([WEATHER], finish_reason=finish_reason),
        script_for(events_for([], text="Sunny.", finish_reason="stop")),
    )
    client = AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    agent = Agent(
        name="weather", model=OpenAIChatCompletionsModel("gpt-4o-mini", client), tools=[get_weather]
    )
    result = Runner.run_streamed(agent, "weather in Zürich?")
    async for _ in result.stream_events():
        pass
    return result


def _executions(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("execute_tool ")]


async def test_completed_call_is_linked(instrument: Any, telemetry: Any, fake: Any) -> None:
    result = await _run(fake, "tool_calls")
    assert result.final_output == "Sunny."
    assert ran == ["Zürich, Schweiz"]
    call = telemetry.one("tool_call get_weather")
    (execution,) = _executions(telemetry)
    assert execution.attributes["gen_ai.tool.call.id"] == WEATHER.id
    assert execution.attributes["gen_ai.operation.name"] == "execute_tool"
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


async def test_execution_span_goes_to_the_instrumentors_providers(
    instrument: Any, telemetry: Any, fake: Any, elsewhere: Any
) -> None:
    await _run(fake, "tool_calls")
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert elsewhere.get_finished_spans() == ()


async def test_truncated_call_runs_unlinked_and_its_replay_is_flagged(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    await _run(fake, "length")
    assert ran == ["Zürich, Schweiz"]
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()
    # The runner then sends the aborted call and its output back to the model.
    second = [s for s in telemetry.spans() if s.name.startswith("chat ")][-1]
    assert second.attributes["toolcall.replayed_aborted"] == 1
    assert [e.attributes["gen_ai.tool.call.id"] for e in second.events] == [WEATHER.id]


async def test_strict_refuses_the_truncated_call(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(strict=True)
    with pytest.raises(UserError) as raised:
        await _run(fake, "length")
    assert isinstance(raised.value.__cause__, IncompleteToolCallError)
    assert ran == []
    (execution,) = _executions(telemetry)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert len(fake.requests) == 1
