"""``invoke_model_with_response_stream`` on a real boto3 client against the fake provider writing
AWS event-stream ``chunk`` frames whose base64 ``bytes`` are the model family's own JSON events:
Anthropic Messages events for Claude, Converse events for Amazon Nova.

The outcomes every provider shares also run through the outcome matrix (driver ``bedrock_invoke``);
here: what is specific to the Invoke API (the family told by the chunk, the chunk envelope, the
exception events of its ResponseStream, one stream read by several loops) and the execution link.
"""

from __future__ import annotations

import gc
import inspect
import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.eventstream import EventStream
from botocore.exceptions import EventStreamError
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from outcomes import assert_outcome, bare_rerun, caller_saw
from urllib3.exceptions import ProtocolError

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as claude
from otel_toolcalls.testing import openai_chat as chat
from otel_toolcalls.testing.bedrock import (
    NOVA_MODEL,
    OPENAI_MODEL,
    WEATHER,
    anthropic_chunks,
    chunk,
    exception_frame,
    nova_chunks,
    openai_chunks,
    script_for,
)
from otel_toolcalls.testing.bedrock import client as bedrock_client

CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0"
BODY = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": []})
CALL = claude.WEATHER
TIME = claude.ToolUse(name="get_time", arguments='{"timezone": "Europe/Zürich"}', id="toolu_time_02")


@pytest.fixture(scope="module")
def client(shared_provider: FakeProvider) -> Any:
    return bedrock_client(shared_provider.base_url)


def invoke(client: Any, model: str = CLAUDE) -> Any:
    return client.invoke_model_with_response_stream(modelId=model, body=BODY)["body"]


def claude_script(blocks: list[Any], *, stop_reason: str | None = "tool_use", **options: Any) -> Any:
    return script_for(anthropic_chunks(claude.events_for(blocks, stop_reason=stop_reason)), **options)


def decoded(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(e["chunk"]["bytes"]) for e in events]


def delivered(events: list[dict[str, Any]], index: int) -> list[str]:
    """The argument fragments of block ``index`` the SDK yielded (Claude's input_json_delta)."""
    return [
        p["delta"]["partial_json"]
        for p in decoded(events)
        if p["type"] == "content_block_delta" and p["index"] == index and "partial_json" in p["delta"]
    ]


def inference(telemetry: Any, model: str = CLAUDE) -> ReadableSpan:
    span: ReadableSpan = telemetry.one("chat ")
    attrs = span.attributes or {}
    assert span.name == f"chat {model}" and span.kind is SpanKind.CLIENT
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
    assert attrs[n.GEN_AI_REQUEST_MODEL] == model
    assert attrs[n.SERVER_ADDRESS] == "127.0.0.1"
    for tool in telemetry.tool_spans():
        assert tool.parent is not None and tool.parent.span_id == span.context.span_id
    return span


def assert_call(
    span: ReadableSpan, call: Any, fragments: list[str], reason: str | None = None, **kw: Any
) -> None:
    attrs = span.attributes or {}
    assert span.name == f"tool_call {call.name}"
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
    assert attrs[n.TOOLCALL_CALL_ID] == call.id
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len([f for f in fragments if f])
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(fragments).encode("utf-8"))
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs
    assert_outcome(span, reason, kw.get("error_type"))


