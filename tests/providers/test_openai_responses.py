"""The real openai SDK against the FakeProvider: every outcome and reason of OpenAI Responses streams."""

from __future__ import annotations

import importlib.util
import itertools
import time
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from outcomes import assert_outcome
from sdk_compat import bare_error_async

from otel_toolcalls import tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls._core.calls import error_type_of
from otel_toolcalls.testing import Script, sse
from otel_toolcalls.testing.openai_responses import (
    MODEL,
    RESPONSE_ID,
    WEATHER,
    ToolCall,
    events_for,
    script_for,
    tool_call_script,
)

if importlib.util.find_spec("openai.resources.responses") is None:
    # The version lane also runs openai releases from before the Responses API (openai 1.66).
    pytest.skip(f"openai {openai.__version__} has no Responses API", allow_module_level=True)

LOOKUP = ToolCall("lookup", '{"q": "straße", "n": 12345}', call_id="call_lookup_2")
SHELL = ToolCall("shell", "echo 'grüße'; ls -la /tmp", call_id="call_shell_3", kind="custom_tool_call",
                 fragments=["echo 'gr", "ü", "ße'; ls", " -la /tmp"])  # fmt: skip
MCP = ToolCall(
    "mcp_search", '{"query": "otel"}', kind="mcp_call", item_id="mcp_abc", fragments=['{"que', 'ry": "otel"}']
)


@pytest.fixture
def client(fake: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)


@pytest.fixture
def aclient(fake: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)


def create(client: Any) -> Any:
    return client.responses.create(model=MODEL, input="weather?", stream=True)


def span_of(telemetry: Any, name: str) -> ReadableSpan:
    found = [s for s in telemetry.tool_spans() if s.name == f"tool_call {name}"]
    assert len(found) == 1, [s.name for s in telemetry.spans()]
    return found[0]


def assert_call(span: ReadableSpan, call: ToolCall, *, reason: str | None, delivered: int | None = None,
                error_type: str | None = None) -> None:  # fmt: skip
    """``delivered``: how many of the call's fragments the consumer saw (default: all)."""
    attrs = span.attributes or {}
    pieces = call.pieces()[:delivered]
    assert span.kind is SpanKind.INTERNAL
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs[n.TOOLCALL_TOOL_TYPE] == ("extension" if call.kind == "mcp_call" else "function")
    assert attrs[n.TOOLCALL_CALL_ID] == (call.item_id if call.kind == "mcp_call" else call.call_id)
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(pieces)
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(pieces).encode("utf-8"))
    assert_outcome(span, reason, error_type)


def assert_stream(telemetry: Any, *, reason: str | None, count: int, finish: str = "completed",
                  error_type: str | None = None, name: str = f"chat {MODEL}") -> ReadableSpan:  # fmt: skip
    operation = name.split(" ")[0]
    span = telemetry.one(operation)
    attrs = span.attributes or {}
    assert span.name == name and span.kind is SpanKind.CLIENT
    assert attrs[n.GEN_AI_OPERATION_NAME] == operation
    assert attrs[n.TOOLCALL_COUNT] == count
    assert attrs[n.TOOLCALL_OUTCOME] == ("completed" if reason is None else "aborted")
    assert attrs.get(n.TOOLCALL_ABORT_REASON) == reason
    assert attrs[n.GEN_AI_RESPONSE_FINISH_REASONS] == (finish,)
    assert attrs.get(n.ERROR_TYPE) == error_type
    for tool in telemetry.tool_spans():
        assert tool.parent is not None and tool.parent.span_id == span.context.span_id
    return span


# -- completion ------------------------------------------------------------------------------------


def test_three_kinds_complete_awkward_fragments(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER, SHELL, MCP], text="Let me check."))
    events = list(create(client))
    deltas = [e for e in events if e.type.endswith(".delta") and "text" not in e.type]
    assert len(deltas) == sum(len(c.pieces()) for c in (WEATHER, SHELL, MCP))
    for index, call in enumerate((WEATHER, SHELL, MCP), start=1):
        span = span_of(telemetry, call.name)
        assert_call(span, call, reason=None)
        assert span.attributes[n.TOOLCALL_INDEX] == index
        assert span.attributes[n.TOOLCALL_REQUEST_MODEL] == MODEL
    stream = assert_stream(telemetry, reason=None, count=3)
    assert stream.attributes[n.GEN_AI_RESPONSE_ID] == RESPONSE_ID
    assert stream.attributes[n.GEN_AI_RESPONSE_MODEL] == MODEL
    assert telemetry.calls_by_outcome() == {("completed", None): 3}
    assert tool_call_outcome(WEATHER.call_id) == "completed"
    assert tool_call_outcome("mcp_abc") == "completed"
    assert len(WEATHER.pieces()) > 8  # the awkward split did cut the arguments


