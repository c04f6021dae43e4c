"""LlamaIndex: a streaming ``FunctionAgent`` / ``AgentWorkflow`` on its OpenAI LLM class against the
fake provider.

Observed (llama-index-core 0.14, llama-index-llms-openai 0.8): on a stream stopped by the token
limit inside the arguments, the OpenAI LLM class parses the partial JSON (``{"location": "Zürich,
Sch`` becomes ``{"location": None}``) and the agent runs the tool with it, then sends the next
request with the broken call in its history. On a stream cut inside the arguments, the SDK's
``httpx.RemoteProtocolError`` ends the run and nothing is executed.

Before llama-index-core 0.14.22 (observed on 0.13.0 and 0.13.6) a sync tool runs in an executor
thread without the caller's context (the adapter gives it the caller's, as 0.14.22 does: its body
runs inside the execution span on every release); llama-index-workflows 1.x raises a step's
exception as its ``WorkflowRuntimeError``, the exception kept as its cause.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import openai
import pytest
from framework_spans import WHOLE, Body, answer, completed_turn, cut_turn, executions, truncated_turn
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.agent.workflow.workflow_events import ToolCallResult
from llama_index.core.tools import FunctionTool, ToolOutput
from llama_index.llms.openai import OpenAI
from opentelemetry.trace import StatusCode

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing.openai_chat import PARALLEL, ToolCall, tool_call_script

body = Body()


def _in(execution: Any) -> int:
    """The span a tool's body sees while it runs for ``execution``: that execution's, sync or async."""
    return execution.context.span_id


def _raised(error: BaseException) -> BaseException:
    """What the step raised: llama-index-workflows 1.x wraps it in its WorkflowRuntimeError."""
    if type(error).__name__ == "WorkflowRuntimeError" and error.__cause__ is not None:
        return error.__cause__
    return error


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


def get_time(timezone: str, offset: int) -> str:
    """Local time in a time zone."""
    return body.ran(timezone)


async def aget_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


def broken_weather(location: str) -> str:
    """Current weather for a location."""
    body.ran(location)
    raise ValueError("weather service down")


def _agent(fake: Any, *tools: Any) -> FunctionAgent:
    llm = OpenAI(model="gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    return FunctionAgent(tools=list(tools) or [get_weather], llm=llm, streaming=True)


async def _run(workflow: Any) -> list[Any]:
    """Runs the agent streaming, as its docs show; returns the events it streamed."""
    handler = workflow.run(user_msg="Weather in Zürich?")
    seen = [event async for event in handler.stream_events()]
    await handler
    return seen


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


async def test_completed_call_runs_inside_a_linked_execution_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*completed_turn())
    await _run(_agent(fake))
    (execution,) = executions(telemetry)
    call = telemetry.one("tool_call get_weather")
    assert execution.name == "execute_tool get_weather"
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", _in(execution))]


async def test_agent_workflow_is_covered_too(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(*completed_turn())
    await _run(AgentWorkflow(agents=[_agent(fake)]))
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert len(execution.links) == 1
    assert body.calls == [("Zürich", _in(execution))]


async def test_parallel_calls_each_get_their_own_span(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script(PARALLEL), answer())

    def get_weather(city: str, days: int) -> str:
        """Weather forecast for a city."""
        return body.ran(city)

    await _run(_agent(fake, get_weather, get_time))
    by_id = {s.attributes["gen_ai.tool.call.id"]: s for s in executions(telemetry)}
    assert sorted(by_id) == ["call_par_1", "call_par_2"]
    calls = {s.attributes["toolcall.call.id"]: s for s in telemetry.tool_spans()}
    for call_id, execution in by_id.items():
        assert [link.context.span_id for link in execution.links] == [calls[call_id].context.span_id]
    assert sorted(span_id for _, span_id in body.calls) == sorted(_in(s) for s in by_id.values())


async def test_async_tool_body_runs_inside_the_execution_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*completed_turn())
    await _run(_agent(fake, FunctionTool.from_defaults(async_fn=aget_weather, name="get_weather")))
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert body.calls == [("Zürich", execution.context.span_id)]  # on every release


async def test_tool_error_is_the_execution_error(instrument: Any, telemetry: Any, fake: Any) -> None:
    # LlamaIndex turns the tool's exception into an error ToolOutput for the model; the span says
    # the execution failed all the same.
    fake.enqueue(tool_call_script([ToolCall("broken_weather", WHOLE.arguments, WHOLE.id)]), answer())
    seen = await _run(_agent(fake, broken_weather))
    (execution,) = executions(telemetry)
    assert execution.status.status_code is StatusCode.ERROR
    # LlamaIndex 0.13's ToolOutput keeps no exception: only that the tool failed.
    kept = hasattr(ToolOutput, "exception")
    assert execution.attributes["error.type"] == ("ValueError" if kept else "tool_error")
    assert execution.attributes["toolcall.outcome"] == "completed"
    (result,) = [e for e in seen if isinstance(e, ToolCallResult)]
    assert result.tool_output.is_error  # what LlamaIndex hands the model is unchanged


async def test_truncated_call_runs_on_partial_json_unlinked(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*truncated_turn())
    await _run(_agent(fake))
    # The bug: the tool ran on what the partial JSON parser made of the cut arguments.
    (execution,) = executions(telemetry)
    assert body.calls == [(None, _in(execution))]
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()
    # LlamaIndex then sent the broken call back in its history: flagged as replayed.
    assert len(fake.requests) == 2
    (_, second) = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert second.attributes["toolcall.replayed_aborted"] == 1


async def test_strict_refuses_the_truncated_call_before_the_body(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    instrument(strict=True)
    fake.enqueue(*truncated_turn())
    with pytest.raises(Exception) as raised:
        await _run(_agent(fake))
    refused = _raised(raised.value)
    assert isinstance(refused, IncompleteToolCallError)
    assert refused.call_id == WHOLE.id and refused.reason == "truncated"
    assert body.calls == []
    assert len(fake.requests) == 1  # the run stopped: the broken turn went nowhere
    (execution,) = executions(telemetry)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert execution.status.status_code is StatusCode.ERROR
    assert execution.links == ()


async def test_strict_runs_completed_calls(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(strict=True)
    fake.enqueue(*completed_turn())
    await _run(_agent(fake))
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich", _in(execution))]


@pytest.mark.parametrize("strict", [False, True])
async def test_cut_stream_ends_the_run_and_executes_nothing(
    instrument: Any, telemetry: Any, fake: Any, strict: bool
) -> None:
    instrument(strict=strict)
    fake.enqueue(*cut_turn())
    with pytest.raises(Exception) as raised:
        await _run(_agent(fake))
    assert isinstance(_raised(raised.value), (httpx.HTTPError, openai.APIError))
    assert body.calls == []
    assert executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


async def test_uninstrumented_agent_gets_no_execution_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    instrument().uninstrument()
    fake.enqueue(*completed_turn())
    await _run(_agent(fake))
    assert body.locations == ["Zürich"]
    assert executions(telemetry) == []


_IMPORTED_AFTER = """
import asyncio, json, sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_toolcalls import ToolCallsInstrumentor

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
ToolCallsInstrumentor().instrument(tracer_provider=provider)
assert "llama_index.core" not in sys.modules

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI

