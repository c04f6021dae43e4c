"""The real anthropic SDK (sync) against the FakeProvider: every outcome and reason of Messages streams,
the helpers, the beta twins, the SDK's own tracing, and behaviour with and without instrumentation."""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from outcomes import assert_outcome
from sdk_compat import dropped_connection, traces_itself

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider, Script
from otel_toolcalls.testing import anthropic as wire
from otel_toolcalls.testing.anthropic import MODEL, WEATHER, Text, ToolUse

# httpx (anthropic 0.x) or httpx2 (1.x on): its exceptions are what a cut connection raises.
SDK_TRACES = traces_itself(anthropic.Anthropic)
needs_sdk_tracing = pytest.mark.skipif(
    not SDK_TRACES, reason=f"anthropic {anthropic.__version__} has no tracing of its own"
)
# The runner's executions are seen from anthropic 1.14 (`_tool_use_span`; docs/SUPPORT.md).
needs_tool_runner = pytest.mark.skipif(
    not SDK_TRACES, reason=f"anthropic {anthropic.__version__}: tool runner executions are not seen"
)

LOOKUP = ToolUse(name="lookup", id="toolu_lookup_02", arguments='{"q": "größe", "n": 12345}')
MESSAGES = [{"role": "user", "content": "weather?"}]


def client(fake: FakeProvider, **options: Any) -> anthropic.Anthropic:
    if SDK_TRACES:
        options.setdefault("open_telemetry", False)
    return anthropic.Anthropic(api_key="test-key", base_url=fake.base_url, max_retries=0, **options)


def create(c: Any, **kwargs: Any) -> Any:
    return c.messages.create(model=MODEL, max_tokens=1024, messages=MESSAGES, stream=True, **kwargs)


def stream(c: Any) -> Any:
    return c.messages.stream(model=MODEL, max_tokens=1024, messages=MESSAGES)


def assert_call(
    span: ReadableSpan,
    *,
    reason: str | None,
    delivered: str | None,
    error_type: str | None = None,
    tool_type: str = "function",
    provider: str = "anthropic",
) -> None:
    attrs = span.attributes or {}
    assert span.kind is SpanKind.INTERNAL
    assert attrs[n.GEN_AI_PROVIDER_NAME] == provider
    assert attrs[n.TOOLCALL_REQUEST_MODEL] == MODEL
    assert attrs[n.TOOLCALL_TOOL_TYPE] == tool_type
    if delivered:
        assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len(delivered.encode("utf-8"))
    else:
        assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == 0
        assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == 0
    assert_outcome(span, reason, error_type)


def by_name(telemetry: Any) -> dict[str, ReadableSpan]:
    return {s.attributes[n.TOOLCALL_TOOL_NAME]: s for s in telemetry.tool_spans()}


def inference(telemetry: Any) -> ReadableSpan:
    span = telemetry.one("chat ")
    assert span.kind is SpanKind.CLIENT
    for tool in telemetry.tool_spans():
        assert tool.parent is not None and tool.parent.span_id == span.context.span_id
    return span


# -- completed ---------------------------------------------------------------------------------------


def test_create_for_loop_completes_every_tool_block(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    fake.enqueue(wire.tool_use_script([Text("Let me check."), WEATHER, LOOKUP]))
    events = [e.type for e in create(client(fake))]
    assert events[-1] == "message_stop"

    calls = by_name(telemetry)
    assert_call(calls["get_weather"], reason=None, delivered=WEATHER.arguments)
    assert_call(calls["lookup"], reason=None, delivered=LOOKUP.arguments)
    weather = calls["get_weather"].attributes or {}
    assert weather[n.TOOLCALL_CALL_ID] == "toolu_weather_01"
    assert weather[n.TOOLCALL_INDEX] == 1
    assert weather[n.TOOLCALL_ARGUMENTS_DELTAS] == len(WEATHER.pieces())
    assert calls["get_weather"].name == "tool_call get_weather"
    # Ended at its own block stop, before the next block started.
    assert calls["get_weather"].end_time <= calls["lookup"].start_time

    span = inference(telemetry)
    attrs = span.attributes or {}
    assert attrs[n.GEN_AI_RESPONSE_ID] == "msg_fake_01"
    assert attrs[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert attrs[n.TOOLCALL_COUNT] == 2
    assert attrs[n.TOOLCALL_OUTCOME] == "completed"
    assert attrs[n.SERVER_ADDRESS] == "127.0.0.1"
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_next_and_with_block(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER]))
    with create(client(fake)) as s:
        first = next(s)
        assert first.type == "message_start"
        rest = []
        while True:
            try:
                rest.append(next(s))
            except StopIteration:
                break
    assert rest[-1].type == "message_stop"
    assert_call(telemetry.tool_spans()[0], reason=None, delivered=WEATHER.arguments)
    assert (inference(telemetry).attributes or {})[n.TOOLCALL_OUTCOME] == "completed"


