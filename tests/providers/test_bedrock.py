"""A real boto3 ``bedrock-runtime`` client against the FakeProvider writing AWS event-stream frames."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest
import sim_clock
from botocore.exceptions import EventStreamError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from outcomes import assert_outcome, bare_rerun, caller_saw
from urllib3.exceptions import ProtocolError

from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider, Script, eventstream, split_at
from otel_toolcalls.testing.bedrock import (
    MODEL,
    TIME,
    WEATHER,
    Text,
    ToolUse,
    exception_frame,
    frames_for,
    rechunk,
    script_for,
    tool_use_script,
)
from otel_toolcalls.testing.bedrock import client as bedrock_client

MESSAGES = [{"role": "user", "content": [{"text": "Weather in Zürich?"}]}]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    # One server for the module: stopping one costs half a second (serve_forever's poll).
    with FakeProvider() as provider:
        yield provider


@pytest.fixture(autouse=True)
def _fresh(fake: FakeProvider) -> Iterator[None]:
    fake.requests.clear()
    yield
    leftover = fake.next_script(fake.requests[-1]) if fake.requests else None
    assert leftover is None or leftover.status == 500, "a queued script was not used"


@pytest.fixture(scope="module")
def client(fake: FakeProvider) -> Any:
    return bedrock_client(fake.base_url)


def converse(client: Any) -> Any:
    return client.converse_stream(modelId=MODEL, messages=MESSAGES)["stream"]


def delivered(events: list[dict[str, Any]], index: int) -> str:
    """The argument text the SDK yielded for block ``index``."""
    return "".join(
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in events
        if "contentBlockDelta" in e
        and e["contentBlockDelta"]["contentBlockIndex"] == index
        and "toolUse" in e["contentBlockDelta"]["delta"]
    )


def assert_call(
    span: ReadableSpan,
    call: ToolUse,
    *,
    index: int,
    text: str,
    reason: str | None = None,
    error_type: str | None = None,
) -> None:
    attrs = span.attributes or {}
    assert span.name == f"tool_call {call.name}"
    assert span.kind is SpanKind.INTERNAL
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
    assert attrs[n.TOOLCALL_REQUEST_MODEL] == MODEL
    assert attrs[n.TOOLCALL_TOOL_NAME] == call.name
    assert attrs[n.TOOLCALL_CALL_ID] == call.id
    assert attrs[n.TOOLCALL_TOOL_TYPE] == "function"
    assert attrs[n.TOOLCALL_INDEX] == index
    if text == call.input:
        assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(call.pieces())
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len(text.encode("utf-8"))
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs
    assert_outcome(span, reason, error_type)


def assert_deltas(span: ReadableSpan, events: list[dict[str, Any]], index: int) -> None:
    fragments = [
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in events
        if "contentBlockDelta" in e and e["contentBlockDelta"]["contentBlockIndex"] == index
    ]
    attrs = span.attributes or {}
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len([f for f in fragments if f])
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(fragments).encode("utf-8"))


def inference(telemetry: Any, *, reason: str | None, error_type: str | None = None) -> ReadableSpan:
    span: ReadableSpan = telemetry.one("chat ")
    attrs = span.attributes or {}
    assert span.name == f"chat {MODEL}"
    assert span.kind is SpanKind.CLIENT
    assert attrs[n.GEN_AI_OPERATION_NAME] == "chat"
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
    assert attrs[n.GEN_AI_REQUEST_MODEL] == MODEL
    assert attrs[n.SERVER_ADDRESS] == "127.0.0.1"
    assert attrs[n.GEN_AI_REQUEST_STREAM] is True
    if reason is None:
        assert attrs[n.TOOLCALL_OUTCOME] == "completed"
        assert span.status.status_code is StatusCode.UNSET
    else:
        assert attrs[n.TOOLCALL_OUTCOME] == "aborted"
        assert attrs[n.TOOLCALL_ABORT_REASON] == reason
    if error_type is not None:
        assert attrs[n.ERROR_TYPE] == error_type
        assert span.status.status_code is StatusCode.ERROR
    for tool in telemetry.tool_spans():
        assert tool.parent is not None and tool.parent.span_id == span.context.span_id
    return span


def test_single_call_completes(instrument: Any, telemetry: Any, client: Any, fake: Any) -> None:
    fake.enqueue(tool_use_script([WEATHER]))
    events = list(converse(client))

    (span,) = telemetry.tool_spans()
    assert delivered(events, 0) == WEATHER.input
    assert_call(span, WEATHER, index=0, text=WEATHER.input)
    assert (span.attributes or {})[n.TOOLCALL_ARGUMENTS_DELTAS] == len(WEATHER.pieces()) > 5
    chat = inference(telemetry, reason=None)
    attrs = chat.attributes or {}
    assert attrs[n.SERVER_PORT] == fake.port
    assert attrs[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert attrs[n.TOOLCALL_COUNT] == 1
    assert attrs[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] > 0
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    (point,) = telemetry.points("toolcall.calls")
    assert point.attributes[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
    assert point.attributes[n.GEN_AI_REQUEST_MODEL] == MODEL
    assert point.attributes[n.GEN_AI_TOOL_NAME] == "get_weather"
    assert fake.requests[0].path.endswith("/converse-stream")


def test_parallel_calls_with_frames_split_across_writes(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    fake.enqueue(tool_use_script([Text("Let me check."), WEATHER, TIME], split=True, pace=0.001))
    events = list(converse(client))

    spans = {s.attributes[n.TOOLCALL_TOOL_NAME]: s for s in telemetry.tool_spans()}  # type: ignore[index]
    assert_call(spans["get_weather"], WEATHER, index=1, text=WEATHER.input)
    assert_call(spans["get_time"], TIME, index=2, text=TIME.input)
    assert delivered(events, 2) == TIME.input
    assert spans["get_weather"].end_time <= spans["get_time"].start_time  # type: ignore[operator]
    assert (inference(telemetry, reason=None).attributes or {})[n.TOOLCALL_COUNT] == 2
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_server_tool_use_is_an_extension(instrument: Any, telemetry: Any, client: Any, fake: Any) -> None:
    if "type" not in client.meta.service_model.shape_for("ToolUseBlockStart").members:
        pytest.skip("this botocore's model has no ToolUseBlockStart.type: it drops the member")
    search = ToolUse(name="web_search", id="srvtoolu_1", input='{"q": "x"}', type="server_tool_use")
    fake.enqueue(tool_use_script([search]))
    list(converse(client))
    (span,) = telemetry.tool_spans()
    assert (span.attributes or {})[n.TOOLCALL_TOOL_TYPE] == "extension"


def test_max_tokens_truncates_the_last_block_ended_at_its_stop(
    instrument: Any, telemetry: Any, client: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stop reason comes after the block stop; the span must end at the block stop. On the
    # simulated clock the stop reason reaches the consumer exactly 50 ms after the block stop.
    clock = sim_clock.install(monkeypatch)
    fake.enqueue(tool_use_script([WEATHER], stop_reason="max_tokens"))
    seen: dict[str, int] = {}
    for event in converse(client):
        kind = next(iter(event))
        seen.setdefault(kind, clock())
        if kind == "contentBlockStop":
            clock.advance(0.05)

    (span,) = telemetry.tool_spans()
    assert_call(span, WEATHER, index=0, text=WEATHER.input, reason="truncated")
    assert span.end_time == seen["contentBlockStop"]
    assert seen["messageStop"] - span.end_time == 50_000_000
    inference(telemetry, reason="truncated")
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}


def test_context_window_truncates_an_open_block(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    frames = frames_for([WEATHER], stop_reason="model_context_window_exceeded", stop_last_block=False)
    fake.enqueue(script_for(frames))
    events = list(converse(client))
    (span,) = telemetry.tool_spans()
    assert_call(span, WEATHER, index=0, text=delivered(events, 0), reason="truncated")


def test_a_tool_block_followed_by_text_the_limit_cut_is_completed(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    fake.enqueue(tool_use_script([WEATHER, Text("and then")], stop_reason="max_tokens"))
    list(converse(client))
    (span,) = telemetry.tool_spans()
    assert_call(span, WEATHER, index=0, text=WEATHER.input)
    inference(telemetry, reason="truncated")


# guardrail_intervened: test_outcomes_matrix.py::test_filtered[bedrock_converse].
@pytest.mark.parametrize(
    ("stop_reason", "reason"),
    [
        ("content_filtered", "filtered"),
        ("malformed_tool_use", "malformed"),
        ("malformed_model_output", "malformed"),
    ],
)
def test_stop_reasons_that_abort(
    instrument: Any, telemetry: Any, client: Any, fake: Any, stop_reason: str, reason: str
) -> None:
    fake.enqueue(tool_use_script([WEATHER], stop_reason=stop_reason))
    list(converse(client))
    (span,) = telemetry.tool_spans()
    assert_call(span, WEATHER, index=0, text=WEATHER.input, reason=reason)
    chat = inference(telemetry, reason=reason)
    assert (chat.attributes or {})[n.GEN_AI_RESPONSE_FINISH_REASONS] == (stop_reason,)
    assert telemetry.calls_by_outcome() == {("aborted", reason): 1}


@pytest.mark.parametrize(
    "frame",
    [
        exception_frame("modelStreamErrorException", "model failed"),
        exception_frame("throttlingException", "slow down"),
        eventstream.error("InternalFailure", "unmodeled"),
    ],
    ids=["modelStreamErrorException", "throttlingException", "error-message"],
)
def test_exception_frame_mid_arguments_is_a_stream_error(
    instrument: Any, telemetry: Any, client: Any, fake: Any, frame: bytes
) -> None:
    frames = frames_for([WEATHER])
    fake.enqueue(script_for([*frames[:6], frame, *frames[6:]]))
    events: list[dict[str, Any]] = []
    with pytest.raises(EventStreamError):
        for event in converse(client):
            events.append(event)

    (span,) = telemetry.tool_spans()
    assert_deltas(span, events, 0)
    error_type = "botocore.exceptions.EventStreamError"
    assert_call(
        span, WEATHER, index=0, text=delivered(events, 0), reason="stream_error", error_type=error_type
    )
    inference(telemetry, reason="stream_error", error_type=error_type)
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


def test_connection_cut_mid_arguments_is_a_stream_error(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    fake.enqueue(tool_use_script([WEATHER], cut_after=6, cut_inside=True))
    events: list[dict[str, Any]] = []
    with pytest.raises(ProtocolError):
        for event in converse(client):
            events.append(event)

    (span,) = telemetry.tool_spans()
    assert 0 < len(delivered(events, 0)) < len(WEATHER.input)
    assert_deltas(span, events, 0)
    error_type = "urllib3.exceptions.ProtocolError"
    assert_call(
        span, WEATHER, index=0, text=delivered(events, 0), reason="stream_error", error_type=error_type
    )
    inference(telemetry, reason="stream_error", error_type=error_type)


def test_stream_ending_without_message_stop_leaves_open_calls_incomplete(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    frames = frames_for([WEATHER, TIME], stop_reason=None, stop_last_block=False)
    fake.enqueue(script_for(frames))
    list(converse(client))
    spans = {s.attributes[n.TOOLCALL_TOOL_NAME]: s for s in telemetry.tool_spans()}  # type: ignore[index]
    # The first block stopped: completed though nothing settled it (TELEMETRY.md section 6).
    assert_call(spans["get_weather"], WEATHER, index=0, text=WEATHER.input)
    assert_call(spans["get_time"], TIME, index=1, text=TIME.input, reason="incomplete")
    inference(telemetry, reason="incomplete")


def test_break_then_a_second_loop_is_one_stream(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    fake.enqueue(tool_use_script([WEATHER]))
    stream = converse(client)
    events: list[dict[str, Any]] = []
    for event in stream:
        events.append(event)
        if len(events) == 4:
            break
    # The break closed that loop's generator (refcounting, right here): not the stream's end.
    assert telemetry.tool_spans() == []
    assert [s.name for s in telemetry.spans()] == []
    events.extend(stream)

    assert delivered(events, 0) == WEATHER.input
    (span,) = telemetry.tool_spans()
    assert_call(span, WEATHER, index=0, text=WEATHER.input)
    inference(telemetry, reason=None)


def test_dropped_stream_is_abandoned(instrument: Any, telemetry: Any, client: Any, fake: Any) -> None:
    fake.enqueue(tool_use_script([WEATHER]))
    response = client.converse_stream(modelId=MODEL, messages=MESSAGES)
    events: list[dict[str, Any]] = []
    for event in response["stream"]:
        events.append(event)
        if len(events) == 5:
            break
    assert telemetry.tool_spans() == []
    del response, event
    gc.collect()

    (span,) = telemetry.tool_spans()
    assert_deltas(span, events, 0)
    assert_call(span, WEATHER, index=0, text=delivered(events, 0), reason="abandoned")
    inference(telemetry, reason="abandoned")


def test_request_rejected_before_the_stream(instrument: Any, telemetry: Any, client: Any, fake: Any) -> None:
    body = json.dumps({"message": "Too many requests"}).encode()
    fake.enqueue(
        Script(
            [body],
            status=429,
            content_type="application/json",
            headers={"x-amzn-ErrorType": "ThrottlingException"},
        )
    )
    with pytest.raises(client.exceptions.ThrottlingException):
        converse(client)
    inference(telemetry, reason="stream_error", error_type="botocore.errorfactory.ThrottlingException")
    assert telemetry.tool_spans() == []


def test_parented_to_the_current_span_without_inference_spans(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    instrument(inference_spans=False)
    fake.enqueue(tool_use_script([WEATHER]))
    tracer = telemetry.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent turn") as turn:
        stream = converse(client)
    list(stream)
    (span,) = telemetry.tool_spans()
    assert span.parent is not None and span.parent.span_id == turn.get_span_context().span_id
    assert [s.name for s in telemetry.spans() if s.name.startswith("chat")] == []


def test_inference_span_is_a_child_of_the_request_context(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    fake.enqueue(tool_use_script([WEATHER]))
    tracer = telemetry.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent turn") as turn:
        stream = converse(client)
    assert trace.get_current_span() is not turn
    list(stream)
    chat = inference(telemetry, reason=None)
    assert chat.parent is not None and chat.parent.span_id == turn.get_span_context().span_id


SCENARIOS = {
    "completed": lambda: tool_use_script([Text("hi"), WEATHER, TIME], split=True),
    "exception": lambda: script_for([*frames_for([WEATHER])[:5], exception_frame()]),
    "cut": lambda: tool_use_script([WEATHER], cut_after=5, cut_inside=True),
}


def run(client: Any, fake: Any, scenario: str) -> tuple[list[Any], Any]:
    fake.enqueue(SCENARIOS[scenario]())
    events: list[Any] = []
    try:
        for event in converse(client):
            events.append(event)
    except Exception as exc:
        return events, caller_saw(exc)
    return events, None


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_what_the_sdk_yields_and_raises_is_unchanged(
    instrument: Any, telemetry: Any, client: Any, fake: Any, scenario: str
) -> None:
    traced = run(client, fake, scenario)
    with bare_rerun(instrument, telemetry):
        bare = run(client, fake, scenario)
    assert traced == bare
    assert (traced[1] is None) == (scenario == "completed")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_fragmentation_of_the_wire_counts_the_same(
    instrument: Any, telemetry: Any, client: Any, fake: Any, data: st.DataObject
) -> None:
    characters = st.characters(blacklist_categories=("Cs",))
    # A JSON object, as toolUse input is (a cut one is unterminated: test_wire_lies.py).
    value = data.draw(st.text(characters, max_size=40), label="value")
    arguments = json.dumps({"v": value}, ensure_ascii=False)
    cuts = data.draw(st.lists(st.integers(1, len(arguments)), max_size=8), label="cuts")
    call = ToolUse(name="lookup", id="tooluse_p", input=arguments, fragments=split_at(arguments, cuts))
    frames = frames_for([call])
    total = sum(map(len, frames))
    points = data.draw(st.lists(st.integers(1, total - 1), max_size=20), label="socket cuts")
    telemetry.exporter.clear()
    fake.enqueue(Script(rechunk(frames, points), content_type=eventstream.CONTENT_TYPE))

    events = list(converse(client))

    assert delivered(events, 0) == arguments
    (span,) = telemetry.tool_spans()
    attrs = span.attributes or {}
    assert attrs[n.TOOLCALL_OUTCOME] == "completed"
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(call.fragments)
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len(arguments.encode("utf-8"))


def test_captured_arguments_are_the_raw_input_as_received(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    instrument(capture_content=True)
    fake.enqueue(tool_use_script([WEATHER], split=True))
    list(converse(client))
    (span,) = telemetry.tool_spans()
    assert (span.attributes or {})[n.GEN_AI_TOOL_CALL_ARGUMENTS] == WEATHER.input


def test_a_stream_held_back_and_burst_is_buffered(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    # The window is timed at the consumer, which a loaded machine can deschedule for longer than
    # the default 10 ms inside a real burst (test_buffered_streams.py): widened to 1 s.
    instrument(buffered_window_ms=1000)
    fake.enqueue(tool_use_script([WEATHER], first_byte_delay=0.3, burst=True))
    list(converse(client))
    chat = inference(telemetry, reason=None)
    assert (chat.attributes or {})[n.TOOLCALL_STREAM_BUFFERED] is True
    assert (chat.attributes or {})[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] >= 0.3
    assert sum(p.value for p in telemetry.points("toolcall.stream.buffered")) == 1


def test_the_sdks_stream_keeps_its_own_attributes(
    instrument: Any, telemetry: Any, client: Any, fake: Any
) -> None:
    """The package's state is its proxy's (issue 13): botocore's EventStream keeps its own raw
    generator and its class's _parse_event; nothing is written into the SDK object."""
    fake.enqueue(tool_use_script([WEATHER]))
    stream = converse(client)
    assert stream._event_generator.gi_code.co_name == "_create_raw_event_generator"
    assert "_parse_event" not in vars(stream)
    assert sorted(vars(stream)) == ["_event_generator", "_operation_name", "_output_shape", "_parser",
                                    "_raw_stream"]  # fmt: skip
    list(stream)
    (span,) = telemetry.tool_spans()
    assert_call(span, WEATHER, index=0, text=WEATHER.input)
