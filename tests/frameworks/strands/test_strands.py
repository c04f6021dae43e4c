"""Strands Agents: an ``Agent`` on Strands' OpenAI model (always streaming) against the fake provider.

Observed (strands-agents 1.62): on a stream stopped by the token limit inside the arguments,
Strands runs nothing: it replaces the partial ``toolUse`` in the history with a text message and
raises its own ``MaxTokensReachedException``. On a stream cut inside the arguments, the SDK's
``httpx.RemoteProtocolError`` ends the run, nothing in the history. An aborted call reaches a tool
only from a history that kept it: Strands runs the ``toolUse`` blocks of a history's last
assistant message without asking the model (a restored session, or messages another loop kept).

Before 1.62 (observed on 1.19.0 and 1.61.1) a refusal replaces the whole of Strands' tool stream
(its before/after-tool hooks do not run for the call); on 1.19.0 Strands' result keeps no exception
(a failed tool's error type is ``tool_error``) and Strands ends its own span OK whatever the result.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
from typing import Any

import httpx
import openai
import pytest
from framework_spans import PARTIAL, WHOLE, Body, answer, completed_turn, cut_turn, executions, truncated_turn
from opentelemetry.trace import StatusCode
from packaging.version import Version
from strands import Agent, tool
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent
from strands.models.openai import OpenAIModel
from strands.telemetry.tracer import get_tracer
from strands.types._events import ToolResultEvent
from strands.types.exceptions import MaxTokensReachedException

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

STRANDS = Version(importlib.metadata.version("strands-agents"))
# What this release of Strands does with a failed tool's result and a refusal (module docstring).
KEEPS_EXCEPTION = "exception" in inspect.signature(ToolResultEvent).parameters
HOOKS_SEE_REFUSAL = Version("1.62.0") <= STRANDS

body = Body()


@tool
def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


@tool
def broken_weather(location: str) -> str:
    """Current weather for a location."""
    body.ran(location)
    raise ValueError("weather service down")


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


def _trace_strands(telemetry: Any, monkeypatch: Any) -> None:
    """Strands' own spans go to the test's provider (Strands reads the global one)."""
    monkeypatch.setattr(
        get_tracer(), "tracer", telemetry.tracer_provider.get_tracer("strands.telemetry.tracer")
    )


@pytest.fixture
def strands_traced(telemetry: Any, monkeypatch: Any) -> None:
    _trace_strands(telemetry, monkeypatch)


def _agent(fake: Any, *tools: Any, messages: list[Any] | None = None) -> Agent:
    model = OpenAIModel(
        client_args={"base_url": fake.base_url + "/v1", "api_key": "sk-fake", "max_retries": 0},
        model_id="gpt-4o-mini",
    )
    return Agent(model=model, tools=list(tools) or [get_weather], messages=messages, callback_handler=None)


def _history_keeping(call_id: str) -> list[Any]:
    # A history whose last turn is the aborted call, as a loop that kept it would restore it.
    return [
        {"role": "user", "content": [{"text": "Weather in Zürich?"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": call_id, "name": "get_weather",
                                                        "input": {"location": "Zürich, Sch"}}}]},
    ]  # fmt: skip


def _abort_call_by_cut(fake: Any) -> None:
    """The streamed call ``PARTIAL.id`` is cut inside its arguments (the package records it aborted)."""
    fake.enqueue(*cut_turn()[:1])
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        _agent(fake)("Weather in Zürich?")
    fake.reset()


def test_completed_call_annotates_strands_span(
    instrument: Any, telemetry: Any, fake: Any, strands_traced: None
) -> None:
    fake.enqueue(*completed_turn())
    _agent(fake)("Weather in Zürich?")
    (execution,) = executions(telemetry)  # Strands' span only: none of the package's beside it
    call = telemetry.one("tool_call get_weather")
    assert execution.instrumentation_scope.name == "strands.telemetry.tracer"
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert execution.links[0].attributes["gen_ai.attribution.link_type"] == "CAUSED_BY_GENERATION"
    assert execution.status.status_code is StatusCode.OK  # Strands ends its span, not the package
    assert body.calls == [("Zürich", execution.context.span_id)]


def test_strands_chat_span_is_the_inference_span(
    instrument: Any, telemetry: Any, fake: Any, strands_traced: None
) -> None:
    # Strands' model span (INTERNAL, gen_ai.operation.name chat) is current while the SDK streams:
    # it is the request's inference span, and the package adds none beside it.
    fake.enqueue(*completed_turn())
    _agent(fake)("Weather in Zürich?")
    inference = [s for s in telemetry.spans() if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert {s.instrumentation_scope.name for s in inference} == {"strands.telemetry.tracer"}
    call = telemetry.one("tool_call get_weather")
    assert call.parent.span_id in {s.context.span_id for s in inference}
    assert call.attributes["toolcall.outcome"] == "completed"


def test_without_strands_tracing_the_package_makes_the_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*completed_turn())
    _agent(fake)("Weather in Zürich?")
    (execution,) = executions(telemetry)
    call = telemetry.one("tool_call get_weather")
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]


def test_tool_error_is_the_package_span_error(instrument: Any, telemetry: Any, fake: Any) -> None:
    # Strands turns the exception into an error result for the model; the span still says it failed.
    fake.enqueue(tool_call_script([ToolCall("broken_weather", WHOLE.arguments, WHOLE.id)]), answer())
    _agent(fake, broken_weather)("Weather in Zürich?")
    (execution,) = executions(telemetry)
    assert execution.status.status_code is StatusCode.ERROR
    assert execution.attributes["error.type"] == ("ValueError" if KEEPS_EXCEPTION else "tool_error")


@pytest.mark.parametrize("strict", [False, True])
def test_truncated_stream_raises_max_tokens_and_runs_nothing(
    instrument: Any, telemetry: Any, fake: Any, strands_traced: None, strict: bool
) -> None:
    instrument(strict=strict)
    fake.enqueue(*truncated_turn())
    agent = _agent(fake)
    with pytest.raises(MaxTokensReachedException):
        agent("Weather in Zürich?")
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}
    assert not any("toolUse" in block for block in agent.messages[-1]["content"])  # replaced by text
    assert len(fake.requests) == 1


def test_cut_stream_raises_and_runs_nothing(
    instrument: Any, telemetry: Any, fake: Any, strands_traced: None
) -> None:
    fake.enqueue(*cut_turn())
    agent = _agent(fake)
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        agent("Weather in Zürich?")
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}
    assert agent.messages[-1]["role"] == "user"


def test_aborted_call_from_history_runs_unlinked(
    instrument: Any, telemetry: Any, fake: Any, strands_traced: None
) -> None:
    _abort_call_by_cut(fake)
    fake.enqueue(answer())
    _agent(fake, messages=_history_keeping(PARTIAL.id))()
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich, Sch", execution.context.span_id)]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "stream_error"
    assert execution.links == ()


@pytest.mark.parametrize("traced", [True, False])
def test_strict_refuses_the_aborted_call_through_strands_error_result(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: Any, traced: bool
) -> None:
    if traced:
        _trace_strands(telemetry, monkeypatch)
    instrument(strict=True)
    _abort_call_by_cut(fake)
    fake.enqueue(answer())
    agent = _agent(fake, messages=_history_keeping(PARTIAL.id))
    seen: list[Any] = []
    agent.hooks.add_callback(AfterToolCallEvent, lambda event: seen.append(event.exception))
    agent()
    assert body.calls == []
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == (
        "strands.telemetry.tracer" if traced else "otel_toolcalls"
    )
    ends_ok = traced and not KEEPS_EXCEPTION  # Strands' span, ended OK by Strands itself
    assert execution.status.status_code is (StatusCode.OK if ends_ok else StatusCode.ERROR)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.links == ()
    if HOOKS_SEE_REFUSAL:
        (refused,) = seen
        assert isinstance(refused, IncompleteToolCallError) and refused.call_id == PARTIAL.id
    else:
        assert seen == []
    # The model was told, as for any failed tool: an error result for that call.
    result = agent.messages[2]["content"][0]["toolResult"]
    assert result["toolUseId"] == PARTIAL.id and result["status"] == "error"


@pytest.mark.skipif(not hasattr(BeforeToolCallEvent, "interrupt"), reason="no interrupts in this Strands")
def test_strict_refuses_a_resumed_aborted_call_before_the_body(
    instrument: Any, telemetry: Any, fake: Any, strands_traced: None
) -> None:
    # A hook asks for approval of each call (Strands' interrupts); the run stops, and the user's
    # answer resumes it. Wherever the refusal comes relative to the hook (before it, before 1.62),
    # the resumed aborted call never reaches its body.
    instrument(strict=True)
    _abort_call_by_cut(fake)
    fake.enqueue(answer())
    agent = _agent(fake, messages=_history_keeping(PARTIAL.id))
    agent.hooks.add_callback(BeforeToolCallEvent, lambda event: event.interrupt("approval", reason="run?"))
    result = agent()
    if result.stop_reason == "interrupt":
        answers = [{"interruptResponse": {"interruptId": i.id, "response": "yes"}} for i in result.interrupts]
        result = agent(answers)
    assert result.stop_reason == "end_turn"
    assert body.calls == []
    refused = [s for s in executions(telemetry) if "error.type" in s.attributes]
    assert [s.attributes["error.type"] for s in refused] == ["otel_toolcalls.IncompleteToolCallError"]
    assert refused[0].attributes["gen_ai.tool.call.id"] == PARTIAL.id
    (result_block,) = [b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b]
    assert result_block["toolUseId"] == PARTIAL.id and result_block["status"] == "error"


def test_direct_tool_call_gets_no_span(
    instrument: Any, telemetry: Any, fake: Any, strands_traced: None
) -> None:
    # agent.tool.x(): Strands makes up the id and opens no span; not a model's call. The same
    # agent's model-driven call, between two direct ones, gets its span: the adapter is at work.
    fake.enqueue(*completed_turn())
    agent = _agent(fake)
    agent.tool.get_weather(location="Bern")
    agent("Weather in Zürich?")
    agent.tool.get_weather(location="Basel")
    (execution,) = executions(telemetry)
    call = telemetry.one("tool_call get_weather")
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.locations == ["Bern", "Zürich", "Basel"]
    assert body.calls[1][1] == execution.context.span_id


def test_reinstrumented_executor_keeps_its_calls(instrument: Any, telemetry: Any, fake: Any) -> None:
    # Re-instrumenting uninstruments first. ToolExecutor._stream is a staticmethod: Agent calls it
    # on the class, BidiAgent's loop (before 1.62) on the agent's executor; both as before.
    instrument()
    fake.enqueue(*completed_turn())
    agent = _agent(fake)
    agent("Weather in Zürich?")
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    call = telemetry.one("tool_call get_weather")
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    results: list[Any] = []
    tool_use = {"toolUseId": "tu_loop", "name": "get_weather", "input": {"location": "Bern"}}

    async def as_the_bidi_loop() -> None:
        stream = agent.tool_executor._stream(agent, tool_use, results, {}, structured_output_context=None)
        async for _ in stream:
            pass

    asyncio.run(as_the_bidi_loop())
    assert [result["status"] for result in results] == ["success"]
    assert body.locations == ["Zürich", "Bern"]