def test_server_and_mcp_tool_use_are_extensions(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    server = ToolUse(name="web_search", id="srvtoolu_01", type="server_tool_use", arguments='{"query": "x"}')
    mcp = ToolUse(name="fetch", id="mcptoolu_01", type="mcp_tool_use", arguments='{"url": "y"}')
    fake.enqueue(wire.tool_use_script([server, mcp], stop_reason="end_turn"))
    for _ in client(fake).beta.messages.create(
        model=MODEL, max_tokens=1024, messages=MESSAGES, stream=True, betas=["mcp-client-2025-04-04"]
    ):
        pass
    calls = by_name(telemetry)
    assert_call(calls["web_search"], reason=None, delivered=server.arguments, tool_type="extension")
    assert_call(calls["fetch"], reason=None, delivered=mcp.arguments, tool_type="extension")
    assert (calls["fetch"].attributes or {})[n.TOOLCALL_CALL_ID] == "mcptoolu_01"


# -- stop reasons ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stop_reason", ["max_tokens", "model_context_window_exceeded"])
def test_token_limit_truncates_the_last_tool_block_at_its_stop_time(
    telemetry: Any, instrument: Any, fake: FakeProvider, stop_reason: str
) -> None:
    fake.enqueue(wire.tool_use_script([LOOKUP, WEATHER], stop_reason=stop_reason, pace=0.01))
    seen: dict[str, int] = {}
    for event in create(client(fake)):
        seen.setdefault(event.type + str(getattr(event, "index", "")), time.time_ns())
    calls = by_name(telemetry)
    assert_call(calls["lookup"], reason=None, delivered=LOOKUP.arguments)
    assert_call(calls["get_weather"], reason="truncated", delivered=WEATHER.arguments)
    # The span ends at the block stop, although its outcome was known only at message_delta.
    assert calls["get_weather"].end_time < seen["message_delta"]
    span = inference(telemetry)
    assert (span.attributes or {})[n.TOOLCALL_ABORT_REASON] == "truncated"
    assert (span.attributes or {})[n.GEN_AI_RESPONSE_FINISH_REASONS] == (stop_reason,)
    assert telemetry.calls_by_outcome() == {("completed", None): 1, ("aborted", "truncated"): 1}


def test_a_text_block_after_the_tool_block_saves_it_from_the_limit(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER, Text("and now the answer is")], stop_reason="max_tokens"))
    list(create(client(fake)))
    assert_call(telemetry.tool_spans()[0], reason=None, delivered=WEATHER.arguments)