def test_next_and_with(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]))
    with create(client) as stream:
        while next(stream).type != "response.completed":
            pass
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason=None)
    assert_stream(telemetry, reason=None, count=1)


def test_helper_get_final_response(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER, LOOKUP]))
    with client.responses.stream(model=MODEL, input="weather?") as stream:
        final = stream.get_final_response()
    assert [item.call_id for item in final.output] == [WEATHER.call_id, LOOKUP.call_id]
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason=None)
    assert_stream(telemetry, reason=None, count=2)


# -- outcomes settled by the response's end --------------------------------------------------------


@pytest.mark.parametrize(
    ("why", "reason"),
    [
        ("max_output_tokens", "truncated"),
        ("content_filter", "filtered"),
        ("max_messages", "truncated"),
        (None, "truncated"),
    ],
)
@pytest.mark.parametrize("item_done", [False, True])
def test_response_incomplete(telemetry, instrument, fake, client, why, reason, item_done):
    # The limit hit while the call was open, or cut the item that then reported status incomplete.
    cut = ToolCall(**{**LOOKUP.__dict__, "status": "incomplete" if item_done else None})
    fake.enqueue(tool_call_script([WEATHER, cut], end="incomplete", reason=why))
    list(create(client))
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason=None)
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason=reason)
    stream_reason = {"max_output_tokens": "truncated", "content_filter": "filtered"}.get(why or "")
    assert_stream(telemetry, reason=stream_reason, count=2, finish=why or "incomplete")
    assert telemetry.calls_by_outcome() == {("completed", None): 1, ("aborted", reason): 1}


@pytest.mark.parametrize("end", ["completed", None])
def test_incomplete_item_without_response_incomplete_is_truncated_at_its_stop(
    telemetry, instrument, fake, client, end
):
    cut = ToolCall(**{**LOOKUP.__dict__, "status": "incomplete"})
    events = events_for([cut], end=end)
    fake.enqueue(script_for(events, pace=0.002, split_characters=False))
    with create(client) as stream:
        for event in stream:
            if event.type == "response.output_item.done":
                assert not telemetry.tool_spans()  # stopped, its outcome still to be settled
        ended_at = time.time_ns()
    span = span_of(telemetry, "lookup")
    assert_call(span, LOOKUP, reason="truncated")
    assert span.end_time < ended_at


def test_text_after_an_incomplete_item_settles_it_truncated(telemetry, instrument, fake, client):
    cut = ToolCall(**{**LOOKUP.__dict__, "status": "incomplete"})
    fake.enqueue(tool_call_script([cut], text_after="partial answer", end="completed"))
    list(create(client))
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason="truncated")


@pytest.mark.parametrize("end", ["failed", "error"])
def test_error_events_are_stream_errors(telemetry, instrument, fake, client, end):
    open_call = ToolCall(**{**LOOKUP.__dict__, "status": None})
    fake.enqueue(tool_call_script([WEATHER, open_call], end=end, error_code="server_error"))
    events = list(create(client))  # yielded, not raised
    assert events[-1].type == ("response.failed" if end == "failed" else "error")
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason=None)
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason="stream_error", error_type="server_error")
    stream = assert_stream(
        telemetry, reason="stream_error", count=2, finish="error", error_type="server_error"
    )
    assert stream.status.status_code is StatusCode.ERROR


def test_error_event_without_code_is_other(telemetry, instrument, fake, client):
    fake.enqueue(
        tool_call_script([ToolCall(**{**WEATHER.__dict__, "status": None})], end="error", error_code=None)
    )
    list(create(client))
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason="stream_error", error_type="_OTHER")


def test_mcp_call_failed(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([ToolCall(**{**MCP.__dict__, "status": "failed"})]))
    list(create(client))
    assert_call(span_of(telemetry, "mcp_search"), MCP, reason="stream_error", error_type="mcp_protocol_error")
    assert tool_call_outcome("mcp_abc") == "aborted"


def test_body_ends_without_done_or_final_event(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER, ToolCall(**{**LOOKUP.__dict__, "status": None})], end=None))
    list(create(client))
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason=None)
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason="incomplete")
    assert_stream(telemetry, reason="incomplete", count=2, finish="error")


# -- ends of the stream ----------------------------------------------------------------------------


