"""CrewAI: a one-agent ``Crew`` on CrewAI's native OpenAI LLM (``stream=True``, function calling)
against the fake provider. CrewAI gets a venv of its own (tests/frameworks/requirements-crewai.txt).

Observed (crewai 1.15): on a stream stopped by the token limit inside the arguments, CrewAI's JSON
parse of the arguments fails, the tool does not run, and the model is sent an error result for the
call, the broken call kept in its history. A stream truncated after arguments that happen to be
whole JSON runs the tool. On a stream cut inside the arguments, CrewAI sends the request again
(``max_retry_limit``, 2 by default: three requests), then raises the SDK's
``httpx.RemoteProtocolError`` from ``kickoff()``; nothing runs.
"""

from __future__ import annotations

import importlib
import os

# CrewAI's own telemetry (to its service) and tracing stay off; the fake provider needs no key.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
# Its first-run trace prompt (a 20 s wait for an answer on stdin, on the oldest release) is skipped
# in a test environment.
os.environ.setdefault("CREWAI_TESTING", "true")

from typing import Any

import httpx
import openai
import pytest
from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool
from framework_spans import WHOLE, Body, answer, completed_turn, cut_turn, executions, truncated_turn
from opentelemetry.trace import StatusCode

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing.openai_chat import tool_call_script

body = Body()


@tool("get_weather")
def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


def _kickoff(fake: Any, **agent: Any) -> Any:
    llm = LLM(model="openai/gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", stream=True)
    crew_agent = Agent(
        role="forecaster", goal="weather", backstory="-", llm=llm, tools=[get_weather], **agent
    )
    task = Task(description="Weather in Zürich?", expected_output="the weather", agent=crew_agent)
    return Crew(agents=[crew_agent], tasks=[task]).kickoff()


def _executors() -> dict[str, Any]:
    """The executors this release has: the newest's one, or (1.10.1 to 1.15.28) the experimental
    AgentExecutor beside CrewAgentExecutor, either of which an agent's ``executor_class`` picks."""
    found: dict[str, Any] = {}
    for module, name in (
        ("crewai.agents.agent_executor", "AgentExecutor"),
        ("crewai.experimental.agent_executor", "AgentExecutor"),
        ("crewai.agents.crew_agent_executor", "CrewAgentExecutor"),
    ):
        try:
            executor = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        if executor not in found.values():
            found[f"{module}.{name}"] = executor
    return found


EXECUTORS = _executors()
# The default before 1.14.5: its retry of a task keeps the refused call in the history.
CREW_AGENT_EXECUTOR_DEFAULT = Agent.model_fields["executor_class"].default.__name__ == "CrewAgentExecutor"


def _truncated_after_whole_json() -> list[Any]:
    # The arguments are whole JSON, but the token limit ended the stream: no event said the call completed.
    return [tool_call_script([WHOLE], finish_reason="length"), answer()]


def test_completed_call_runs_inside_a_linked_execution_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*completed_turn())
    _kickoff(fake)
    (execution,) = executions(telemetry)
    call = telemetry.one("tool_call get_weather")
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]


@pytest.mark.parametrize("executor", list(EXECUTORS.values()), ids=list(EXECUTORS))
def test_every_executor_of_the_release_runs_the_call_in_a_linked_span(
    instrument: Any, telemetry: Any, fake: Any, executor: Any
) -> None:
    fake.enqueue(*completed_turn())
    _kickoff(fake, executor_class=executor)
    (execution,) = executions(telemetry)
    call = telemetry.one("tool_call get_weather")
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]


def test_truncated_mid_arguments_is_an_error_result_and_runs_nothing(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*truncated_turn())
    _kickoff(fake)
    assert body.calls == [] and executions(telemetry) == []  # never ran: no execution span
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}
    (_, second) = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert second.attributes["toolcall.replayed_aborted"] == 1  # the broken call went back in the history


def test_truncated_whole_json_call_runs_unlinked(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(*_truncated_after_whole_json())
    _kickoff(fake)
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich", execution.context.span_id)]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


def test_strict_refuses_the_truncated_call_before_the_body(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    instrument(strict=True)
    fake.enqueue(*_truncated_after_whole_json())
    with pytest.raises(IncompleteToolCallError) as raised:
        _kickoff(fake, max_retry_limit=0)
    assert raised.value.call_id == WHOLE.id and raised.value.reason == "truncated"
    assert body.calls == []
    assert len(fake.requests) == 1
    (execution,) = executions(telemetry)
    assert execution.status.status_code is StatusCode.ERROR
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert execution.links == ()


def test_cut_stream_is_retried_then_raised_and_runs_nothing(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*(cut_turn()[:1] * 3))
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        _kickoff(fake)
    assert len(fake.requests) == 3  # CrewAI's max_retry_limit (2) retries of the whole request
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 3}


def test_strict_refusal_makes_crewai_retry_the_task(instrument: Any, telemetry: Any, fake: Any) -> None:
    # With its default retries, CrewAI answers the refusal by running the task again from its start.
    instrument(strict=True)
    fake.enqueue(*_truncated_after_whole_json())
    result = _kickoff(fake)
    assert str(result) == "Sunny."
    assert body.calls == []
    assert len(fake.requests) == 2
    retried = fake.requests[1].json()["messages"]
    # The broken turn is not in the retry, but in CrewAgentExecutor's (it keeps its history).
    assert any(m.get("tool_calls") for m in retried) is CREW_AGENT_EXECUTOR_DEFAULT
    (execution,) = executions(telemetry)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