def test_body_ending_without_message_stop_leaves_open_calls_incomplete(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    open_block = ToolUse(name="get_weather", id="toolu_w", arguments=WEATHER.arguments, stop=False)
    fake.enqueue(wire.script_for(wire.events_for([LOOKUP, open_block], stop_reason=None, final=False)))
    list(create(client(fake)))
    calls = by_name(telemetry)
    assert_call(calls["lookup"], reason=None, delivered=LOOKUP.arguments)
    assert_call(calls["get_weather"], reason="incomplete", delivered=WEATHER.arguments)
    assert (inference(telemetry).attributes or {})[n.TOOLCALL_ABORT_REASON] == "incomplete"


# -- errors ------------------------------------------------------------------------------------------


def error_script(cut: bool) -> Script:
    events = wire.events_for([LOOKUP, WEATHER], final=False, stop_reason=None)
    # The connection drops, or the server sends an error event, during get_weather's arguments.
    keep = len(events) - 4
    if cut:
        return wire.script_for(events, cut_after=keep)
    return wire.script_for([*events[:keep], wire.error()])


def run_to_error(c: Any) -> tuple[list[str], BaseException]:
    events: list[str] = []
    with pytest.raises(Exception) as caught:
        for event in create(c):
            events.append(event.type)
    return events, caught.value


@pytest.mark.parametrize("cut", [True, False], ids=["connection_dropped", "error_event"])
def test_stream_errors_keep_the_sdk_exception(
    telemetry: Any, fake: FakeProvider, instrument: Any, cut: bool
) -> None:
    fake.enqueue(error_script(cut), error_script(cut))
    instrumented_events, instrumented = run_to_error(client(fake))
    instrument().uninstrument()
    bare_events, bare = run_to_error(client(fake))
    assert instrumented_events == bare_events
    assert type(instrumented) is type(bare) and str(instrumented) == str(bare)
    expected = dropped_connection(anthropic, type(bare)) if cut else f"anthropic.{type(bare).__name__}"
    if not cut:
        assert isinstance(instrumented, anthropic.APIStatusError)

    calls = by_name(telemetry)
    # lookup stopped before the failure: completed at its block stop (TELEMETRY.md 6).
    assert_call(calls["lookup"], reason=None, delivered=LOOKUP.arguments)
    delivered = "".join(WEATHER.pieces()[:-3])
    assert_call(calls["get_weather"], reason="stream_error", delivered=delivered, error_type=expected)
    span = inference(telemetry)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[n.ERROR_TYPE] == expected
    points = [p for p in telemetry.points("toolcall.calls") if p.attributes["toolcall.outcome"] == "aborted"]
    assert [p.attributes["error.type"] for p in points] == [expected]


def test_failed_request_makes_a_failed_inference_span(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    fake.enqueue(Script([body], status=529, content_type="application/json"))
    with pytest.raises(anthropic.APIStatusError):
        create(client(fake))
    span = telemetry.one("chat ")
    assert span.status.status_code is StatusCode.ERROR
    assert telemetry.tool_spans() == []


# -- closed, abandoned -------------------------------------------------------------------------------


def test_with_exit_mid_arguments_is_closed(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER]))
    with create(client(fake)) as s:
        for event in s:
            if event.type == "content_block_delta":
                break
    assert_call(telemetry.tool_spans()[0], reason="closed", delivered=WEATHER.pieces()[0])


# -- messages.stream() helpers -----------------------------------------------------------------------


def helper_result(c: Any, how: str) -> Any:
    with stream(c) as s:
        if how == "text_stream":
            return "".join(s.text_stream)
        if how == "get_final_message":
            return s.get_final_message().model_dump()
        if how == "get_final_text":
            return s.get_final_text()
        if how == "until_done":
            s.until_done()
            return s.current_message_snapshot.model_dump()
        return [e.type for e in s]


@pytest.mark.parametrize(
    "how", ["text_stream", "get_final_message", "get_final_text", "until_done", "iterate"]
)
def test_stream_helpers_complete_and_return_the_same(
    telemetry: Any, instrument: Any, fake: FakeProvider, how: str
) -> None:
    blocks = [WEATHER, Text("Sunny, 21 °C.")]
    fake.enqueue(
        wire.tool_use_script(blocks, stop_reason="end_turn"),
        wire.tool_use_script(blocks, stop_reason="end_turn"),
    )
    instrumented = helper_result(client(fake), how)
    instrument().uninstrument()
    assert instrumented == helper_result(client(fake), how)
    assert len(telemetry.tool_spans()) == 1
    assert_call(telemetry.tool_spans()[0], reason=None, delivered=WEATHER.arguments)
    assert (inference(telemetry).attributes or {})[n.TOOLCALL_OUTCOME] == "completed"


