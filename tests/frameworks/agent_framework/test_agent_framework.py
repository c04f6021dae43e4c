"""Microsoft Agent Framework: an ``Agent`` on ``OpenAIChatCompletionClient`` (agent-framework-openai,
the openai SDK) streaming with ``run(..., stream=True)`` against the fake provider. The openai
adapter traces the stream; the agent_framework adapter adds the executions.

Each test runs with the framework's own observability on (its spans to the test's provider: from
1.x's later releases that is its default) and off (1.0.0's default).

Observed (1.0.0 and 1.23.0): on a stream stopped by the token limit inside the arguments, the
framework parses the cut JSON into ``{"raw": ...}``, its argument validation fails and the model
is answered "Error: Argument parsing failed." before its ``execute_tool`` span opens (before
``invoke`` to 1.18, inside it from 1.19). A call truncated after arguments that happen to be whole
JSON runs. On a stream cut inside the arguments, the SDK's error ends the run; nothing runs.
Before 1.3.0 the framework's streaming spans are never current (all of them are roots): its
``chat`` span cannot be seen as the request's inference span, and the package's is made beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import httpx
import openai
import pytest
from agent_framework import Agent, FunctionInvocationContext, function_middleware, observability, tool
from agent_framework.openai import OpenAIChatClient, OpenAIChatCompletionClient
from examples_run import run_example
from framework_spans import PARTIAL, WHOLE, Body, answer, completed_turn, cut_turn, executions
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from packaging.version import Version

from otel_toolcalls.testing import Script
from otel_toolcalls.testing import openai_responses as responses
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

body = Body()
RELEASE = Version(version("agent-framework-core"))
# From 1.3.0 the framework's streaming chat span is current while the stream is read.
STREAM_SPAN_CURRENT = Version("1.3.0") <= RELEASE
FRAMEWORK_SCOPE = "agent_framework"
# The refusal's own words, as the framework hands them to the model in the call's error result.
REFUSAL = "refusing to execute tool call"


@tool
def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


@tool
async def get_forecast(location: str) -> str:
    """Tomorrow's weather for a location."""
    return body.ran(location)


class _TraceTo:
    """``opentelemetry.trace`` as the framework's observability module sees it, with the test's
    provider (it asks the global provider for its tracer at every span)."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    def get_tracer(self, instrumenting_module_name: str, *args: Any, **kwargs: Any) -> Any:
        return self._provider.get_tracer(instrumenting_module_name)

    def __getattr__(self, name: str) -> Any:
        return getattr(trace, name)


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


@pytest.fixture(params=["framework_traced", "framework_untraced"])
def traced(request: Any, telemetry: Any, monkeypatch: Any) -> Iterator[bool]:
    """The framework's observability on (its spans to the test's provider) or off."""
    on = request.param == "framework_traced"
    monkeypatch.setattr(observability.OBSERVABILITY_SETTINGS, "enable_instrumentation", on)
    if on:
        monkeypatch.setattr(observability, "trace", _TraceTo(telemetry.tracer_provider))
    yield on


def _agent(fake: Any, *tools: Any, **kwargs: Any) -> Agent:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake"
    )
    return Agent(client=client, tools=list(tools or [get_weather]), instructions="Answer.", **kwargs)


async def _run(agent: Agent) -> tuple[Any, list[Any]]:
    """The streamed run: its final text and every function result it streamed."""
    stream = agent.run("Weather in Zürich?", stream=True)
    results = [c async for update in stream for c in update.contents if c.type == "function_result"]
    return (await stream.get_final_response()).text, results


def _truncated_after_whole_json() -> list[Any]:
    # The arguments are whole JSON, but the token limit ended the stream: no event said the call completed.
    return [tool_call_script([WHOLE], finish_reason="length"), answer()]


def _completion(calls: list[ToolCall], finish_reason: str, text: str | None = None) -> Script:
    """A chat completion, not streamed."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    body = {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }
    return Script(writes=[json.dumps(body).encode()], content_type="application/json")


def _scope(traced: bool) -> str:
    return FRAMEWORK_SCOPE if traced else "otel_toolcalls"


