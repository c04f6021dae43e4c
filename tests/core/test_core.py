"""The provider-neutral state machine, driven directly with events (TELEMETRY.md sections 1, 2, 6)."""

from __future__ import annotations

import types
from typing import Any

import openai
import pytest
from opentelemetry.trace import StatusCode

from otel_toolcalls._config import Settings
from otel_toolcalls._core import names as n
from otel_toolcalls._core import process
from otel_toolcalls._core.blocks import Blocks
from otel_toolcalls._core.calls import classify, error_type_of
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.telemetry import REGISTRY, Telemetry

# openai 3.60 reads the request's headers on a connection error (None no longer does); its
# HTTP client moved from httpx to httpx2, so a stand-in with headers serves every release.
_REQUEST: Any = types.SimpleNamespace(headers={})


@pytest.fixture
def make(telemetry: Any):
    process.reset()

    def build(**settings: Any) -> StreamState:
        t = Telemetry(Settings(**settings), telemetry.tracer_provider, telemetry.meter_provider)
        return StreamState(t, RequestInfo(provider="anthropic", model="m-1"))

    return build


def tool(telemetry: Any, name: str) -> Any:
    return telemetry.one(f"tool_call {name}")


def outcome(span: Any) -> tuple[str, str | None]:
    return span.attributes[n.TOOLCALL_OUTCOME], span.attributes.get(n.TOOLCALL_ABORT_REASON)


def test_odd_input_never_raises(telemetry, make):
    s = make()
    s.fragment("nope", "{}")
    s.fragment_size("nope", 3)
    s.block_stopped("nope")
    s.block_completed("nope")
    s.block_aborted("nope", n.CLOSED)
    s.settle(None)
    s.settle("", choice=3)
    s.block_started("k", name="a" * 1000, call_id="c" * 1000, index=None)
    s.fragment("k", "\ud800")  # a lone surrogate: counted, not choked on
    s.error_event(None)
    s.ended()
    s.ended()
    s.failed(RuntimeError("late"))
    s.block_started("late", name="after_end")  # ignored: the stream is done
    s.fragment("k", "more")
    span = telemetry.tool_spans()[0]
    assert span.name == "tool_call " + "a" * 256
    assert span.attributes[n.TOOLCALL_CALL_ID] == "c" * 256
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == 3
    assert n.TOOLCALL_INDEX not in span.attributes
    assert len(telemetry.tool_spans()) == 1
    # The error event (no type) ended the call as stream_error/_OTHER; later terminals change nothing.
    assert outcome(span) == ("aborted", "stream_error")
    assert telemetry.one("chat ").attributes[n.ERROR_TYPE] == n.OTHER


def test_second_start_for_open_index_ends_a_cut_first_unterminated(telemetry, make):
    # TELEMETRY.md section 6, "Keying on self-hosted servers": the earlier call's own arguments
    # decide; these stop mid-number, so it ends at once, before the second call's span starts.
    s = make()
    s.block_started(0, name="first", call_id="a")
    s.fragment(0, '{"x": 1')
    s.block_started(0, name="second", call_id="b")
    first = tool(telemetry, "first")
    s.fragment(0, "{}")
    s.settle("tool_calls", completes_open=True)
    s.final_event()
    s.ended()
    assert outcome(first) == ("aborted", "unterminated")
    assert first.attributes[n.ERROR_TYPE] == "unterminated"
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == n.ABORT_DESCRIPTIONS[n.UNTERMINATED]
    assert outcome(tool(telemetry, "second")) == ("completed", None)
    assert telemetry.calls_by_outcome() == {("aborted", "unterminated"): 1, ("completed", None): 1}
    assert REGISTRY.get("a").outcome == "aborted" and REGISTRY.get("b").outcome == "completed"


@pytest.mark.parametrize("arguments", ['{"x": 1}', "", "  \n"])
def test_second_start_for_open_index_keeps_a_closed_first_open(telemetry, make, arguments):
    # A closed (or empty: no evidence) earlier call completes with the rest at the completion event.
    s = make()
    s.block_started(0, name="first", call_id="a")
    s.fragment(0, arguments)
    s.block_started(0, name="second", call_id="b")
    assert telemetry.tool_spans() == []
    s.fragment(0, '{"y": 2}')
    s.settle("tool_calls", completes_open=True)
    s.final_event()
    s.ended()
    assert outcome(tool(telemetry, "first")) == ("completed", None)
    assert outcome(tool(telemetry, "second")) == ("completed", None)
    assert REGISTRY.get("a").outcome == "completed" and REGISTRY.get("b").outcome == "completed"