def test_stream_helper_break_is_closed(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER]))
    with stream(client(fake)) as s:
        for event in s:
            if event.type == "input_json":
                break
    assert_call(telemetry.tool_spans()[0], reason="closed", delivered=WEATHER.pieces()[0])


def test_beta_stream_helper_truncated(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER], stop_reason="max_tokens"))
    with client(fake).beta.messages.stream(model=MODEL, max_tokens=1024, messages=MESSAGES) as s:
        message = s.get_final_message()
    assert message.stop_reason == "max_tokens"
    assert_call(telemetry.tool_spans()[0], reason="truncated", delivered=WEATHER.arguments)


# -- raw responses -----------------------------------------------------------------------------------


def test_with_raw_response_parse(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER]))
    raw = client(fake).messages.with_raw_response.create(
        model=MODEL, max_tokens=1024, messages=MESSAGES, stream=True
    )
    assert [e.type for e in raw.parse()][-1] == "message_stop"
    assert_call(telemetry.tool_spans()[0], reason=None, delivered=WEATHER.arguments)
    inference(telemetry)


def test_with_streaming_response_parse(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER], stop_reason="refusal"))
    with client(fake).beta.messages.with_streaming_response.create(
        model=MODEL, max_tokens=1024, messages=MESSAGES, stream=True
    ) as response:
        list(response.parse())
    assert_call(telemetry.tool_spans()[0], reason="filtered", delivered=WEATHER.arguments)


# -- the SDK's own tracing ---------------------------------------------------------------------------


@needs_sdk_tracing
def test_sdk_span_is_the_inference_span(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([LOOKUP, WEATHER], stop_reason="max_tokens"))
    c = client(fake, open_telemetry={"tracer_provider": telemetry.tracer_provider})
    with create(c) as s:
        list(s)
    names = [span.name for span in telemetry.spans()]
    assert not [name for name in names if name.startswith("chat ")], names
    sdk_span = telemetry.one("anthropic.messages.create")
    assert sdk_span.kind is SpanKind.CLIENT
    calls = by_name(telemetry)
    for call in calls.values():
        assert call.parent is not None and call.parent.span_id == sdk_span.context.span_id
    assert_call(calls["get_weather"], reason="truncated", delivered=WEATHER.arguments)
    assert_call(calls["lookup"], reason=None, delivered=LOOKUP.arguments)
    # Written at message_stop, while the SDK's span was still open (the SDK ends it with the body).
    attrs = sdk_span.attributes or {}
    assert attrs[n.TOOLCALL_COUNT] == 2
    assert attrs[n.TOOLCALL_OUTCOME] == "aborted" and attrs[n.TOOLCALL_ABORT_REASON] == "truncated"


@needs_sdk_tracing
def test_sdk_span_failed_request_gets_no_second_span(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    fake.enqueue(Script([body], status=529, content_type="application/json"))
    c = client(fake, open_telemetry={"tracer_provider": telemetry.tracer_provider})
    with pytest.raises(anthropic.APIStatusError):
        create(c)
    assert [s.name for s in telemetry.spans()] == ["anthropic.messages.create"]


# -- other client classes ----------------------------------------------------------------------------


def test_vertex_client(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER]))
    vertex = anthropic.AnthropicVertex(
        region="us-east5",
        project_id="proj",
        access_token="token",
        base_url=fake.base_url,
        max_retries=0,
        **({"open_telemetry": False} if SDK_TRACES else {}),
    )
    list(create(vertex))
    assert fake.requests[-1].path.endswith(":streamRawPredict")
    assert_call(telemetry.tool_spans()[0], reason=None, delivered=WEATHER.arguments, provider="gcp.vertex_ai")
    assert (inference(telemetry).attributes or {})[n.GEN_AI_PROVIDER_NAME] == "gcp.vertex_ai"


