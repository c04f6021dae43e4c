"""pydantic-ai: an agent on the OpenAI chat model (streamed requests) against the fake provider,
with and without pydantic-ai's own OpenTelemetry instrumentation."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing.openai_chat import WEATHER, events_for, script_for, tool_call_script

ran: list[str] = []


def _agent(fake: Any, telemetry: Any, instrumented: bool) -> Any:
    provider = OpenAIProvider(base_url=fake.base_url + "/v1", api_key="sk-fake")
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider))
    if instrumented:
        agent.instrument = InstrumentationSettings(tracer_provider=telemetry.tracer_provider)

    @agent.tool_plain
    def get_weather(location: str, unit: str = "celsius", days: int = 1, note: str = "") -> str:
        ran.append(location)
        return "sunny"

    return agent


async def _run(agent: Any) -> None:
    # Streamed model requests: the run is driven through its event stream.
    # pydantic-ai 2.x hands back an async context manager, 1.x the async generator itself.
    run = agent.run_stream_events("weather in Zürich?")
    if not hasattr(run, "__aenter__"):
        async for _ in run:
            pass
        return
    async with run as events:
        async for _ in events:
            pass


def _queue(fake: Any, finish_reason: str) -> None:
    fake.enqueue(
        tool_call_script([WEATHER], finish_reason=finish_reason),
        script_for(events_for([], text="Sunny.", finish_reason="stop")),
    )


def _executions(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.attributes.get("gen_ai.operation.name") == "execute_tool"]


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


async def test_not_instrumented_gets_our_execution_span(instrument: Any, telemetry: Any, fake: Any) -> None:
    _queue(fake, "tool_calls")
    await _run(_agent(fake, telemetry, instrumented=False))
    assert ran == ["Zürich, Schweiz"]
    call = telemetry.one("tool_call get_weather")
    (execution,) = _executions(telemetry)
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.name == "execute_tool get_weather"
    assert execution.attributes["gen_ai.tool.call.id"] == WEATHER.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]


async def test_execution_span_goes_to_the_instrumentors_providers(
    instrument: Any, telemetry: Any, fake: Any, elsewhere: Any
) -> None:
    _queue(fake, "tool_calls")
    await _run(_agent(fake, telemetry, instrumented=False))
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert elsewhere.get_finished_spans() == ()


async def test_instrumented_agent_span_is_annotated_not_duplicated(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    _queue(fake, "tool_calls")
    await _run(_agent(fake, telemetry, instrumented=True))
    call = telemetry.one("tool_call get_weather")
    (execution,) = _executions(telemetry)
    assert execution.instrumentation_scope.name != "otel_toolcalls"  # pydantic-ai's own span
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert execution.links[0].context.span_id == call.context.span_id
    assert execution.links[0].attributes["gen_ai.attribution.link_type"] == "CAUSED_BY_GENERATION"
    # pydantic-ai's request spans are the inference spans: none of ours beside them.
    chats = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert len(chats) == 2
    assert all(s.instrumentation_scope.name != "otel_toolcalls" for s in chats)
    assert call.parent is not None and call.parent.span_id == chats[0].context.span_id


@pytest.mark.parametrize("instrumented", [False, True])
async def test_truncated_call_runs_unlinked(
    instrument: Any, telemetry: Any, fake: Any, instrumented: bool
) -> None:
    # The arguments happen to be whole JSON, but the token limit ended the stream: no event says the
    # call completed, and pydantic-ai runs it.
    _queue(fake, "length")
    await _run(_agent(fake, telemetry, instrumented))
    assert ran == ["Zürich, Schweiz"]
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


@pytest.mark.parametrize("instrumented", [False, True])
async def test_strict_refuses_the_truncated_call(
    instrument: Any, telemetry: Any, fake: Any, instrumented: bool
) -> None:
    instrument(strict=True)
    _queue(fake, "length")
    with pytest.raises(IncompleteToolCallError):
        await _run(_agent(fake, telemetry, instrumented))
    assert ran == []
    (execution,) = _executions(telemetry)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert execution.links == ()
