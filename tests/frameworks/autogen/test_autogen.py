"""AutoGen AgentChat: an ``AssistantAgent`` on autogen-ext's ``OpenAIChatCompletionClient`` with
``model_client_stream=True`` against the fake provider.

Observed (autogen-agentchat / autogen-ext 0.7.5): on a stream stopped by the token limit inside the
arguments, AutoGen's ``json.loads`` of the arguments fails, the tool does not run, and the model is
sent an error result for the call, the broken call kept in its history. A stream truncated after
arguments that happen to be whole JSON runs the tool. On a stream cut inside the arguments, the
SDK's ``httpx.RemoteProtocolError`` ends ``run_stream`` and nothing is executed.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent
from autogen_core._telemetry import _genai
from autogen_ext.models.openai import OpenAIChatCompletionClient
from framework_spans import WHOLE, Body, answer, completed_turn, cut_turn, executions, truncated_turn
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from otel_toolcalls.testing.openai_chat import tool_call_script

body = Body()
AUTOGEN_SCOPE = "autogen-core"


async def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


class _TraceTo:
    """``opentelemetry.trace`` as AutoGen's telemetry module sees it, with the test's provider."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    def get_tracer(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._provider.get_tracer(name)

    def __getattr__(self, name: str) -> Any:
        return getattr(trace, name)


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


def _trace_autogen(telemetry: Any, monkeypatch: Any) -> None:
    # AutoGen asks the global provider for its tracer at every span.
    monkeypatch.setattr(_genai, "trace", _TraceTo(telemetry.tracer_provider))


@pytest.fixture
def autogen_traced(telemetry: Any, monkeypatch: Any) -> None:
    _trace_autogen(telemetry, monkeypatch)


def _agent(fake: Any) -> AssistantAgent:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0
    )
    return AssistantAgent(
        "weather",
        model_client=client,
        tools=[get_weather],
        model_client_stream=True,
        reflect_on_tool_use=True,
    )


async def _run(agent: AssistantAgent) -> list[Any]:
    return [event async for event in agent.run_stream(task="Weather in Zürich?")]


def _results(events: list[Any]) -> list[Any]:
    return [result for e in events if isinstance(e, ToolCallExecutionEvent) for result in e.content]


def _truncated_after_whole_json() -> list[Any]:
    # The arguments are whole JSON, but the token limit ended the stream: no event said the call completed.
    return [tool_call_script([WHOLE], finish_reason="length"), answer()]


async def test_completed_call_annotates_autogen_span(
    instrument: Any, telemetry: Any, fake: Any, autogen_traced: None
) -> None:
    fake.enqueue(*completed_turn())
    await _run(_agent(fake))
    (execution,) = executions(telemetry)  # AutoGen's span only: none of the package's beside it
    call = telemetry.one("tool_call get_weather")
    assert execution.instrumentation_scope.name == AUTOGEN_SCOPE
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]


async def test_without_autogen_tracing_the_package_makes_the_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*completed_turn())
    await _run(_agent(fake))
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert len(execution.links) == 1
    assert body.calls == [("Zürich", execution.context.span_id)]


async def test_truncated_mid_arguments_is_an_error_result_and_runs_nothing(
    instrument: Any, telemetry: Any, fake: Any, autogen_traced: None
) -> None:
    fake.enqueue(*truncated_turn())
    events = await _run(_agent(fake))
    (result,) = _results(events)
    assert result.is_error and result.call_id == WHOLE.id
    assert body.calls == [] and executions(telemetry) == []
    # AutoGen kept the broken call in the history it sent next: flagged as replayed.
    (_, second) = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert second.attributes["toolcall.replayed_aborted"] == 1


async def test_truncated_whole_json_call_runs_unlinked(
    instrument: Any, telemetry: Any, fake: Any, autogen_traced: None
) -> None:
    fake.enqueue(*_truncated_after_whole_json())
    await _run(_agent(fake))
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich", execution.context.span_id)]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


@pytest.mark.parametrize("traced", [True, False])
async def test_strict_refuses_inside_autogen_span_as_an_error_result(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: Any, traced: bool
) -> None:
    if traced:
        _trace_autogen(telemetry, monkeypatch)
    instrument(strict=True)
    fake.enqueue(*_truncated_after_whole_json())
    events = await _run(_agent(fake))
    assert body.calls == []
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == (AUTOGEN_SCOPE if traced else "otel_toolcalls")
    assert execution.status.status_code is StatusCode.ERROR
    assert "IncompleteToolCallError" in execution.attributes["error.type"]
    assert execution.links == ()
    # AutoGen's workbench answered the model with an error result carrying the refusal.
    (result,) = _results(events)
    assert result.is_error and "refusing to execute tool call" in result.content


async def test_cut_stream_ends_the_run_and_executes_nothing(
    instrument: Any, telemetry: Any, fake: Any, autogen_traced: None
) -> None:
    fake.enqueue(*cut_turn())
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        await _run(_agent(fake))
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}
