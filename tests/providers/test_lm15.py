"""lm15's own client (``OpenAIChatLM``, sync and async, and ``LMRouter``) against the FakeProvider:
real SSE bytes, parsed by lm15's own HTTP transport and read as its canonical events."""

from __future__ import annotations

import asyncio
from typing import Any

import lm15
import pytest
from examples_run import run_example
from lm15 import Message, OpenAIChatLM, Request
from lm15.providers import AsyncOpenAIChatLM
from opentelemetry.trace import StatusCode
from test_openai_chat import assert_call, assert_parented, inference

from otel_toolcalls import IncompleteToolCallError, execute_tool
from otel_toolcalls._core import names as n
from otel_toolcalls.testing.openai_chat import MODEL, PARALLEL, WEATHER, ToolCall, tool_call_script

TOOL = lm15.FunctionTool(
    name="get_weather",
    description="Current weather for a location.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)
REQUEST = Request(model=MODEL, messages=(Message.user("Weather in Zürich?"),), tools=(TOOL,))
# Cut by the token limit, its arguments whole JSON by chance.
LIMITED = ToolCall(name="get_weather", id="call_limited", arguments='{"location": "Zürich"}')


def _lm(fake: Any) -> OpenAIChatLM:
    return OpenAIChatLM(api_key="sk-fake", base_url=fake.base_url + "/v1")


def _drain(fake: Any, asynchronous: bool) -> list[Any]:
    if not asynchronous:
        return list(_lm(fake).stream(REQUEST))

    async def drain() -> list[Any]:
        lm = AsyncOpenAIChatLM(api_key="sk-fake", base_url=fake.base_url + "/v1")
        return [event async for event in lm.stream(REQUEST)]

    return asyncio.run(drain())


def _arguments(events: list[Any]) -> dict[int, str]:
    """The argument text lm15 delivered, per part index: what a consumer joins."""
    joined: dict[int, str] = {}
    for event in events:
        if event.type == "delta" and event.delta.type == "tool_call":
            index = event.delta.part_index
            joined[index] = joined.get(index, "") + event.delta.input
    return joined


def _span(telemetry: Any, call_id: str) -> Any:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes[n.TOOLCALL_CALL_ID] == call_id]
    return span


SYNC_ASYNC = pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])


@SYNC_ASYNC
def test_completed_calls_fragmented_at_awkward_places(telemetry, instrument, fake, asynchronous):
    fake.enqueue(tool_call_script(PARALLEL))
    events = _drain(fake, asynchronous)
    assert fake.requests[-1].path == "/v1/chat/completions"
    joined = _arguments(events)
    assert joined == {i: call.arguments for i, call in enumerate(PARALLEL)}
    for i, call in enumerate(PARALLEL):
        span = _span(telemetry, call.id)
        assert_call(telemetry, span, reason=None, delivered=joined[i])
        assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == len(call.pieces())
    chat = inference(telemetry)
    assert chat.attributes[n.SERVER_PORT] == fake.port
    assert chat.attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_call",)
    assert_parented(telemetry)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


@SYNC_ASYNC
def test_multibyte_fragments_are_sized_as_delivered(telemetry, instrument, fake, asynchronous):
    # Each event is written in two halves cut inside a character; lm15's own reader joins them.
    fake.enqueue(tool_call_script([WEATHER]))
    joined = _arguments(_drain(fake, asynchronous))
    assert joined == {0: WEATHER.arguments}
    assert_call(telemetry, _span(telemetry, WEATHER.id), reason=None, delivered=WEATHER.arguments)


@SYNC_ASYNC
def test_finish_length_mid_arguments_is_truncated(telemetry, instrument, fake, asynchronous):
    cut = ToolCall(name="get_weather", id="call_cut", arguments='{"location": "Zürich, Sch')
    fake.enqueue(tool_call_script([cut], finish_reason="length"))
    joined = _arguments(_drain(fake, asynchronous))
    assert_call(telemetry, _span(telemetry, "call_cut"), reason="truncated", delivered=joined[0])
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}


@SYNC_ASYNC
def test_stream_dying_mid_arguments_is_a_stream_error(telemetry, instrument, fake, asynchronous):
    fake.enqueue(tool_call_script([WEATHER], cut_after=5))
    with pytest.raises(lm15.TransportError):
        _drain(fake, asynchronous)
    span = _span(telemetry, WEATHER.id)
    assert span.attributes[n.ERROR_TYPE] == "lm15.errors.TransportError"
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == "stream_error"
    assert span.status.status_code is StatusCode.ERROR
    assert inference(telemetry).status.status_code is StatusCode.ERROR
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


def test_closed_early_is_closed(telemetry, instrument, fake):
    fake.enqueue(tool_call_script([WEATHER]))
    stream = _lm(fake).stream(REQUEST)
    for event in stream:
        if event.type == "delta" and event.delta.input:
            break
    stream.close()
    assert _span(telemetry, WEATHER.id).attributes[n.TOOLCALL_ABORT_REASON] == "closed"


def test_through_the_router(telemetry, instrument, fake):
    # LMRouter picks the provider from "openai-chat:<model>" and iterates its stream: traced once.
    fake.enqueue(tool_call_script(PARALLEL))
    base_urls = {"openai-chat": fake.base_url + "/v1"}
    router = lm15.LMRouter(lm15.RouterConfig(api_keys={"openai-chat": "sk-fake"}, base_urls=base_urls))
    events = list(router.stream(Request(model=f"openai-chat:{MODEL}", messages=REQUEST.messages)))
    assert len(_arguments(events)) == 2
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_limited_call_linked_never_and_refused_in_strict_mode(telemetry, instrument, fake):
    ran: list[str] = []
    instrument(strict=True)
    fake.enqueue(tool_call_script([LIMITED], finish_reason="length"))
    events = _drain(fake, False)
    (call_id,) = [e.delta.id for e in events if e.type == "delta" and e.delta.id]
    with pytest.raises(IncompleteToolCallError) as refused, execute_tool(call_id, name="get_weather"):
        ran.append("body")
    assert ran == [] and refused.value.reason == "truncated"
    operations = {s.attributes.get(n.GEN_AI_OPERATION_NAME): s for s in telemetry.spans()}
    execution = operations[n.OPERATION_EXECUTE_TOOL]
    assert execution.links == () and execution.status.status_code is StatusCode.ERROR


def test_completed_call_executed_and_linked(telemetry, instrument, fake):
    fake.enqueue(tool_call_script([LIMITED]))
    _drain(fake, True)
    with execute_tool("call_limited", name="get_weather") as span:
        pass
    call = _span(telemetry, "call_limited")
    assert [link.context.span_id for link in span.links] == [call.context.span_id]
    assert span.attributes[n.TOOLCALL_OUTCOME] == "completed"


def test_the_example_under_opentelemetry_instrument() -> None:
    lines, spans = run_example("lm15_agent.py")
    assert "call_cut: refused (IncompleteToolCallError)" in lines
    assert "ran get_weather('Zürich')" in lines and "ran get_weather('Zürich, Sch')" not in lines
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert calls["call_cut"]["attributes"]["toolcall.abort_reason"] == "truncated"
    executed = {
        s["attributes"]["gen_ai.tool.call.id"]: s for s in spans if s["name"].startswith("execute_tool ")
    }
    assert executed["call_cut"]["status"]["status_code"] == "ERROR" and executed["call_cut"]["links"] == []
    assert [link["context"]["span_id"] for link in executed["call_whole"]["links"]] == [
        calls["call_whole"]["context"]["span_id"]
    ]