# -- fragmentation -----------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    arguments=st.text(min_size=1, max_size=40).map(lambda t: '{"v": ' + repr(t)[1:-1].join('""') + "}"),
    cuts=st.lists(st.integers(min_value=1, max_value=60), max_size=8),
)
def test_any_fragmentation_counts_exactly(
    telemetry: Any, instrument: Any, fake: FakeProvider, arguments: str, cuts: list[int]
) -> None:
    telemetry.exporter.clear()
    points = sorted({c for c in cuts if c < len(arguments)})
    pieces = [arguments[a:b] for a, b in zip([0, *points], [*points, len(arguments)], strict=True)]
    call = ToolUse(name="prop", id="toolu_prop", arguments=arguments, fragments=pieces)
    fake.enqueue(wire.tool_use_script([call]))
    list(create(client(fake)))
    attrs = telemetry.tool_spans()[-1].attributes or {}
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(pieces)
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len(arguments.encode("utf-8"))


# -- the beta tool runner ----------------------------------------------------------------------------

RUNNER_CALL = ToolUse(name="get_weather", id="toolu_runner_01", arguments='{"location": "Zürich"}')


def tracing(telemetry: Any, on: bool) -> dict[str, Any]:
    if on:
        return {"open_telemetry": {"tracer_provider": telemetry.tracer_provider}}
    return {}


def runner_for(c: Any, ran: list[str]) -> Any:
    @anthropic.beta_tool
    def get_weather(location: str) -> str:
        """The weather at a location."""
        ran.append(location)
        return f"sunny in {location}"

    return c.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, messages=MESSAGES, tools=[get_weather], stream=True
    )


@needs_tool_runner
@pytest.mark.parametrize("sdk_tracing", [False, pytest.param(True, marks=needs_sdk_tracing)])
def test_tool_runner_links_the_execution_to_its_completed_call(
    telemetry: Any, instrument: Any, fake: FakeProvider, sdk_tracing: bool
) -> None:
    fake.enqueue(
        wire.tool_use_script([RUNNER_CALL]),
        wire.tool_use_script([Text("It is sunny.")], stop_reason="end_turn"),
    )
    ran: list[str] = []
    final = runner_for(client(fake, **tracing(telemetry, sdk_tracing)), ran).until_done()
    assert ran == ["Zürich"] and final.stop_reason == "end_turn"

    call = telemetry.tool_spans()[0]
    assert_call(call, reason=None, delivered=RUNNER_CALL.arguments)
    executions = [
        s for s in telemetry.spans() if (s.attributes or {}).get(n.GEN_AI_OPERATION_NAME) == "execute_tool"
    ]
    assert len(executions) == 1, [s.name for s in telemetry.spans()]
    execution = executions[0]
    if sdk_tracing:
        assert execution.name == "anthropic.custom_tool_use get_weather"
    else:
        assert execution.name == "execute_tool get_weather"
    attrs = execution.attributes or {}
    assert attrs[n.TOOLCALL_OUTCOME] == "completed"
    assert attrs[n.GEN_AI_TOOL_CALL_ID] == "toolu_runner_01"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert execution.links[0].attributes[n.GEN_AI_ATTRIBUTION_LINK_TYPE] == n.LINK_TYPE_CAUSED_BY_GENERATION


@needs_tool_runner
@pytest.mark.parametrize("sdk_tracing", [False, pytest.param(True, marks=needs_sdk_tracing)])
def test_tool_runner_strict_refuses_a_truncated_call(
    telemetry: Any, instrument: Any, fake: FakeProvider, sdk_tracing: bool
) -> None:
    instrument(strict=True)
    fake.enqueue(wire.tool_use_script([RUNNER_CALL], stop_reason="max_tokens"))
    ran: list[str] = []
    runner = runner_for(client(fake, **tracing(telemetry, sdk_tracing)), ran)
    # The runner stops on max_tokens without running the call; asking it to run the calls runs them all.
    assert runner.until_done().stop_reason == "max_tokens"
    with pytest.raises(IncompleteToolCallError) as refused:
        runner.generate_tool_call_response()
    assert ran == [] and refused.value.call_id == "toolu_runner_01" and refused.value.reason == "truncated"

    assert_call(telemetry.tool_spans()[0], reason="truncated", delivered=RUNNER_CALL.arguments)
    executions = [
        s for s in telemetry.spans() if (s.attributes or {}).get(n.GEN_AI_OPERATION_NAME) == "execute_tool"
    ]
    assert len(executions) == 1
    attrs = executions[0].attributes or {}
    assert attrs[n.TOOLCALL_OUTCOME] == "aborted"
    assert attrs[n.ERROR_TYPE] == "otel_toolcalls.IncompleteToolCallError"
    assert executions[0].status.status_code is StatusCode.ERROR
    assert executions[0].links == ()


