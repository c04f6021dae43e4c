"""``revocation``: a call its server takes back after its block ended (TELEMETRY.md section 6,
"Revoked after completion"): one count, one span, one outcome, whichever comes first of the
revocation and the seal, from any thread."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from otel_toolcalls import tool_call_outcome
from otel_toolcalls._config import Settings
from otel_toolcalls._core import names as n
from otel_toolcalls._core import process, revocation, stream
from otel_toolcalls._core.revocation import revoke, seal
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.telemetry import Telemetry


@pytest.fixture
def make(telemetry: Any):
    process.reset()

    def build() -> StreamState:
        t = Telemetry(Settings(), telemetry.tracer_provider, telemetry.meter_provider)
        return StreamState(t, RequestInfo(provider="gcp.gemini", model="m-1"))

    yield build
    process.reset()


def delivered(state: StreamState, call_id: str, *, revocable: bool = True) -> None:
    """A whole call, complete at its own message (Gemini Live's toolCall)."""
    state.block_started(call_id, name="lookup", call_id=call_id, whole=True, free_form=True,
                        revocable=revocable)  # fmt: skip
    state.block_completed(call_id)


def spans_of(telemetry: Any, call_id: str) -> list[Any]:
    return [s for s in telemetry.tool_spans() if s.attributes[n.TOOLCALL_CALL_ID] == call_id]


def assert_revoked(telemetry: Any, call_id: str) -> None:
    (span,) = spans_of(telemetry, call_id)
    attrs = span.attributes
    assert (attrs[n.TOOLCALL_OUTCOME], attrs[n.TOOLCALL_ABORT_REASON]) == ("aborted", "cancelled")
    assert attrs[n.ERROR_TYPE] == "cancelled"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == n.ABORT_DESCRIPTIONS[n.CANCELLED]
    assert tool_call_outcome(call_id) == "aborted"


def test_a_completed_revocable_call_is_held_then_revoked(telemetry, make):
    state = make()
    delivered(state, "fc_1")
    # Linked and run as completed meanwhile; its span and its count wait for its fate.
    assert tool_call_outcome("fc_1") == "completed"
    assert spans_of(telemetry, "fc_1") == [] and telemetry.calls_by_outcome() == {}
    state.ended()  # the turn ends; the call stays revocable
    assert spans_of(telemetry, "fc_1") == []
    assert revoke("fc_1", n.CANCELLED) is True
    assert_revoked(telemetry, "fc_1")
    assert telemetry.calls_by_outcome() == {("aborted", "cancelled"): 1}
    (point,) = telemetry.points("toolcall.calls")
    assert point.attributes[n.ERROR_TYPE] == "cancelled"
    # Ended at the block's end, not at the revocation: before the turn's own end.
    (span,) = spans_of(telemetry, "fc_1")
    assert span.end_time <= telemetry.one("chat m-1").end_time


def test_a_sealed_call_is_completed_and_a_later_revocation_changes_nothing(telemetry, make):
    state = make()
    delivered(state, "fc_1")
    seal(["fc_1"])
    assert revoke("fc_1") is False
    (span,) = spans_of(telemetry, "fc_1")
    assert span.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert span.status.status_code is StatusCode.UNSET
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert tool_call_outcome("fc_1") == "completed"


def test_an_unknown_id_is_a_no_op(telemetry, instrument, make):
    # instrument: the package's own failures count into this test's reader.
    state = make()
    delivered(state, "fc_1")
    for odd in ("fc_unknown", "", None, 5):
        assert revoke(odd) is False  # type: ignore[arg-type]
    seal(["fc_unknown", None, 5])  # type: ignore[list-item]
    assert tool_call_outcome("fc_unknown") is None
    assert telemetry.calls_by_outcome() == {}  # fc_1 still held, nothing counted
    seal(["fc_1"])
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert telemetry.points("toolcall.internal_errors") == []


def test_revoked_twice_is_counted_once(telemetry, make):
    state = make()
    delivered(state, "fc_1")
    assert [revoke("fc_1"), revoke("fc_1")] == [True, False]
    seal(["fc_1"])
    assert len(spans_of(telemetry, "fc_1")) == 1
    assert telemetry.calls_by_outcome() == {("aborted", "cancelled"): 1}


@pytest.mark.parametrize("revocable", [True, False])
def test_revoked_before_its_block_ended(telemetry, make, revocable):
    state = make()
    state.block_started(0, name="lookup", call_id="fc_open", revocable=revocable)
    state.fragment(0, '{"q": 1')
    assert revoke("fc_open") is True and revoke("fc_open") is False
    assert spans_of(telemetry, "fc_open") == []
    state.fragment(0, "}")
    state.block_completed(0)
    # Its completion event came after the revocation: aborted at its block end, held for nothing.
    assert_revoked(telemetry, "fc_open")
    assert telemetry.calls_by_outcome() == {("aborted", "cancelled"): 1}


def test_revoked_before_its_block_was_cut_keeps_one_reason(telemetry, make):
    state = make()
    state.block_started(0, name="lookup", call_id="fc_cut", revocable=True)
    state.block_stopped(0)  # stopped, awaiting the stop reason
    assert revoke("fc_cut") is True
    state.settle("max_tokens")
    (span,) = spans_of(telemetry, "fc_cut")
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == "truncated"
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}