def get_weather(location: str) -> str:
    \"\"\"Current weather for a location.\"\"\"
    return "sunny"

async def main():
    llm = OpenAI(model="gpt-4o-mini", api_base=sys.argv[1], api_key="sk-fake", max_retries=0)
    await FunctionAgent(tools=[get_weather], llm=llm, streaming=True).run(user_msg="Weather?")

asyncio.run(main())
print(json.dumps([[s.name, dict(s.attributes), len(s.links)] for s in exporter.get_finished_spans()]))
"""


def test_framework_imported_after_instrument(fake: Any) -> None:
    # As under opentelemetry-instrument: the instrumentor runs first, the app imports LlamaIndex later.
    fake.enqueue(*completed_turn())
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_AFTER, fake.base_url + "/v1"],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    spans = json.loads(done.stdout.strip().splitlines()[-1])
    (execution,) = [s for s in spans if s[0].startswith("execute_tool")]
    assert execution[1]["toolcall.outcome"] == "completed" and execution[2] == 1


async def test_execution_span_goes_to_the_instrumentors_providers(
    instrument: Any, telemetry: Any, fake: Any, elsewhere: Any
) -> None:
    # The adapter uses the telemetry instrument() gave it, not whichever is active when the tool runs.
    fake.enqueue(*completed_turn())
    await _run(_agent(fake))
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [s.name for s in elsewhere.get_finished_spans() if s.name.startswith("execute_tool")] == []
