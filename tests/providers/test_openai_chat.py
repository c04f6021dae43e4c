"""The real openai SDK (sync) against the FakeProvider: every outcome and reason of Chat Completions."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from outcomes import assert_outcome
from sdk_compat import bare_error, chat_helper_stream

from otel_toolcalls import execute_tool
from otel_toolcalls._core import names as n
from otel_toolcalls._core.calls import error_type_of
from otel_toolcalls.testing import Script, awkward_points, sse
from otel_toolcalls.testing.openai_chat import (
    MODEL,
    WEATHER,
    Event,
    ToolCall,
    arguments_by_index,
    chunk,
    events_for,
    legacy_error,
    raw_script,
    request,
    script_for,
    tool_call_script,
)


def assert_call(
    telemetry: Any,
    span: ReadableSpan,
    *,
    reason: str | None,
    delivered: str | None,
    error_type: str | None = None,
    provider: str = "openai",
) -> None:
    """Checks one tool-call span against the contract; ``delivered``: the argument text the SDK
    yielded for it (None: no fragment at all, so size 0)."""
    attrs = span.attributes or {}
    assert span.kind is SpanKind.INTERNAL
    assert attrs[n.GEN_AI_PROVIDER_NAME] == provider
    assert attrs[n.TOOLCALL_REQUEST_MODEL] == MODEL
    assert attrs[n.TOOLCALL_TOOL_TYPE] == "function"
    if delivered:
        assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len(delivered.encode("utf-8"))
    else:
        assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == 0
        assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == 0
    assert_outcome(span, reason, error_type)
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs  # content capture is off by default


def inference(telemetry: Any) -> ReadableSpan:
    return telemetry.one("chat ")


def assert_parented(telemetry: Any) -> None:
    parent = inference(telemetry)
    for span in telemetry.tool_spans():
        assert span.parent is not None and span.parent.span_id == parent.context.span_id
        assert span.context.trace_id == parent.context.trace_id


@pytest.fixture
def client(fake: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0)


def drain(stream: Any) -> list[Any]:
    return list(stream)


# -- completed ------------------------------------------------------------------------------------


def test_completed_awkward_fragments_one_write_each(telemetry, instrument, fake, client):
    pieces = WEATHER.pieces()
    # The builder really cuts where naive code breaks: key/colon, inside strings, mid-number, UTF-8.
    assert len(awkward_points(WEATHER.arguments)) >= 8
    assert any(p.endswith('"location"') for p in pieces)
    assert any(p.startswith(":") for p in pieces)
    assert any(p[:1].isdigit() for p in pieces[1:])
    assert "ü" in pieces and "☀" in "".join(p for p in pieces if len(p) == 1)
    script = tool_call_script([WEATHER])
    # Writes holding multi-byte text are split inside a character.
    assert any(w and w[-1] >= 0xC0 for w in script.writes)
    fake.enqueue(script)

    chunks = drain(client.chat.completions.create(**request()))

    delivered = arguments_by_index(chunks)[(0, 0)]
    assert delivered == WEATHER.arguments
    span = telemetry.one("tool_call get_weather")
    assert_call(telemetry, span, reason=None, delivered=delivered)
    attrs = span.attributes
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(pieces)
    assert attrs[n.TOOLCALL_CALL_ID] == "call_weather_1"
    assert attrs[n.TOOLCALL_INDEX] == 0
    assert_parented(telemetry)
    chat = inference(telemetry)
    assert chat.name == f"chat {MODEL}" and chat.kind is SpanKind.CLIENT and chat.parent is None
    c = chat.attributes
    assert c[n.GEN_AI_OPERATION_NAME] == "chat" and c[n.GEN_AI_REQUEST_STREAM] is True
    assert c[n.GEN_AI_RESPONSE_ID] == "chatcmpl-fake" and c[n.GEN_AI_RESPONSE_MODEL] == MODEL
    assert c[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert c[n.SERVER_ADDRESS] == "127.0.0.1" and c[n.SERVER_PORT] == fake.port
    assert 0 < c[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] < 5
    assert c[n.TOOLCALL_COUNT] == 1 and c[n.TOOLCALL_OUTCOME] == "completed"
    assert chat.status.status_code is StatusCode.UNSET
    assert span.start_time >= chat.start_time and span.end_time <= chat.end_time
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    (point,) = telemetry.points("toolcall.calls")
    assert dict(point.attributes) == {
        n.GEN_AI_PROVIDER_NAME: "openai",
        n.GEN_AI_REQUEST_MODEL: MODEL,
        n.GEN_AI_TOOL_NAME: "get_weather",
        n.TOOLCALL_OUTCOME: "completed",
    }
    (size,) = telemetry.points("toolcall.arguments.size")
    assert size.sum == len(WEATHER.arguments.encode("utf-8"))
    (ttfc,) = telemetry.points("gen_ai.client.inference.time_to_first_chunk")
    assert ttfc.count == 1


def test_completed_by_stop_with_next(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], finish_reason="stop", text="Let me check. "))
    stream = client.chat.completions.create(**request())
    chunks = []
    while True:
        try:
            chunks.append(next(stream))
        except StopIteration:
            break
    assert_call(telemetry, telemetry.one("tool_call "), reason=None, delivered=WEATHER.arguments)
    assert inference(telemetry).attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


# -- aborted by the provider ----------------------------------------------------------------------


def test_server_cut_mid_arguments_is_stream_error(telemetry, instrument, fake, client):
    events = events_for([WEATHER])
    fake.enqueue(script_for(events, cut_after=6), script_for(events, cut_after=6))
    # openai 3.x raises APIConnectionError, earlier releases the transport's own error.
    sdk_raises = bare_error(lambda: drain(client.chat.completions.create(**request())))
    chunks: list[Any] = []
    with pytest.raises(sdk_raises) as raised:
        for c in client.chat.completions.create(**request()):
            chunks.append(c)
    assert type(raised.value) is sdk_raises
    error_type = error_type_of(raised.value)
    delivered = arguments_by_index(chunks)[(0, 0)]
    assert delivered == "".join(WEATHER.pieces()[:5])
    span = telemetry.one("tool_call ")
    assert_call(telemetry, span, reason="stream_error", delivered=delivered, error_type=error_type)
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 5
    chat = inference(telemetry)
    assert chat.attributes[n.ERROR_TYPE] == error_type
    assert chat.attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("error",)
    assert chat.status.status_code is StatusCode.ERROR
    (point,) = telemetry.points("toolcall.calls")
    assert point.attributes[n.ERROR_TYPE] == error_type
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


def test_legacy_error_payload_is_stream_error(telemetry, instrument, fake, client):
    writes = [sse(chunk(e)) for e in events_for([WEATHER], finish_reason=None)[:4]]
    fake.enqueue(Script([*writes, legacy_error("overloaded, try later")]))
    with pytest.raises(openai.APIError) as raised:
        drain(client.chat.completions.create(**request()))
    assert type(raised.value) is openai.APIError and raised.value.message == "overloaded, try later"
    span = telemetry.one("tool_call ")
    delivered = "".join(WEATHER.pieces()[:3])
    assert_call(telemetry, span, reason="stream_error", delivered=delivered, error_type="openai.APIError")
    assert inference(telemetry).attributes[n.ERROR_TYPE] == "openai.APIError"


# -- ended by the consumer --------------------------------------------------------------------------


def _read_into_call(stream: Any, events: int = 4) -> str:
    got = [next(stream) for _ in range(events)]
    return arguments_by_index(got)[(0, 0)]


def _assert_closed(telemetry: Any, delivered: str) -> None:
    assert_call(telemetry, telemetry.one("tool_call "), reason="closed", delivered=delivered)
    chat = inference(telemetry)
    assert chat.attributes[n.TOOLCALL_ABORT_REASON] == "closed"
    assert chat.attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("error",)
    assert telemetry.calls_by_outcome() == {("aborted", "closed"): 1}


def test_with_exit_mid_call(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    with client.chat.completions.create(**request()) as stream:
        delivered = _read_into_call(stream, 3)
    _assert_closed(telemetry, delivered)


def test_break_then_close(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    stream = client.chat.completions.create(**request())
    got = []
    for c in stream:
        got.append(c)
        if len(got) == 5:
            break
    stream.close()
    _assert_closed(telemetry, arguments_by_index(got)[(0, 0)])


def test_helper_stream_close(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    with chat_helper_stream(client)(model=MODEL, messages=[{"role": "user", "content": "hi"}]) as helper:
        seen = 0
        for event in helper:
            seen += event.type == "chunk"
            if seen == 4:
                break
        snapshot = helper.current_completion_snapshot.choices[0].message.tool_calls[0].function.arguments
    assert snapshot == "".join(WEATHER.pieces()[:3])
    span = telemetry.one("tool_call ")
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == "closed"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(snapshot.encode())
    assert telemetry.calls_by_outcome() == {("aborted", "closed"): 1}


def test_read_to_end_then_close_stays_completed(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]))
    with client.chat.completions.create(**request()) as stream:
        drain(stream)
        stream.close()
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert inference(telemetry).attributes[n.TOOLCALL_OUTCOME] == "completed"


# -- the body ends without a completion event ----------------------------------------------------------


# With the [DONE] marker: test_outcomes_matrix.py::test_incomplete[openai_chat].
@pytest.mark.parametrize("done", [False])
def test_no_finish_reason_is_incomplete(telemetry, instrument, fake, client, done):
    fake.enqueue(tool_call_script([WEATHER], finish_reason=None, done=done))
    drain(client.chat.completions.create(**request()))
    assert_call(telemetry, telemetry.one("tool_call "), reason="incomplete", delivered=WEATHER.arguments)
    chat = inference(telemetry).attributes
    assert chat[n.TOOLCALL_ABORT_REASON] == "incomplete"
    assert chat[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("error",)
    assert telemetry.calls_by_outcome() == {("aborted", "incomplete"): 1}


def test_finish_reason_without_done_marker_completes(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], done=False))
    drain(client.chat.completions.create(**request()))
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert inference(telemetry).attributes[n.TOOLCALL_OUTCOME] == "completed"


# -- OpenAI-compatible quirks ---------------------------------------------------------------------------


def test_arguments_null_and_whole_arguments_in_start(telemetry, instrument, fake, client):
    start = chunk(Event(index=0, id="call_null", name="lookup"))
    start["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = None
    whole = '{"q": "Straße", "n": 12}'
    payloads = [
        start,
        chunk(Event(index=0, arguments=None)),
        chunk(Event(index=0, arguments='{"q": "x"}')),
        chunk(Event(index=1, id="call_whole", name="search", arguments=whole)),
        chunk(Event(finish_reason="tool_calls")),
    ]
    fake.enqueue(raw_script(payloads))
    chunks = drain(client.chat.completions.create(**request()))
    assert arguments_by_index(chunks) == {(0, 0): '{"q": "x"}', (0, 1): whole}
    lookup, search = telemetry.one("tool_call lookup"), telemetry.one("tool_call search")
    assert lookup.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 1
    assert_call(telemetry, lookup, reason=None, delivered='{"q": "x"}')
    assert search.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 1
    assert_call(telemetry, search, reason=None, delivered=whole)


def test_no_id_no_finish_reason(telemetry, instrument, fake, client):
    call = ToolCall(name="get_weather", id=None, arguments='{"city": "Oslo"}', args_in_start=True)
    fake.enqueue(tool_call_script([call], finish_reason=None, done=False))
    drain(client.chat.completions.create(**request()))
    span = telemetry.one("tool_call ")
    assert n.TOOLCALL_CALL_ID not in span.attributes
    assert_call(telemetry, span, reason="incomplete", delivered=call.arguments)
    with execute_tool(None, name="get_weather") as exec_span:
        pass
    executed = telemetry.one("execute_tool ")
    assert executed.attributes[n.TOOLCALL_OUTCOME] == "unknown" and not executed.links
    assert exec_span is not None


def test_nameless_fragments_open_nothing(telemetry, instrument, fake, client):
    payloads = [
        chunk(Event(index=0, arguments='{"early": 1')),  # before the name: counts nowhere
        chunk(Event(index=3, arguments='{"never": "started"}')),
        chunk(Event(index=0, id="call_late", name="late")),
        chunk(Event(index=0, arguments='{"a": 1}')),
        chunk(Event(finish_reason="tool_calls")),
    ]
    fake.enqueue(raw_script(payloads))
    drain(client.chat.completions.create(**request()))
    (span,) = telemetry.tool_spans()
    assert span.name == "tool_call late"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 1
    assert_call(telemetry, span, reason=None, delivered='{"a": 1}')
    assert inference(telemetry).attributes[n.TOOLCALL_COUNT] == 1
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_new_id_on_open_index_ends_a_cut_first_unterminated(telemetry, instrument, fake, client):
    # TELEMETRY.md section 6, "Keying on self-hosted servers" (the closed case: test_wire_lies.py).
    payloads = [
        chunk(Event(index=0, id="call_a", name="first", arguments='{"x"')),
        chunk(Event(index=0, id="call_b", name="second", arguments="{}")),
        chunk(Event(finish_reason="tool_calls")),
    ]
    fake.enqueue(raw_script(payloads))
    drain(client.chat.completions.create(**request()))
    assert_call(telemetry, telemetry.one("tool_call first"), reason="unterminated", delivered='{"x"')
    assert_call(telemetry, telemetry.one("tool_call second"), reason=None, delivered="{}")


def test_second_choice_calls_are_keyed_apart(telemetry, instrument, fake, client):
    payloads = [
        chunk(Event(index=0, id="call_c0", name="zero", arguments="{}", choice=0)),
        chunk(Event(index=0, id="call_c1", name="one", arguments='{"a"', choice=1)),
        chunk(Event(finish_reason="tool_calls", choice=0)),
        chunk(Event(finish_reason="length", choice=1)),
    ]
    fake.enqueue(raw_script(payloads))
    drain(client.chat.completions.create(**request(n=2)))
    assert_call(telemetry, telemetry.one("tool_call zero"), reason=None, delivered="{}")
    assert_call(telemetry, telemetry.one("tool_call one"), reason="truncated", delivered='{"a"')
    assert inference(telemetry).attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls", "length")


# -- helper streams and other ways in ----------------------------------------------------------------


def test_helper_get_final_completion(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]))
    with chat_helper_stream(client)(**helper_kwargs()) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.tool_calls[0].function.arguments == WEATHER.arguments
    assert_call(telemetry, telemetry.one("tool_call "), reason=None, delivered=WEATHER.arguments)
    assert_parented(telemetry)


def helper_kwargs() -> dict[str, Any]:
    """A helper-stream request: the helpers auto-parse tool arguments, so the tool is `strict`
    (openai 1.x / 2.x's async helper refuses any other; later releases check only in `parse`)."""
    kwargs = request()
    del kwargs["stream"]
    kwargs["tools"] = [{**tool, "function": {**tool["function"], "strict": True}} for tool in kwargs["tools"]]
    return kwargs


def test_helper_until_done_cut(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], cut_after=5), tool_call_script([WEATHER], cut_after=5))

    def until_done() -> None:
        with chat_helper_stream(client)(**helper_kwargs()) as s:
            s.until_done()

    sdk_raises = bare_error(until_done)
    with pytest.raises(sdk_raises):
        until_done()
    span = telemetry.one("tool_call ")
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == "stream_error"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 4