def test_a_superseded_call_ends_with_the_stream_when_it_breaks(telemetry, make):
    s = make()
    s.block_started(0, name="first", call_id="a")
    s.fragment(0, '{"x": 1}')
    s.block_started(0, name="second", call_id="b")
    s.fragment(0, '{"y"')
    s.failed(ConnectionError("gone"))
    assert outcome(tool(telemetry, "first")) == ("aborted", "stream_error")
    assert outcome(tool(telemetry, "second")) == ("aborted", "stream_error")


def test_none_and_empty_fragments_count_nothing(telemetry, make):
    s = make()
    s.block_started(0, name="f", call_id="a")
    for text in (None, "", None, ""):
        s.fragment(0, text)
    s.settle("stop", completes_open=True)
    s.ended()
    span = tool(telemetry, "f")
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 0
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == 0  # zero is a number
    (size,) = telemetry.points("toolcall.arguments.size")
    assert (size.count, size.sum) == (1, 0)
    (deltas,) = telemetry.points("toolcall.arguments.deltas")
    assert deltas.sum == 0


def test_size_is_utf8_bytes(telemetry, make):
    s = make()
    s.block_started(0, name="f")
    pieces = ['{"city": "Z', "ü", 'rich", "sky": "☀️', '"}']
    for p in pieces:
        s.fragment(0, p)
    s.closed()
    span = tool(telemetry, "f")
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(pieces).encode("utf-8"))
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 4
    assert outcome(span) == ("aborted", "closed")


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("length", n.TRUNCATED),
        ("max_tokens", n.TRUNCATED),
        ("MAX_TOKENS", n.TRUNCATED),
        ("model_length", n.TRUNCATED),
        ("max_output_tokens", n.TRUNCATED),
        ("model_context_window_exceeded", n.TRUNCATED),
        ("content_filter", n.FILTERED),
        ("SAFETY", n.FILTERED),
        ("RECITATION", n.FILTERED),
        ("BLOCKLIST", n.FILTERED),
        ("PROHIBITED_CONTENT", n.FILTERED),
        ("SPII", n.FILTERED),
        ("guardrail_intervened", n.FILTERED),
        ("refusal", n.FILTERED),
        ("error", n.STREAM_ERROR),
        ("ERROR", n.STREAM_ERROR),
        ("TIMEOUT", n.STREAM_ERROR),
        ("MALFORMED_FUNCTION_CALL", n.MALFORMED),
        ("malformed_tool_use", n.MALFORMED),
        ("tool_calls", None),
        ("stop", None),
        ("end_turn", None),
        ("something_new", None),
        (None, None),
    ],
)
def test_classify(reason, expected):
    assert classify(reason) == expected


def test_error_type_names():
    assert error_type_of(ValueError()) == "ValueError"
    dropped = openai.APIConnectionError(request=_REQUEST)
    assert error_type_of(dropped) == "openai.APIConnectionError"


def test_stopped_but_not_settled_is_completed_at_stop_time(telemetry, make):
    s = make()
    s.block_started("b0", name="f", call_id="a")
    s.fragment("b0", "{}")
    s.block_stopped("b0")
    s.closed()  # before the message-level stop reason
    span = tool(telemetry, "f")
    assert outcome(span) == ("completed", None)
    chat = telemetry.one("chat ")
    assert span.end_time < chat.end_time
    assert chat.attributes[n.TOOLCALL_ABORT_REASON] == "closed"


def test_limit_truncates_last_stopped_block(telemetry, make):
    s = make()
    s.block_started("b0", name="early")
    s.block_stopped("b0")
    s.block_started("b1", name="last")
    s.fragment("b1", "{}")
    s.block_stopped("b1")
    s.settle("max_tokens")
    s.final_event()
    s.ended()
    assert outcome(tool(telemetry, "early")) == ("completed", None)
    assert outcome(tool(telemetry, "last")) == ("aborted", "truncated")
    assert telemetry.one("chat ").attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("max_tokens",)