def cut_mid_arguments(call: ToolCall = WEATHER, delivered: int = 3) -> Script:
    # created, in_progress, item added, then `delivered` fragments: the socket drops mid-arguments.
    return script_for(events_for([call]), cut_after=3 + delivered)


def outcome_of(run: Any) -> tuple[list[Any], BaseException | None]:
    events: list[Any] = []
    try:
        for event in run():
            events.append(event.to_dict())
    except Exception as exc:  # the SDK's own exception, compared below
        return events, exc
    return events, None


def test_server_cut_mid_arguments_raises_the_sdk_exception(telemetry, instrument, fake, client):
    fake.enqueue(cut_mid_arguments())
    events, exc = outcome_of(lambda: create(client))
    assert exc is not None and len(events) == 6
    error_type = f"{type(exc).__module__.split('.')[0]}.{type(exc).__qualname__}"
    assert_call(
        span_of(telemetry, "get_weather"), WEATHER, reason="stream_error", delivered=3, error_type=error_type
    )
    assert_stream(telemetry, reason="stream_error", count=1, finish="error", error_type=error_type)


def test_raw_and_streaming_responses_then_parse(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]), tool_call_script([LOOKUP]))
    raw = client.responses.with_raw_response.create(model=MODEL, input="weather?", stream=True)
    assert len(list(raw.parse())) > 0
    with client.responses.with_streaming_response.create(model=MODEL, input="x", stream=True) as response:
        events = list(response.parse())
    assert events[-1].type == "response.completed"
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason=None)
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason=None)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


# close(): test_outcomes_matrix.py::test_closed[openai_responses].
@pytest.mark.parametrize("how", ["with", "helper_close", "helper_with"])
def test_closed_mid_call(telemetry, instrument, fake, client, how):
    fake.enqueue(script_for(events_for([WEATHER]), pace=0.001))
    helper = how.startswith("helper")
    manager = client.responses.stream(model=MODEL, input="x") if helper else None
    stream = manager.__enter__() if manager is not None else create(client)
    seen = 0
    for event in stream:
        seen += event.type == "response.function_call_arguments.delta"
        if seen == 2:
            break
    if how.endswith("with"):
        (manager or stream).__exit__(None, None, None)
    else:
        stream.close()
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason="closed", delivered=2)
    assert_stream(telemetry, reason="closed", count=1, finish="error")


def test_retrieve_resumes_mid_stream(telemetry, instrument, fake, client):
    events = events_for([WEATHER, LOOKUP])
    # Resume inside the first call's arguments: its fragments open nothing; the second is whole.
    fake.enqueue(script_for(events, starting_after=5))
    resumed = list(client.responses.retrieve(RESPONSE_ID, stream=True, starting_after=5))
    assert resumed[0].sequence_number == 6
    assert (
        fake.requests[-1].path.startswith(f"/responses/{RESPONSE_ID}?")
        and "stream=true" in fake.requests[-1].path
    )
    assert [s.name for s in telemetry.tool_spans()] == ["tool_call lookup"]
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason=None)
    # The request names no model: the span carries the response's.
    stream = assert_stream(telemetry, reason=None, count=1, name="fetch_response")
    assert stream.attributes[n.GEN_AI_RESPONSE_MODEL] == MODEL


def test_helper_stream_by_response_id(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]))
    with client.responses.stream(response_id=RESPONSE_ID) as stream:
        assert stream.get_final_response().output[0].call_id == WEATHER.call_id
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason=None)


def test_replaying_an_aborted_call_is_flagged(telemetry, instrument, fake, client):
    fake.enqueue(cut_mid_arguments(), tool_call_script([LOOKUP]))
    assert outcome_of(lambda: create(client))[1] is not None
    assert tool_call_outcome(WEATHER.call_id) == "aborted"
    history = [
        {"type": "function_call", "call_id": WEATHER.call_id, "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": WEATHER.call_id, "output": "sunny"},
    ]
    list(client.responses.create(model=MODEL, input=history, stream=True))
    cut, replaying = [s for s in telemetry.spans() if s.name.startswith("chat")]  # in the order they ended
    assert n.TOOLCALL_REPLAYED_ABORTED not in cut.attributes
    assert replaying.attributes[n.TOOLCALL_REPLAYED_ABORTED] == 1
    (event,) = [e for e in replaying.events if e.name == n.EVENT_REPLAYED_ABORTED]
    assert event.attributes[n.GEN_AI_TOOL_CALL_ID] == WEATHER.call_id
    assert event.attributes[n.TOOLCALL_ABORT_REASON] == "stream_error"


