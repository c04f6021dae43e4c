"""LangChain / LangGraph: the prebuilt ReAct agent on ChatOpenAI (streaming) against the fake provider."""

from __future__ import annotations

from typing import Any

import pytest
from internal_errors import RaisingProcessor, internal_errors

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.prebuilt import ToolNode, create_react_agent  # noqa: E402

from otel_toolcalls import IncompleteToolCallError  # noqa: E402
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script  # noqa: E402

WEATHER = ToolCall(
    name="get_weather",
    id="call_lc_1",
    arguments='{"location": "Zürich, Schweiz", "days": 14}',
)
# The stream hits the token limit inside the location string: LangChain's partial-JSON parser still
# makes a call of it ({"location": "Zür"}) and the agent runs the tool with cut arguments.
TRUNCATED = ToolCall(name="get_weather", id="call_lc_cut", arguments="", fragments=['{"loca', 'tion": "Zür'])

ran: list[str] = []


@tool
def get_weather(location: str, days: int = 1) -> str:
    """Weather for a place."""
    ran.append(location)
    return f"sunny in {location}"


def _agent(fake: Any, tools: Any = None) -> Any:
    model = ChatOpenAI(
        model="gpt-4o-mini", streaming=True, base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0
    )
    return create_react_agent(model, tools or [get_weather])


def _answer() -> Any:
    return script_for(events_for([], text="It is sunny.", finish_reason="stop"))


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def _execution_spans(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("execute_tool ")]


def test_completed_call_gets_one_linked_execution_span(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([WEATHER]), _answer())
    result = _agent(fake).invoke({"messages": [("user", "weather in Zürich?")]})
    assert result["messages"][-1].content == "It is sunny."
    assert ran == ["Zürich, Schweiz"]
    call = telemetry.one("tool_call get_weather")
    assert call.attributes["toolcall.outcome"] == "completed"
    (execution,) = _execution_spans(telemetry)
    assert execution.name == "execute_tool get_weather"
    assert execution.attributes["gen_ai.tool.call.id"] == "call_lc_1"
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert execution.links[0].attributes["gen_ai.attribution.link_type"] == "CAUSED_BY_GENERATION"
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


@pytest.mark.parametrize("run", ["sync", "async"])
async def test_execution_span_goes_to_the_instrumentors_providers(
    run: str, instrument: Any, telemetry: Any, fake: Any, elsewhere: Any
) -> None:
    fake.enqueue(tool_call_script([WEATHER]), _answer())
    agent = _agent(fake)
    question = {"messages": [("user", "weather?")]}
    agent.invoke(question) if run == "sync" else await agent.ainvoke(question)
    (execution,) = _execution_spans(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert elsewhere.get_finished_spans() == ()


async def test_async_agent_completed_call(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([WEATHER]), _answer())
    await _agent(fake).ainvoke({"messages": [("user", "weather?")]})
    (execution,) = _execution_spans(telemetry)
    call = telemetry.one("tool_call get_weather")
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert execution.links[0].context.span_id == call.context.span_id


def test_truncated_call_runs_without_link(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([TRUNCATED], finish_reason="length"), _answer())
    _agent(fake).invoke({"messages": [("user", "weather?")]})
    assert ran == ["Zür"]  # the seed's failure: the framework ran a cut call
    call = telemetry.one("tool_call get_weather")
    assert call.attributes["toolcall.abort_reason"] == "truncated"
    (execution,) = _execution_spans(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}


def test_strict_refuses_the_truncated_call(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(strict=True)
    fake.enqueue(tool_call_script([TRUNCATED], finish_reason="length"), _answer())
    # langgraph-prebuilt 0.1.x turns every tool exception into a message to the model by
    # default; with that off the refusal reaches the application on every version.
    tools = ToolNode([get_weather], handle_tool_errors=False)
    with pytest.raises(IncompleteToolCallError):
        _agent(fake, tools).invoke({"messages": [("user", "weather?")]})
    assert ran == []
    (execution,) = _execution_spans(telemetry)
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert execution.status.is_ok is False
    assert execution.links == ()
    assert len(fake.requests) == 1


def test_plain_runnable_use_makes_no_span(instrument: Any, telemetry: Any) -> None:
    assert get_weather.invoke({"location": "Bern"}) == "sunny in Bern"
    assert _execution_spans(telemetry) == []


def test_tool_call_dict_without_stream_is_unknown(instrument: Any, telemetry: Any) -> None:
    get_weather.invoke(
        {"name": "get_weather", "args": {"location": "Bern"}, "id": "never", "type": "tool_call"}
    )
    (execution,) = _execution_spans(telemetry)
    assert execution.attributes["toolcall.outcome"] == "unknown"
    assert execution.links == ()


def test_uninstrumented_makes_no_span(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument().uninstrument()
    fake.enqueue(tool_call_script([WEATHER]), _answer())
    _agent(fake).invoke({"messages": [("user", "weather?")]})
    assert ran == ["Zürich, Schweiz"]
    assert telemetry.spans() == []


class ToolBug(Exception):
    """The tool's own failure: the application's, never the package's."""


BUG = ToolBug("the tool's own failure")


@tool("get_weather")
def failing_weather(location: str, days: int = 1) -> str:
    """Weather for a place."""
    ran.append(location)
    raise BUG


@pytest.mark.parametrize("ends", ["returns", "raises"])
@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.parametrize("where", ["on_start", "on_end"])
async def test_a_raising_span_processor_is_counted_once_and_the_tool_runs_once(
    instrument: Any, telemetry: Any, fake: Any, where: str, run: str, ends: str
) -> None:
    # The runner (_linking/runner.py) meets the raise through execute_tool; tool_call spans are
    # left alone (their failures are the stream side's).
    telemetry.tracer_provider.add_span_processor(RaisingProcessor(where, prefix="execute_tool "))
    fake.enqueue(tool_call_script([WEATHER]), _answer())
    # With error handling off the tool's exception reaches the application on every version.
    tools = ToolNode([failing_weather if ends == "raises" else get_weather], handle_tool_errors=False)
    agent, question = _agent(fake, tools), {"messages": [("user", "weather in Zürich?")]}
    try:
        result = agent.invoke(question) if run == "sync" else await agent.ainvoke(question)
    except ToolBug as exc:
        assert ends == "raises" and exc is BUG
    else:
        assert ends == "returns"
        assert result["messages"][-2].content == "sunny in Zürich, Schweiz"  # the tool's own result
        assert result["messages"][-1].content == "It is sunny."
    assert ran == ["Zürich, Schweiz"]
    site = {"on_start": "_linking.execute.start_span", "on_end": "_linking.execute.end_span"}[where]
    assert internal_errors(telemetry) == {(site, "RuntimeError"): 1}
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