async def test_completed_call_is_executed_and_linked(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    fake.enqueue(*completed_turn())
    text, _ = await _run(_agent(fake))
    assert text == "Sunny."
    (execution,) = executions(telemetry)  # the framework's span, or the package's: never both
    assert execution.instrumentation_scope.name == _scope(traced)
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    call = telemetry.one("tool_call get_weather")
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    # A sync tool runs in a worker thread (from 1.x's later releases), the execution span current.
    assert body.calls == [("Zürich", execution.context.span_id)]
    # The stream is traced once: one inference span per request, the framework's when it traces
    # and it is current (before 1.3.0 the package's beside the framework's, which it cannot see).
    chats = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    ours = [s for s in chats if s.instrumentation_scope.name == "otel_toolcalls"]
    assert len(chats) == (4 if traced and not STREAM_SPAN_CURRENT else 2)
    assert len(ours) == (0 if traced and STREAM_SPAN_CURRENT else 2)
    assert call.parent.span_id == (ours or chats)[0].context.span_id


async def test_async_tool_and_function_middleware(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    seen: list[Any] = []

    @function_middleware
    async def record(context: FunctionInvocationContext, call_next: Any) -> None:
        seen.append(context.function.name)
        await call_next()

    forecast = ToolCall(name="get_forecast", id="call_forecast_1", arguments='{"location": "Basel"}')
    fake.enqueue(tool_call_script([forecast]), answer())
    await _run(_agent(fake, get_forecast, middleware=[record]))
    assert seen == ["get_forecast"]
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == _scope(traced)
    assert execution.attributes["toolcall.outcome"] == "completed"
    call = telemetry.one("tool_call get_forecast")
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Basel", execution.context.span_id)]


async def test_parallel_calls_each_linked_to_its_own(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    # Two calls in one message: the loop runs them concurrently, each in its own task.
    first = ToolCall(name="get_weather", id="call_zrh", arguments='{"location": "Zürich"}')
    second = ToolCall(name="get_weather", id="call_bsl", arguments='{"location": "Basel"}')
    fake.enqueue(tool_call_script([first, second]), answer())
    await _run(_agent(fake))
    executed = {s.attributes["gen_ai.tool.call.id"]: s for s in executions(telemetry)}
    assert sorted(executed) == ["call_bsl", "call_zrh"] and len(executions(telemetry)) == 2
    calls = {s.attributes["toolcall.call.id"]: s for s in telemetry.tool_spans()}
    for call, location in ((first, "Zürich"), (second, "Basel")):
        execution = executed[call.id]
        assert execution.attributes["toolcall.outcome"] == "completed"
        assert [link.context.span_id for link in execution.links] == [calls[call.id].context.span_id]
        assert (location, execution.context.span_id) in body.calls
    assert len(body.calls) == 2


async def test_responses_client_stream_is_traced_once_and_linked(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    # OpenAIChatClient streams the Responses API through the openai SDK (its responses adapter).
    call = responses.ToolCall(name="get_weather", call_id="call_resp_1", arguments='{"location": "Zürich"}')
    fake.enqueue(responses.tool_call_script([call]), responses.tool_call_script([], text="Sunny."))
    client = OpenAIChatClient(model="gpt-4.1-mini", base_url=fake.base_url + "/v1", api_key="sk-fake")
    await _run(Agent(client=client, tools=[get_weather], instructions="Answer."))
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == _scope(traced)
    assert execution.attributes["toolcall.outcome"] == "completed"
    (tool_call,) = telemetry.tool_spans()
    assert [link.context.span_id for link in execution.links] == [tool_call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]


async def test_truncated_whole_json_call_runs_unlinked(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    fake.enqueue(*_truncated_after_whole_json())
    await _run(_agent(fake))
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich", execution.context.span_id)]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


async def test_strict_refuses_before_the_body_as_an_error_result(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    instrument(strict=True)
    fake.enqueue(*_truncated_after_whole_json())
    text, results = await _run(_agent(fake))
    assert body.calls == []
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == _scope(traced)
    assert execution.status.status_code is StatusCode.ERROR
    assert "IncompleteToolCallError" in execution.attributes["error.type"]
    assert execution.links == ()
    # The framework's tool-error path: the model is answered with an error result, the run goes on.
    (result,) = results
    assert result.call_id == WHOLE.id and REFUSAL in result.exception
    assert text == "Sunny."


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
async def test_a_call_the_framework_refuses_has_no_execution_span(
    instrument: Any, telemetry: Any, fake: Any, traced: bool, strict: bool
) -> None:
    # Cut by the token limit inside the arguments: the framework itself rejects the cut JSON
    # ("Argument parsing failed") and never runs the body, in either setting, strict or not. The
    # model then makes the call again, whole: that one runs, linked.
    instrument(strict=strict)
    again = ToolCall(name="get_weather", id="call_weather_2", arguments='{"location": "Zürich"}')
    fake.enqueue(tool_call_script([PARTIAL], finish_reason="length"), tool_call_script([again]), answer())
    text, results = await _run(_agent(fake))
    assert text == "Sunny."
    refused, ran = results
    assert refused.call_id == PARTIAL.id and "Argument parsing failed" in str(refused.result)
    assert REFUSAL not in (refused.exception or "")  # the framework's refusal, not the package's
    # One execution span, the completed call's: none for the call whose body never ran.
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == _scope(traced)
    assert execution.attributes["gen_ai.tool.call.id"] == again.id == ran.call_id
    assert execution.attributes["toolcall.outcome"] == "completed"
    calls = {s.attributes["toolcall.call.id"]: s for s in telemetry.tool_spans()}
    assert calls[PARTIAL.id].attributes["toolcall.outcome"] == "aborted"
    assert [link.context.span_id for link in execution.links] == [calls[again.id].context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]
    # The framework sent the broken call back in the history: flagged on the next request.
    chats = [s for s in telemetry.spans() if s.name.startswith("chat ") and "toolcall.count" in s.attributes]
    assert [s.attributes.get("toolcall.replayed_aborted", 0) for s in chats] == [0, 1, 1]


async def test_cut_stream_ends_the_run_and_executes_nothing(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    fake.enqueue(*cut_turn())
    with pytest.raises(Exception) as raised:
        await _run(_agent(fake))
    # The SDK's error, as the framework passes it on (wrapped in its own service error or not).
    chain = [raised.value, raised.value.__cause__, raised.value.__context__]
    assert any(isinstance(e, (httpx.HTTPError, openai.APIError)) for e in chain), chain
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


async def test_non_streamed_run_is_unknown_and_not_refused(
    instrument: Any, telemetry: Any, fake: Any, traced: bool
) -> None:
    instrument(strict=True)
    fake.enqueue(_completion([WHOLE], "tool_calls"), _completion([], "stop", text="Sunny."))
    await _agent(fake).run("Weather in Zürich?")
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich", execution.context.span_id)]
    assert execution.attributes["toolcall.outcome"] == "unknown"
    assert execution.links == ()


async def test_a_direct_invoke_without_an_id_gets_no_span_of_the_package(
    instrument: Any, telemetry: Any, traced: bool
) -> None:
    await get_weather.invoke(arguments={"location": "Bern"})
    assert body.locations == ["Bern"]
    # The framework's own span (id "unknown") is left as is; without it there is none.
    spans = executions(telemetry)
    assert [s.instrumentation_scope.name for s in spans] == ([FRAMEWORK_SCOPE] if traced else [])
    assert all("toolcall.outcome" not in s.attributes for s in spans)



@pytest.mark.parametrize("observability", ["true", "false"])
def test_the_example_under_opentelemetry_instrument(observability: str) -> None:
    lines, spans = run_example("agent_framework_agent.py", ENABLE_INSTRUMENTATION=observability)
    # The refused call never reached the tool body; the framework answered it with an error result.
    assert [line for line in lines if line.startswith(("ran ", "result ", "answer"))] == [
        "result call_cut: error",
        "ran get_weather('Zürich')",
        "result call_whole: ok",
        "answer: Sunny in Zürich.",
    ]
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert {k: v["attributes"]["toolcall.outcome"] for k, v in calls.items()} == {
        "call_cut": "aborted",
        "call_whole": "completed",
    }
    runs = {s["attributes"]["gen_ai.tool.call.id"]: s for s in spans if s["name"].startswith("execute_tool ")}
    assert sorted(runs) == ["call_cut", "call_whole"]  # one execution span per call
    assert runs["call_cut"]["status"]["status_code"] == "ERROR" and runs["call_cut"]["links"] == []
    (link,) = runs["call_whole"]["links"]
    assert link["context"]["span_id"] == calls["call_whole"]["context"]["span_id"]
    chats = [s for s in spans if s["name"].startswith("chat ")]
    # One inference span per request (the framework's when it traces; before 1.3.0 two, see above).
    assert len(chats) == (6 if observability == "true" and not STREAM_SPAN_CURRENT else 3)
    # The framework's own run span says whose the chat and execution spans are.
    agent_runs = [s for s in spans if s["name"].startswith("invoke_agent ")]
    assert len(agent_runs) == (1 if observability == "true" else 0)
    if agent_runs and STREAM_SPAN_CURRENT:
        (root,) = agent_runs
        assert {s["parent_id"] for s in [*chats, *runs.values()]} == {root["context"]["span_id"]}
