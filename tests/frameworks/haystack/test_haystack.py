"""Haystack: the real ``Agent`` (chat generator + tools) with a ``streaming_callback``, on
``OpenAIChatGenerator`` (the openai SDK) against the fake provider. The openai adapter traces the
stream; the haystack adapter adds the execution spans (3.x: annotates Haystack's own tool span
when Haystack's tracer is OpenTelemetry's).

Observed (2.21.0 and 3.4.1): a call whose arguments are not JSON (the token limit inside them)
is dropped by the generator ("malformed JSON ... will be skipped"): nothing runs. A call cut by the
token limit whose arguments happen to parse is run, unless strict mode refuses it.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from examples_run import run_example

os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
os.environ["HAYSTACK_AUTO_TRACE_ENABLED"] = "false"  # the tests choose Haystack's tracer

from framework_spans import WHOLE, Body, answer, completed_turn, cut_turn, executions, truncated_turn
from haystack import tracing
from haystack.components.agents import Agent
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.tools import Tool
from haystack.tools.errors import ToolInvocationError
from haystack.utils import Secret
from opentelemetry.trace import StatusCode

from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

HAYSTACK_3 = int(__import__("haystack.version").version.__version__.split(".")[0]) >= 3
body = Body()
PARAMETERS = {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}
# Cut by the token limit, its arguments whole JSON by chance: Haystack runs it.
LIMITED = ToolCall(name="get_weather", id="call_limited", arguments='{"location": "Zürich"}')


def get_weather(location: str) -> str:
    return body.ran(location)


async def get_weather_async(location: str) -> str:
    return body.ran(location)


WEATHER = Tool(name="get_weather", description="Weather.", parameters=PARAMETERS, function=get_weather)


@pytest.fixture(autouse=True)
def _clear() -> Any:
    body.calls.clear()
    yield
    tracing.disable_tracing()


def _agent(fake: Any, tools: list[Tool] | None = None, **options: Any) -> Agent:
    generator = OpenAIChatGenerator(
        api_key=Secret.from_token("sk-fake"),
        model="gpt-4o-mini",
        api_base_url=fake.base_url + "/v1",
        max_retries=0,
    )
    agent = Agent(chat_generator=generator, tools=tools or [WEATHER], **options)
    if hasattr(agent, "warm_up"):
        agent.warm_up()
    return agent


CHUNKS: list[Any] = []


def on_chunk(chunk: Any) -> None:
    # A function of a module: Haystack 2.x serializes the callback by its import path.
    CHUNKS.append(chunk)


def _run(agent: Agent) -> dict[str, Any]:
    CHUNKS.clear()
    result = agent.run([ChatMessage.from_user("Weather in Zürich?")], streaming_callback=on_chunk)
    assert CHUNKS  # streamed
    return result


def _by_call(telemetry: Any) -> dict[str, Any]:
    return {s.attributes["gen_ai.tool.call.id"]: s for s in executions(telemetry)}


def _tool_call_span(telemetry: Any, call_id: str) -> Any:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes.get("toolcall.call.id") == call_id]
    return span


def _linked(telemetry: Any, execution: Any, call_id: str) -> bool:
    return [link.context.span_id for link in execution.links] == [
        _tool_call_span(telemetry, call_id).context.span_id
    ]


def test_completed_call_is_executed_and_linked(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(*completed_turn())
    result = _run(_agent(fake))
    assert result["last_message"].text == "Sunny."
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert _linked(telemetry, execution, WHOLE.id)
    assert body.calls == [("Zürich", execution.context.span_id)]
    assert len(telemetry.tool_spans()) == 1  # the stream traced once (the openai adapter)


def test_parallel_calls_each_linked_to_its_own(instrument: Any, telemetry: Any, fake: Any) -> None:
    first = ToolCall(name="get_weather", id="call_zrh", arguments='{"location": "Zürich"}')
    second = ToolCall(name="get_weather", id="call_bsl", arguments='{"location": "Basel"}')
    fake.enqueue(tool_call_script([first, second]), answer())
    _run(_agent(fake))
    executed = _by_call(telemetry)
    for call, location in ((first, "Zürich"), (second, "Basel")):
        assert _linked(telemetry, executed[call.id], call.id)
        assert (location, executed[call.id].context.span_id) in body.calls
    assert len(body.calls) == 2 and len(executions(telemetry)) == 2


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync_tool", "async_tool"])
def test_run_async_executes_once_and_links(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    if asynchronous and not HAYSTACK_3:
        pytest.skip("Haystack 2.x tools have no async function")
    options = {"async_function": get_weather_async} if asynchronous else {"function": get_weather}
    tool = Tool(name="get_weather", description="Weather.", parameters=PARAMETERS, **options)
    fake.enqueue(*completed_turn())

    async def chunk(_: Any) -> None:
        return None

    agent = _agent(fake, [tool])
    asyncio.run(agent.run_async([ChatMessage.from_user("Weather?")], streaming_callback=chunk))
    (execution,) = executions(telemetry)  # a sync tool's invoke_async runs invoke: still one span
    assert _linked(telemetry, execution, WHOLE.id)
    assert body.calls == [("Zürich", execution.context.span_id)]


def test_token_limit_inside_the_json_drops_the_call(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(strict=True)
    fake.enqueue(*truncated_turn())
    _run(_agent(fake))
    # Haystack skips arguments that do not parse: nothing runs, the call span says why.
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}


def test_cut_stream_ends_the_run_and_executes_nothing(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(*cut_turn())
    # The SDK's error (httpx's, for a connection dropped mid-body) ends the run.
    with pytest.raises(Exception):  # noqa: B017 (2.x wraps it in PipelineRuntimeError)
        _run(_agent(fake))
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}
    assert len(fake.requests) == 1


def test_not_strict_a_limited_call_runs_unlinked(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([LIMITED], finish_reason="length"), answer())
    _run(_agent(fake))
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == () and body.locations == ["Zürich"]


def test_strict_refuses_before_the_body_as_a_tool_error(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(strict=True)
    fake.enqueue(tool_call_script([LIMITED], finish_reason="length"), answer())
    result = _run(_agent(fake))
    assert body.calls == []
    (execution,) = executions(telemetry)
    assert execution.status.status_code is StatusCode.ERROR
    assert "IncompleteToolCallError" in execution.attributes["error.type"]
    assert execution.links == ()
    # Haystack's own path for a failed tool: an error result for the model, the run goes on.
    (tool_message,) = [m for m in result["messages"] if m.tool_call_results]
    assert tool_message.tool_call_results[0].error
    assert "refusing to execute tool call" in tool_message.tool_call_results[0].result
    assert result["last_message"].text == "Sunny." and len(fake.requests) == 2


def test_strict_refusal_raised_with_raise_on_failure(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(strict=True)
    fake.enqueue(tool_call_script([LIMITED], finish_reason="length"), answer())
    with pytest.raises(Exception) as raised:
        _run(_agent(fake, raise_on_tool_invocation_failure=True))
    # 3.x raises Haystack's ToolInvocationError; 2.x wraps it in PipelineRuntimeError.
    chain, error = [], raised.value
    while error is not None:
        chain.append(type(error))
        error = error.__cause__
    assert chain[-2:] == [ToolInvocationError, IncompleteToolCallError]
    assert body.calls == [] and len(fake.requests) == 1


@pytest.mark.skipif(not HAYSTACK_3, reason="Haystack 2.x makes no span per tool")
def test_haystacks_own_tool_span_is_annotated_not_doubled(instrument: Any, telemetry: Any, fake: Any) -> None:
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer

    tracing.enable_tracing(OpenTelemetryTracer(telemetry.tracer_provider.get_tracer("haystack")))
    instrument(strict=True)
    fake.enqueue(*completed_turn(), tool_call_script([LIMITED], finish_reason="length"), answer())
    _run(_agent(fake))
    (own,) = [s for s in telemetry.spans() if s.name == "haystack.agent.step.tool"]
    assert executions(telemetry) == []  # no span of the package's: Haystack's is the execution span
    assert own.attributes["toolcall.outcome"] == "completed"
    assert _linked(telemetry, own, WHOLE.id)
    assert body.calls == [("Zürich", own.context.span_id)]
    # Strict: Haystack's span marked refused, the body never run.
    body.calls.clear()
    _run(_agent(fake))
    refused = [s for s in telemetry.spans() if s.name == "haystack.agent.step.tool"][-1]
    assert refused.status.status_code is StatusCode.ERROR and refused.links == ()
    assert refused.attributes["toolcall.outcome"] == "aborted" and body.calls == []


@pytest.mark.skipif(HAYSTACK_3, reason="Haystack 3.x's tool span: the test above")
def test_haystack_2_tracing_has_no_tool_span_the_packages_is_inside_its_own(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    from haystack.tracing.opentelemetry import OpenTelemetryTracer

    tracing.enable_tracing(OpenTelemetryTracer(telemetry.tracer_provider.get_tracer("haystack")))
    fake.enqueue(*completed_turn())
    _run(_agent(fake))
    (execution,) = executions(telemetry)
    assert _linked(telemetry, execution, WHOLE.id)
    # Haystack 2.x traces the ToolInvoker component as a whole: the execution span is under it.
    (invoker,) = [
        s
        for s in telemetry.spans()
        if s.name == "haystack.component.run" and s.attributes.get("haystack.component.type") == "ToolInvoker"
    ]
    assert execution.parent.span_id == invoker.context.span_id


def test_a_direct_invoke_gets_no_span(instrument: Any, telemetry: Any) -> None:
    assert WEATHER.invoke(location="Bern") == "sunny"
    assert body.locations == ["Bern"] and executions(telemetry) == []



def test_the_example_under_opentelemetry_instrument() -> None:
    lines, spans = run_example("haystack_agent.py", HAYSTACK_TELEMETRY_ENABLED="False")
    stdout = "\n".join(lines)
    assert "ran get_weather('Zürich')" in stdout and "answer: Sunny." in stdout
    assert "get_weather('Zür')" not in stdout
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call")}
    assert calls["call_cut"]["attributes"]["toolcall.outcome"] == "aborted"
    executed = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "execute_tool"]
    by_id = {s["attributes"]["gen_ai.tool.call.id"]: s for s in executed}
    assert by_id["call_cut"]["status"]["status_code"] == "ERROR"
    assert [link["context"]["span_id"] for link in by_id["call_whole"]["links"]] == [
        calls["call_whole"]["context"]["span_id"]
    ]