def test_revoked_from_other_threads_while_sealed_is_counted_once(telemetry, make):
    state = make()
    ids = [f"fc_{i}" for i in range(50)]
    for call_id in ids:
        delivered(state, call_id)
    start = threading.Barrier(9)
    won: list[bool] = []

    def revoker() -> None:
        start.wait()
        won.extend(revoke(call_id) for call_id in ids)

    def sealer() -> None:
        start.wait()
        seal(reversed(ids))

    threads = [threading.Thread(target=revoker) for _ in range(8)] + [threading.Thread(target=sealer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = telemetry.calls_by_outcome()
    aborted = counts.get(("aborted", "cancelled"), 0)
    # Each call ended once, revoked or sealed; the revokers won exactly the calls counted aborted.
    assert aborted + counts.get(("completed", None), 0) == len(ids) == len(telemetry.tool_spans())
    assert won.count(True) == aborted
    for call_id in ids:
        (span,) = spans_of(telemetry, call_id)
        assert tool_call_outcome(call_id) == span.attributes[n.TOOLCALL_OUTCOME]


def test_revoked_from_another_thread_while_its_block_is_open(telemetry, make):
    state = make()
    state.block_started(0, name="lookup", call_id="fc_t", revocable=True)
    thread = threading.Thread(target=revoke, args=("fc_t",))
    thread.start()
    thread.join()
    state.block_completed(0)
    assert_revoked(telemetry, "fc_t")


def test_held_calls_are_sealed_at_exit_and_past_the_bound(telemetry, make, monkeypatch):
    monkeypatch.setattr(revocation, "MAX_HELD", 2)
    state = make()
    for call_id in ("fc_1", "fc_2", "fc_3"):
        delivered(state, call_id)
    # The oldest left the bound sealed: completed, no longer revocable.
    assert [s.attributes[n.TOOLCALL_CALL_ID] for s in telemetry.tool_spans()] == ["fc_1"]
    assert revoke("fc_1") is False and revoke("fc_2") is True
    stream._end_live_streams()  # the interpreter's exit
    assert telemetry.calls_by_outcome() == {("completed", None): 2, ("aborted", "cancelled"): 1}
    assert process.HELD == {}


def test_a_non_revocable_call_is_never_held(telemetry, make):
    state = make()
    delivered(state, "fc_1", revocable=False)
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert revoke("fc_1") is False
    assert tool_call_outcome("fc_1") == "completed"


def test_a_newer_call_with_the_same_id_seals_the_earlier(telemetry, make):
    state = make()
    delivered(state, "fc_1")
    state.ended()
    later = make()
    delivered(later, "fc_1")
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert revoke("fc_1") is True
    first, second = sorted(spans_of(telemetry, "fc_1"), key=lambda s: s.start_time)
    assert first.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert second.attributes[n.TOOLCALL_OUTCOME] == "aborted"
    assert tool_call_outcome("fc_1") == "aborted"