def test_claude_call_completes(instrument: Any, telemetry: Any, client: Any, fake: FakeProvider) -> None:
    fake.enqueue(claude_script([claude.Text("Let me check."), CALL], split=True))
    events = list(invoke(client))

    assert fake.requests[0].path.endswith("/invoke-with-response-stream")
    assert "".join(delivered(events, 1)) == CALL.arguments
    (span,) = telemetry.tool_spans()
    assert_call(span, CALL, delivered(events, 1))
    assert (span.attributes or {})[n.TOOLCALL_INDEX] == 1
    attrs = inference(telemetry).attributes or {}
    assert attrs[n.TOOLCALL_OUTCOME] == "completed"
    assert attrs[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert attrs[n.GEN_AI_RESPONSE_ID] == "msg_fake_01"
    # message_start's input count completed by message_delta's output count.
    assert (attrs[n.GEN_AI_USAGE_INPUT_TOKENS], attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS]) == (25, 42)
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_parallel_claude_calls_each_end_at_their_block_stop(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(claude_script([CALL, TIME], split=True, pace=0.001))
    events = list(invoke(client))
    spans = {s.name: s for s in telemetry.tool_spans()}
    assert_call(spans["tool_call get_weather"], CALL, delivered(events, 0))
    assert_call(spans["tool_call get_time"], TIME, delivered(events, 1))
    assert spans["tool_call get_weather"].end_time <= spans["tool_call get_time"].start_time  # type: ignore[operator]
    assert (inference(telemetry).attributes or {})[n.TOOLCALL_COUNT] == 2


def test_max_tokens_truncates_the_claude_call(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(claude_script([CALL], stop_reason="max_tokens"))
    events = list(invoke(client))
    (span,) = telemetry.tool_spans()
    assert_call(span, CALL, delivered(events, 0), "truncated")
    assert (inference(telemetry).attributes or {})[n.TOOLCALL_ABORT_REASON] == "truncated"


def test_connection_cut_mid_arguments_is_a_stream_error(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    # message_start, ping, block start, three fragments; then half a frame and the socket drops.
    fake.enqueue(claude_script([CALL], cut_after=6, cut_inside=True))
    events: list[Any] = []
    with pytest.raises(ProtocolError):
        for event in invoke(client):
            events.append(event)
    (span,) = telemetry.tool_spans()
    assert len(delivered(events, 0)) == 3
    assert_call(
        span, CALL, delivered(events, 0), "stream_error", error_type="urllib3.exceptions.ProtocolError"
    )
    chat = inference(telemetry)
    assert chat.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize(
    "exception",
    ["modelStreamErrorException", "throttlingException", "internalServerException", "modelTimeoutException"],
)
def test_an_exception_event_mid_arguments_is_a_stream_error(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider, exception: str
) -> None:
    frames = anthropic_chunks(claude.events_for([CALL]))
    fake.enqueue(script_for([*frames[:5], exception_frame(exception, "it broke"), *frames[5:]]))
    events: list[Any] = []
    with pytest.raises(EventStreamError) as raised:
        for event in invoke(client):
            events.append(event)
    assert raised.value.response["Error"]["Code"].lower() == exception.lower()
    (span,) = telemetry.tool_spans()
    error = "botocore.exceptions.EventStreamError"
    assert_call(span, CALL, delivered(events, 0), "stream_error", error_type=error)
    assert (inference(telemetry).attributes or {})[n.ERROR_TYPE] == error


def test_closed_by_the_consumer_mid_arguments(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(claude_script([CALL]))
    stream = invoke(client)
    events = []
    for event in stream:
        events.append(event)
        if len(delivered(events, 0)) == 2:
            break
    stream.close()
    (span,) = telemetry.tool_spans()
    assert_call(span, CALL, delivered(events, 0), "closed")
    assert (inference(telemetry).attributes or {})[n.TOOLCALL_ABORT_REASON] == "closed"


def test_a_dropped_stream_is_abandoned(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(claude_script([CALL]))
    response = client.invoke_model_with_response_stream(modelId=CLAUDE, body=BODY)
    events = []
    for event in response["body"]:
        events.append(event)
        if len(delivered(events, 0)) == 2:
            break
    assert telemetry.tool_spans() == []
    del response, event
    gc.collect()
    (span,) = telemetry.tool_spans()
    assert_call(span, CALL, delivered(events, 0), "abandoned")


def test_break_then_a_second_loop_is_one_stream(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(claude_script([CALL]))
    stream = invoke(client)
    events = []
    for event in stream:
        events.append(event)
        if len(events) == 4:
            break
    assert telemetry.spans() == []  # a loop's break is not the stream's end
    events.extend(stream)
    assert "".join(delivered(events, 0)) == CALL.arguments
    (span,) = telemetry.tool_spans()
    assert_call(span, CALL, delivered(events, 0))


def test_nova_converse_shaped_chunks(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(script_for(nova_chunks([WEATHER]), split=True))
    events = decoded(list(invoke(client, NOVA_MODEL)))
    fragments = [
        e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events if "contentBlockDelta" in e
    ]
    assert "".join(fragments) == WEATHER.input
    (span,) = telemetry.tool_spans()
    assert_call(span, WEATHER, fragments)
    attrs = inference(telemetry, NOVA_MODEL).attributes or {}
    assert attrs[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert (attrs[n.GEN_AI_USAGE_INPUT_TOKENS], attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS]) == (12, 34)


def test_nova_max_tokens_truncates_the_open_call(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(script_for(nova_chunks([WEATHER], stop_reason="max_tokens", stop_last_block=False)))
    list(invoke(client, NOVA_MODEL))
    (span,) = telemetry.tool_spans()
    assert_outcome(span, "truncated")


CLOCK = chat.ToolCall(name="get_time", id="call_time_2", arguments='{"tz": "Europe/Zürich", "offset": -120}')


def chat_fragments(events: list[dict[str, Any]], index: int) -> list[str]:
    """The argument fragments of call ``index`` in the decoded Chat Completions chunks."""
    return [
        call["function"]["arguments"]
        for e in events
        for choice in e.get("choices", [])
        for call in choice["delta"].get("tool_calls", [])
        if call["index"] == index and call["function"].get("arguments")
    ]


def test_openai_gpt_oss_chat_chunks(instrument: Any, telemetry: Any, client: Any, fake: FakeProvider) -> None:
    fake.enqueue(
        script_for(openai_chunks(chat.events_for([chat.WEATHER, CLOCK], text="Checking.")), split=True)
    )
    events = decoded(list(invoke(client, OPENAI_MODEL)))
    spans = sorted(telemetry.tool_spans(), key=lambda s: (s.attributes or {})[n.TOOLCALL_INDEX])
    assert [s.name for s in spans] == ["tool_call get_weather", "tool_call get_time"]
    for span, call, index in ((spans[0], chat.WEATHER, 0), (spans[1], CLOCK, 1)):
        fragments = chat_fragments(events, index)
        assert "".join(fragments) == call.arguments
        assert_call(span, call, fragments)
    attrs = inference(telemetry, OPENAI_MODEL).attributes or {}
    assert attrs[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert attrs[n.GEN_AI_RESPONSE_MODEL] == OPENAI_MODEL


@pytest.mark.parametrize(("finish", "reason"), [("length", "truncated"), ("content_filter", "filtered")])
def test_openai_gpt_oss_finish_reasons_that_abort(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider, finish: str, reason: str
) -> None:
    fake.enqueue(script_for(openai_chunks(chat.events_for([chat.WEATHER], finish_reason=finish))))
    list(invoke(client, OPENAI_MODEL))
    (span,) = telemetry.tool_spans()
    assert_outcome(span, reason)


def test_openai_gpt_oss_cut_mid_arguments(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    frames = openai_chunks(chat.events_for([chat.WEATHER]))
    fake.enqueue(script_for(frames, cut_after=4, cut_inside=True))
    with pytest.raises(ProtocolError):
        list(invoke(client, OPENAI_MODEL))
    (span,) = telemetry.tool_spans()
    assert_outcome(span, "stream_error", "urllib3.exceptions.ProtocolError")


LLAMA = "meta.llama3-70b-instruct-v1:0"


@pytest.mark.parametrize("with_metrics", [True, False])
def test_a_family_without_tool_blocks_ends_at_its_last_chunk(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider, with_metrics: bool
) -> None:
    last: dict[str, Any] = {"generation": ".", "stop_reason": "stop"}
    if with_metrics:
        last["amazon-bedrock-invocationMetrics"] = {"inputTokenCount": 3, "outputTokenCount": 2}
    fake.enqueue(script_for([chunk({"generation": "Hello", "stop_reason": None}), chunk(last)]))
    assert len(list(invoke(client, LLAMA))) == 2
    assert telemetry.tool_spans() == []
    attrs = inference(telemetry, LLAMA).attributes or {}
    # The metrics ride on the last chunk of every family: without them nothing said it ended.
    assert attrs[n.TOOLCALL_OUTCOME] == ("completed" if with_metrics else "aborted")


def test_the_returned_body_answers_as_the_sdks(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(claude_script([CALL]))
    stream = invoke(client)
    assert isinstance(stream, EventStream) and stream.__class__ is EventStream
    assert not hasattr(stream, "__len__") and not hasattr(stream, "__enter__")
    assert inspect.isgenerator(iter(stream)) and callable(stream.close)
    list(stream)
    assert telemetry.tool_spans()


SCENARIOS = {
    "completed": lambda: claude_script([claude.Text("hi"), CALL, TIME], split=True),
    "exception": lambda: script_for([*anthropic_chunks(claude.events_for([CALL]))[:5], exception_frame()]),
    "cut": lambda: claude_script([CALL], cut_after=5, cut_inside=True),
    "nova": lambda: script_for(nova_chunks([WEATHER])),
}


def run(client: Any, fake: FakeProvider, scenario: str) -> tuple[list[Any], Any]:
    fake.enqueue(SCENARIOS[scenario]())
    events: list[Any] = []
    try:
        for event in invoke(client):
            events.append(event)
    except Exception as exc:
        return events, caller_saw(exc)
    return events, None


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_what_the_sdk_yields_and_raises_is_unchanged(
    instrument: Any, telemetry: Any, client: Any, fake: FakeProvider, scenario: str
) -> None:
    traced = run(client, fake, scenario)
    with bare_rerun(instrument, telemetry):
        bare = run(client, fake, scenario)
    assert traced == bare


@pytest.fixture
def strict(instrument: Any) -> Iterator[None]:
    instrument(strict=True)
    yield


def test_execute_tool_links_a_completed_call_and_strict_refuses_a_truncated_one(
    strict: None, telemetry: Any, client: Any, fake: FakeProvider
) -> None:
    fake.enqueue(claude_script([CALL]))
    list(invoke(client))
    truncated = claude.ToolUse(name="get_time", arguments='{"tz": "UTC"}', id="toolu_cut_09")
    fake.enqueue(claude_script([truncated], stop_reason="max_tokens"))
    list(invoke(client))
    assert tool_call_outcome(CALL.id) == "completed" and tool_call_outcome(truncated.id) == "aborted"

    with execute_tool(CALL.id, name=CALL.name):
        pass
    ran = []
    with pytest.raises(IncompleteToolCallError), execute_tool(truncated.id, name=truncated.name):
        ran.append(truncated.id)
    assert ran == []

    calls = {(s.attributes or {})[n.TOOLCALL_CALL_ID]: s for s in telemetry.tool_spans()}
    executions = {
        (s.attributes or {})[n.GEN_AI_TOOL_CALL_ID]: s
        for s in telemetry.spans()
        if (s.attributes or {}).get(n.GEN_AI_OPERATION_NAME) == "execute_tool"
    }
    linked = executions[CALL.id]
    assert [link.context.span_id for link in linked.links] == [calls[CALL.id].context.span_id]
    refused = executions[truncated.id]
    assert refused.links == () and (refused.attributes or {})[n.TOOLCALL_OUTCOME] == "aborted"
    assert refused.status.status_code is StatusCode.ERROR