def test_with_raw_response_parse(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], finish_reason="length"))
    raw = client.chat.completions.with_raw_response.create(**request())
    assert raw.http_response.status_code == 200
    drain(raw.parse())
    assert_call(telemetry, telemetry.one("tool_call "), reason="truncated", delivered=WEATHER.arguments)
    assert_parented(telemetry)


def test_with_streaming_response_parse_closed(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    with client.chat.completions.with_streaming_response.create(**request()) as response:
        stream = response.parse()
        delivered = _read_into_call(stream, 4)
    _assert_closed(telemetry, delivered)


def test_azure_openai(telemetry, instrument, fake):
    azure = openai.AzureOpenAI(
        azure_endpoint=fake.base_url, api_key="k", api_version="2024-10-21", max_retries=0
    )
    fake.enqueue(tool_call_script([WEATHER]))
    drain(azure.chat.completions.create(**request()))
    assert fake.requests[-1].path.startswith(f"/openai/deployments/{MODEL}/chat/completions")
    assert_call(
        telemetry,
        telemetry.one("tool_call "),
        reason=None,
        delivered=WEATHER.arguments,
        provider="azure.ai.openai",
    )
    assert inference(telemetry).attributes[n.SERVER_ADDRESS] == "127.0.0.1"


# -- the inference span -------------------------------------------------------------------------------


def test_inference_span_never_current_while_iterating(telemetry, instrument, fake, client):
    tracer = telemetry.tracer_provider.get_tracer("user")
    fake.enqueue(tool_call_script([WEATHER]))
    with tracer.start_as_current_span("agent turn") as turn:
        for i, _ in enumerate(client.chat.completions.create(**request())):
            assert trace.get_current_span() is turn
            if i == 2:
                with tracer.start_as_current_span("user work"):
                    pass
    user = telemetry.one("user work")
    chat = inference(telemetry)
    assert user.parent.span_id == turn.get_span_context().span_id
    assert chat.parent.span_id == turn.get_span_context().span_id
    assert_parented(telemetry)


def test_request_failure_makes_a_failed_inference_span(telemetry, instrument, fake, client):
    fake.enqueue(Script([b'{"error": {"message": "boom"}}'], status=500, content_type="application/json"))
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(**request())
    chat = inference(telemetry)
    assert chat.attributes[n.ERROR_TYPE] == "openai.InternalServerError"
    assert chat.attributes[n.TOOLCALL_ABORT_REASON] == "stream_error"
    assert chat.status.status_code is StatusCode.ERROR
    assert telemetry.tool_spans() == []


def test_inference_spans_off_parents_to_current(telemetry, instrument, fake, client):
    instrument(inference_spans=False)
    tracer = telemetry.tracer_provider.get_tracer("user")
    fake.enqueue(tool_call_script([WEATHER]))
    with tracer.start_as_current_span("agent turn") as turn:
        drain(client.chat.completions.create(**request()))
    assert [s.name for s in telemetry.spans()] == ["tool_call get_weather", "agent turn"]
    assert telemetry.one("tool_call ").parent.span_id == turn.get_span_context().span_id
    assert n.TOOLCALL_OUTCOME not in telemetry.one("agent turn").attributes


def test_adopts_someone_elses_inference_span(telemetry, instrument, fake, client):
    tracer = telemetry.tracer_provider.get_tracer("framework")
    fake.enqueue(tool_call_script([WEATHER]))
    with tracer.start_as_current_span(
        "chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes={n.GEN_AI_OPERATION_NAME: "chat"}
    ) as theirs:
        drain(client.chat.completions.create(**request()))
    (chat,) = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert chat.context.span_id == theirs.get_span_context().span_id
    assert telemetry.one("tool_call ").parent.span_id == chat.context.span_id
    assert chat.attributes[n.TOOLCALL_COUNT] == 1
    assert chat.attributes[n.TOOLCALL_OUTCOME] == "completed"
