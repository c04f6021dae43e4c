"""The ``toolcalls`` propagator in one process: what it injects and when, what an extracted header
changes for ``execute_tool`` and ``tool_call_outcome``, and hostile headers. The same through real
transports, each side in its own process, is in test_remote_*.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from internal_errors import internal_errors
from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace import SpanContext, StatusCode
from test_execute_tool import stream_call, tool_span

from otel_toolcalls import (
    IncompleteToolCallError,
    ToolCallsPropagator,
    execute_tool,
    install_propagator,
    tool_call_context,
    tool_call_outcome,
)
from otel_toolcalls._config import resolve
from otel_toolcalls._core import names as n
from otel_toolcalls._core.telemetry import REGISTRY, Telemetry
from otel_toolcalls._linking.carried import HEADER, MAX_HEADER_BYTES, decode, encode

PROPAGATOR = ToolCallsPropagator()


def injected(**kwargs: Any) -> dict[str, str]:
    carrier: dict[str, str] = {}
    PROPAGATOR.inject(carrier, **kwargs)
    return carrier


@contextmanager
def received(carrier: dict[str, Any]) -> Iterator[None]:
    """As a server instrumentation does: the extracted context made current for the handler."""
    token = otel_context.attach(PROPAGATOR.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


def sent(call_id: str, *, reason: str | None) -> tuple[dict[str, str], int]:
    """The header a sender injects for a call it streamed, and that call's tool_call span id; the
    registry is then emptied, so this process is the receiver that never saw the call."""
    stream_call(call_id, reason=reason)
    with tool_call_context(call_id):
        carrier = injected()
    record = REGISTRY.get(call_id)
    assert record is not None and record.span_context is not None
    REGISTRY.clear()
    return carrier, record.span_context.span_id


# -- what is injected, and when -------------------------------------------------------------------


def test_inside_tool_call_context_the_seen_call_is_carried(telemetry, instrument):
    stream_call("call_1", reason=None)
    with tool_call_context("call_1"):
        carrier = injected()
    span = tool_span(telemetry, "call_1").context
    assert carrier == {HEADER: f"00-completed-{span.trace_id:032x}-{span.span_id:016x}-call_1"}


def test_inside_execute_tool_the_call_is_carried(telemetry, instrument):
    stream_call("call_2", reason="closed")
    with execute_tool("call_2"):
        carrier = injected()
    assert carrier[HEADER].startswith("00-aborted-")
    assert carrier[HEADER].endswith("-call_2")


def test_nothing_outside_a_call_or_for_a_call_never_seen(telemetry, instrument):
    stream_call("call_3", reason=None)
    assert injected() == {}
    with tool_call_context("never_seen"):
        assert injected() == {}
    with execute_tool("never_seen_either"):
        assert injected() == {}
    with tool_call_context(None):
        assert injected() == {}


def test_an_explicit_context_names_its_own_call(telemetry, instrument):
    stream_call("call_4", reason=None)
    with execute_tool("call_4"):
        inside = otel_context.get_current()
        with tool_call_context("never_seen"):
            assert injected(context=inside)[HEADER].endswith("-call_4")
        assert injected(context=otel_context.Context()) == {}


def test_the_id_is_cut_and_encoded_within_the_budget(telemetry, instrument):
    long_id = "call_" + "x" * 400
    stream_call(long_id, reason=None)
    with tool_call_context(long_id):
        value = injected()[HEADER]
    assert len(value) <= MAX_HEADER_BYTES
    assert value.endswith("-" + long_id[:256])
    odd = "call/ä b%"
    stream_call(odd, reason=None)
    with tool_call_context(odd):
        value = injected()[HEADER]
    assert value.endswith("-call%2F%C3%A4%20b%25")
    assert decode(value) is not None and decode(value).call_id == odd  # type: ignore[union-attr]


def test_an_id_that_does_not_fit_is_not_sent(telemetry, instrument):
    wide = "调" * 256  # 9 bytes a character once percent-encoded
    stream_call(wide, reason=None)
    with tool_call_context(wide):
        assert injected() == {}


# -- what the receiver does with it ---------------------------------------------------------------


def test_a_carried_completed_call_links_to_the_remote_tool_call_span(telemetry, instrument):
    carrier, span_id = sent("call_c", reason=None)
    assert tool_call_outcome("call_c") is None
    with received(carrier):
        assert tool_call_outcome("call_c") == "completed"
        with execute_tool("call_c", name="get_weather", strict=True):
            pass
    run = telemetry.one("execute_tool get_weather")
    assert run.attributes[n.TOOLCALL_OUTCOME] == "completed"
    (link,) = run.links
    assert link.context.span_id == span_id and link.context.is_remote
    assert link.attributes == {n.GEN_AI_ATTRIBUTION_LINK_TYPE: n.LINK_TYPE_CAUSED_BY_GENERATION}
    assert tool_call_outcome("call_c") is None  # the context it came in is gone


def test_a_carried_aborted_call_is_refused_in_strict_mode_before_the_body(telemetry, instrument):
    carrier, _ = sent("call_a", reason="stream_error")
    ran = []
    with received(carrier), pytest.raises(IncompleteToolCallError), execute_tool(
        "call_a", name="get_weather", strict=True
    ):
        ran.append(True)
    assert ran == []
    run = telemetry.one("execute_tool get_weather")
    assert run.attributes[n.TOOLCALL_OUTCOME] == "aborted" and run.links == ()
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes[n.ERROR_TYPE] == "otel_toolcalls.IncompleteToolCallError"


def test_without_strict_a_carried_aborted_call_runs_unlinked(telemetry, instrument):
    carrier, _ = sent("call_b", reason="truncated")
    with received(carrier), execute_tool("call_b", name="t"):
        pass
    run = telemetry.one("execute_tool t")
    assert run.attributes[n.TOOLCALL_OUTCOME] == "aborted" and run.links == ()


def test_execute_tool_with_no_id_takes_the_carried_one(telemetry, instrument):
    carrier, span_id = sent("call_d", reason=None)
    with received(carrier), execute_tool(name="t"):
        pass
    run = telemetry.one("execute_tool t")
    assert run.attributes[n.GEN_AI_TOOL_CALL_ID] == "call_d"
    assert [link.context.span_id for link in run.links] == [span_id]


def test_a_carried_call_of_another_id_changes_nothing(telemetry, instrument):
    carrier, _ = sent("call_e", reason="closed")
    with received(carrier), execute_tool("call_other", name="t", strict=True):
        pass
    assert telemetry.one("execute_tool t").attributes[n.TOOLCALL_OUTCOME] == "unknown"


def test_what_the_process_saw_wins(telemetry, instrument):
    carrier, _ = sent("call_f", reason=None)
    stream_call("call_f", reason="closed")  # this process saw it cut
    with received(carrier), pytest.raises(IncompleteToolCallError), execute_tool("call_f", strict=True):
        pytest.fail("a carried 'completed' let a locally aborted call run")


def test_the_decorator_form_keeps_the_telemetry_it_was_given(telemetry, instrument, elsewhere):
    mine = Telemetry(resolve(), tracer_provider=telemetry.tracer_provider)

    @execute_tool(name="decorated", telemetry=mine)
    def tool(*, tool_call_id: str) -> str:
        return tool_call_id

    assert tool(tool_call_id="call_g") == "call_g"
    assert [s.name for s in telemetry.spans()] == ["execute_tool decorated"]
    assert elsewhere.get_finished_spans() == ()


# -- hostile input --------------------------------------------------------------------------------

VALID = "00-completed-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-call_1"
MALFORMED = [
    "",
    "garbage",
    VALID.replace("completed", "complete"),
    VALID.replace("completed", "COMPLETED"),
    VALID.replace("completed", "unknown"),
    VALID.replace("00-", "01-", 1),
    VALID.replace("4bf92f3577b34da6a3ce929d0e0e4736", "0" * 32),
    VALID.replace("00f067aa0ba902b7", "0" * 16),
    VALID.replace("4bf92f3577b34da6a3ce929d0e0e4736", "4BF92F3577B34DA6A3CE929D0E0E4736"),
    VALID.replace("00f067aa0ba902b7", "00f067aa0ba902b"),
    VALID[: -len("call_1")],
    VALID + " ",
    VALID + ",",
    VALID + "\n",
    VALID.replace("call_1", "call%FF"),  # not UTF-8
    VALID.replace("call_1", "call%0Aset-cookie"),  # a control character
    VALID.replace("call_1", "call%2"),
    VALID.replace("call_1", "x" * 257),
    VALID.replace("call_1", "%41" * 257),  # 257 characters once decoded
    VALID + "x" * MAX_HEADER_BYTES,
    f"{VALID},{VALID}",
]


@pytest.mark.parametrize("value", MALFORMED)
def test_a_malformed_header_leaves_the_call_unknown(telemetry, instrument, value):
    stream_call("call_1", reason="closed")
    REGISTRY.clear()
    with received({HEADER: value}):
        assert tool_call_outcome("call_1") is None
        with execute_tool("call_1", name="t", strict=True):
            pass
    run = telemetry.one("execute_tool t")
    assert run.attributes[n.TOOLCALL_OUTCOME] == "unknown" and run.links == ()


@pytest.mark.parametrize("carrier", [{HEADER: [VALID, VALID]}, {HEADER: 7}, {HEADER: b"00-completed"}, []])
def test_repeated_or_non_text_values_are_ignored(carrier):
    assert PROPAGATOR.extract(carrier) == otel_context.get_current()


def test_a_getter_that_raises_is_survived_and_counted(telemetry, instrument):
    class Broken:
        def get(self, carrier: Any, key: str) -> Any:
            raise RuntimeError("a carrier the package does not know")

        def keys(self, carrier: Any) -> list[str]:
            return []

    assert PROPAGATOR.extract({}, getter=Broken()) == otel_context.get_current()
    assert internal_errors(telemetry) == {("_linking.propagator.extract", "RuntimeError"): 1}


def test_a_setter_that_raises_is_survived_and_counted(telemetry, instrument):
    class Broken:
        def set(self, carrier: Any, key: str, value: str) -> None:
            raise RuntimeError("a carrier the package does not know")

    stream_call("call_s", reason=None)
    carrier: dict[str, str] = {}
    with tool_call_context("call_s"):
        PROPAGATOR.inject(carrier, setter=Broken())
    assert carrier == {}
    assert internal_errors(telemetry) == {("_linking.propagator.inject", "RuntimeError"): 1}


def test_the_valid_form_round_trips():
    call = decode(VALID)
    assert call is not None and call.outcome == "completed" and call.call_id == "call_1"
    assert call.span_context.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert encode(call.outcome, call.call_id, call.span_context) == VALID
    assert encode("unknown", "c", call.span_context) is None
    assert encode("completed", "c", SpanContext(0, 0, False)) is None


@given(st.text(max_size=600))
def test_decode_never_raises_and_answers_only_the_form(value):
    call = decode(value)
    if call is not None:
        assert call.outcome in ("completed", "aborted")
        assert 0 < len(call.call_id) <= 256 and call.call_id.isprintable()
        assert call.span_context.is_valid


@given(st.text(min_size=1, max_size=300))
def test_every_id_that_is_sent_comes_back_whole(call_id):
    value = encode("aborted", call_id, SpanContext(1, 2, False))
    if value is not None:
        call = decode(value)
        if call_id[:256].isprintable():
            assert call is not None and call.call_id == call_id[:256]


# -- turning it on --------------------------------------------------------------------------------


def test_install_propagator_adds_it_once():
    before = propagate.get_global_textmap()
    try:
        install_propagator()
        once = propagate.get_global_textmap()
        install_propagator()
        assert propagate.get_global_textmap() is once
        assert isinstance(once, CompositePropagator) and once.fields == before.fields | {HEADER}
    finally:
        propagate.set_global_textmap(before)


def test_otel_propagators_names_it():
    env = {**os.environ, "OTEL_PROPAGATORS": "tracecontext,baggage,toolcalls"}
    code = "from opentelemetry import propagate; print(sorted(propagate.get_global_textmap().fields))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "'toolcall'" in out and "'traceparent'" in out