# -- the SDK behaves the same with and without instrumentation -------------------------------------


SCENARIOS = {
    "completed": lambda: tool_call_script([WEATHER, SHELL, MCP]),
    "incomplete": lambda: tool_call_script(
        [ToolCall(**{**WEATHER.__dict__, "status": "incomplete"})], end="incomplete"
    ),
    "error_event": lambda: tool_call_script([WEATHER], end="error"),
    "nested_error": lambda: Script(
        [sse({"type": "error", "error": {"type": "server_error", "message": "boom"}})]
    ),
    "cut": cut_mid_arguments,
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_events_and_exceptions_with_and_without(telemetry, instrument, fake, client, scenario):
    def run() -> tuple[list[Any], Any]:
        fake.enqueue(SCENARIOS[scenario]())
        events, exc = outcome_of(lambda: create(client))
        fake.enqueue(SCENARIOS[scenario]())
        try:
            with client.responses.stream(model=MODEL, input="x") as stream:
                final = stream.get_final_response().to_dict()
        except Exception as helper_exc:
            final = (type(helper_exc), str(helper_exc))
        return [events, type(exc), str(exc) if exc else None], final

    with_instrumentation = run()
    instrument().uninstrument()
    assert run() == with_instrumentation
    assert len(telemetry.spans()) >= 2  # the instrumented runs did record, their inference spans at least


# -- property-based fragmentation ------------------------------------------------------------------


_ids = itertools.count()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.sets(st.integers(min_value=1, max_value=len(WEATHER.arguments) - 1), max_size=25))
def test_any_fragmentation_counts_exactly(telemetry, instrument, fake, client, cuts):
    points = [0, *sorted(cuts), len(WEATHER.arguments)]
    pieces = [WEATHER.arguments[a:b] for a, b in itertools.pairwise(points)]
    call = ToolCall(**{**WEATHER.__dict__, "call_id": f"call_{next(_ids)}", "fragments": pieces})
    fake.enqueue(tool_call_script([call]))
    list(create(client))
    span = next(s for s in telemetry.tool_spans() if s.attributes[n.TOOLCALL_CALL_ID] == call.call_id)
    assert_call(span, call, reason=None)


# -- async -----------------------------------------------------------------------------------------


async def test_async_create_and_helper(telemetry, instrument, fake, aclient):
    fake.enqueue(tool_call_script([WEATHER]), tool_call_script([LOOKUP]))
    stream = await aclient.responses.create(model=MODEL, input="x", stream=True)
    assert [e.type async for e in stream][-1] == "response.completed"
    async with aclient.responses.stream(model=MODEL, input="x") as helper:
        final = await helper.get_final_response()
    assert final.output[0].call_id == LOOKUP.call_id
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason=None)
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason=None)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


async def test_async_helper_close_and_retrieve(telemetry, instrument, fake, aclient):
    fake.enqueue(
        script_for(events_for([WEATHER]), pace=0.001), script_for(events_for([LOOKUP]), starting_after=2)
    )
    async with aclient.responses.stream(model=MODEL, input="x") as helper:
        async for event in helper:
            if event.type == "response.function_call_arguments.delta":
                await helper.close()
                break
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason="closed", delivered=1)
    resumed = await aclient.responses.retrieve(RESPONSE_ID, stream=True, starting_after=2)
    async for _ in resumed:
        pass
    assert_call(span_of(telemetry, "lookup"), LOOKUP, reason=None)


async def test_async_cut_raises_the_sdk_exception(telemetry, instrument, fake, aclient):
    fake.enqueue(cut_mid_arguments(delivered=4), cut_mid_arguments(delivered=4))

    async def drain() -> None:
        async for _ in await aclient.responses.create(model=MODEL, input="x", stream=True):
            pass

    # openai 3.x raises APIConnectionError, earlier releases the transport's own error.
    sdk_raises = await bare_error_async(drain)
    with pytest.raises(sdk_raises) as raised:
        await drain()
    assert type(raised.value) is sdk_raises
    assert_call(span_of(telemetry, "get_weather"), WEATHER, reason="stream_error", delivered=4,
                error_type=error_type_of(raised.value))  # fmt: skip


def test_content_capture_is_opt_in(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]))
    list(create(client))
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in (span_of(telemetry, "get_weather").attributes or {})
    telemetry.exporter.clear()
    instrument(capture_content=True)
    fake.enqueue(tool_call_script([WEATHER]))
    list(create(client))
    assert span_of(telemetry, "get_weather").attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] == WEATHER.arguments