@needs_tool_runner
def test_tool_runner_error_result_fails_the_execution_and_its_duration_point(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    # The runner answers the model with an `is_error` result and raises nothing: the execution
    # span and the gen_ai.execute_tool.duration point both say the execution failed.
    fake.enqueue(
        wire.tool_use_script([RUNNER_CALL]),
        wire.tool_use_script([Text("It failed.")], stop_reason="end_turn"),
    )

    @anthropic.beta_tool
    def get_weather(location: str) -> str:
        """The weather at a location."""
        raise LookupError(location)

    runner = client(fake).beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, messages=MESSAGES, tools=[get_weather], stream=True
    )
    assert runner.until_done().stop_reason == "end_turn"
    (execution,) = [s for s in telemetry.spans() if s.name == "execute_tool get_weather"]
    assert execution.attributes[n.ERROR_TYPE] == "tool_error"
    assert execution.status.status_code is StatusCode.ERROR
    assert execution.attributes[n.TOOLCALL_OUTCOME] == "completed"
    (point,) = telemetry.points(n.METRIC_EXECUTE_TOOL_DURATION)
    assert point.attributes[n.ERROR_TYPE] == "tool_error"


def _message_body(content: list[dict[str, Any]], stop_reason: str) -> Script:
    message = {"id": "msg_whole_1", "type": "message", "role": "assistant", "model": MODEL,
               "content": content, "stop_reason": stop_reason, "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip
    return Script([json.dumps(message).encode()], content_type="application/json")


@needs_tool_runner
@pytest.mark.parametrize("sdk_tracing", [False, pytest.param(True, marks=needs_sdk_tracing)])
def test_tool_runner_without_streaming_leaves_the_sdk_span_alone(
    telemetry: Any, instrument: Any, fake: FakeProvider, sdk_tracing: bool
) -> None:
    """A call the package never saw streamed: the SDK's own execution span gets no toolcall.outcome
    (``unknown`` there would only say the request was not streamed); the package's own execute_tool
    span, made where the SDK traces nothing, says ``unknown`` (TELEMETRY section 3)."""
    tool_use = {
        "type": "tool_use",
        "id": "toolu_whole_01",
        "name": "get_weather",
        "input": {"location": "Zürich"},
    }
    fake.enqueue(
        _message_body([tool_use], "tool_use"), _message_body([{"type": "text", "text": "Sunny."}], "end_turn")
    )
    ran: list[str] = []

    @anthropic.beta_tool
    def get_weather(location: str) -> str:
        """The weather at a location."""
        ran.append(location)
        return "sunny"

    c = client(fake, **tracing(telemetry, sdk_tracing))
    runner = c.beta.messages.tool_runner(model=MODEL, max_tokens=1024, messages=MESSAGES, tools=[get_weather])
    assert runner.until_done().stop_reason == "end_turn" and ran == ["Zürich"]
    (execution,) = [
        s for s in telemetry.spans() if (s.attributes or {}).get(n.GEN_AI_OPERATION_NAME) == "execute_tool"
    ]
    attrs = execution.attributes or {}
    assert execution.links == ()
    if sdk_tracing:
        assert execution.name == "anthropic.custom_tool_use get_weather"
        assert n.TOOLCALL_OUTCOME not in attrs and n.TOOLCALL_ABORT_REASON not in attrs
    else:
        assert execution.name == "execute_tool get_weather"
        assert attrs[n.TOOLCALL_OUTCOME] == "unknown"
    assert telemetry.tool_spans() == []