def test_block_followed_by_text_block_is_not_truncated(telemetry, make):
    s = make()
    s.block_started("b0", name="f")
    s.block_stopped("b0")
    s.other_block_started()  # a text block the limit then cut
    s.settle("max_tokens")
    s.ended()
    assert outcome(tool(telemetry, "f")) == ("completed", None)
    assert telemetry.one("chat ").attributes[n.TOOLCALL_ABORT_REASON] == "truncated"


def test_open_block_filtered_by_refusal(telemetry, make):
    s = make()
    s.block_started("b0", name="f")
    s.settle("refusal")
    s.ended()
    span = tool(telemetry, "f")
    assert outcome(span) == ("aborted", "filtered")
    assert span.status.description == n.ABORT_DESCRIPTIONS[n.FILTERED]


def test_unknown_finish_reason_completes_and_is_recorded(telemetry, make):
    s = make()
    s.block_started(0, name="f")
    s.settle("brand_new_reason", completes_open=True)
    s.final_event()
    s.ended()
    assert outcome(tool(telemetry, "f")) == ("completed", None)
    chat = telemetry.one("chat ")
    assert chat.attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("brand_new_reason",)
    assert chat.attributes[n.TOOLCALL_OUTCOME] == "completed"


def test_error_finish_reason_is_stream_error_with_that_type(telemetry, make):
    s = make()
    s.block_started(0, name="f")
    s.settle("error", completes_open=True)
    s.ended()
    span = tool(telemetry, "f")
    assert outcome(span) == ("aborted", "stream_error")
    assert span.attributes[n.ERROR_TYPE] == "error"


def test_error_event_then_iterator_end(telemetry, make):
    s = make()
    s.block_started(0, name="f")
    s.error_event("overloaded_error")
    s.ended()
    span = tool(telemetry, "f")
    assert span.attributes[n.ERROR_TYPE] == "overloaded_error"
    chat = telemetry.one("chat ")
    assert chat.attributes[n.ERROR_TYPE] == "overloaded_error"
    assert chat.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize("final", [True, False])
def test_inference_outcome_without_tool_calls(telemetry, make, final):
    s = make()
    if final:
        s.final_event()
    s.ended()
    chat = telemetry.one("chat ")
    assert chat.attributes[n.TOOLCALL_COUNT] == 0
    if final:
        assert chat.attributes[n.TOOLCALL_OUTCOME] == "completed"
    else:
        assert chat.attributes[n.TOOLCALL_ABORT_REASON] == "incomplete"


def test_failed_stream_records_exception_type(telemetry, make):
    s = make()
    s.block_started(0, name="f", call_id="x")
    s.fragment(0, "{")
    s.failed(openai.APIConnectionError(request=_REQUEST))
    span = tool(telemetry, "f")
    assert span.attributes[n.ERROR_TYPE] == "openai.APIConnectionError"
    (point,) = telemetry.points("toolcall.calls")
    assert point.attributes[n.ERROR_TYPE] == "openai.APIConnectionError"
    assert REGISTRY.get("x").outcome == "aborted"


def test_capture_content_cut_to_4096(telemetry, make):
    s = make(capture_content=True)
    s.block_started(0, name="f")
    for _ in range(50):
        s.fragment(0, "x" * 100)
    s.settle("stop", completes_open=True)
    s.ended()
    span = tool(telemetry, "f")
    assert span.attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] == "x" * 4096
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == 5000


def test_whole_call_has_no_size(telemetry, make):
    s = make()
    s.block_started("p", name="g", whole=True)
    s.block_completed("p")
    s.ended()
    span = tool(telemetry, "g")
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 0
    assert n.TOOLCALL_ARGUMENTS_SIZE not in span.attributes
    assert outcome(span) == ("completed", None)


def test_the_per_chunk_calls_are_the_block_machines_own() -> None:
    # StreamState composes the block machine by being one: a wrapper here would add a Python call
    # to every fragment a translator hands over.
    per_chunk = ("fragment", "fragment_size", "is_open", "call_id_of", "follow_strings", "arguments_closed")
    assert {name: getattr(StreamState, name) is getattr(Blocks, name) for name in per_chunk} == dict.fromkeys(
        per_chunk, True
    )
