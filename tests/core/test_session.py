"""The session path (``_core.session``): streams a session holds end once, whichever thread ends
them, the way the wrapped iterator's end once (TELEMETRY.md section 6, "Closed or abandoned")."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import pytest

from otel_toolcalls._config import Settings
from otel_toolcalls._core import names as n
from otel_toolcalls._core import process
from otel_toolcalls._core.request import Request
from otel_toolcalls._core.session import CLOSED, ENDED, Session, failed, stream_error
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._core.telemetry import Telemetry

STREAMS = 30


@pytest.fixture
def t(telemetry: Any):
    process.reset()
    yield Telemetry(Settings(), telemetry.tracer_provider, telemetry.meter_provider)
    process.reset()


def opened(session: Session, t: Telemetry, key: Any) -> StreamState:
    state = session.open(key, Request(t, "anthropic", "m-1"))
    assert state is not None
    state.block_started("k", name=f"tool_{key}", call_id=f"call_{key}", index=0)
    return state


def reasons(telemetry: Any) -> dict[str, str | None]:
    return {span.name: span.attributes.get(n.TOOLCALL_ABORT_REASON) for span in telemetry.tool_spans()}


def test_each_stream_ends_once_whichever_thread_ends_it(telemetry, t):
    session = Session()
    for key in range(STREAMS):
        opened(session, t, key)
    start = threading.Barrier(6)

    def closer() -> None:
        start.wait()
        session.end_all(CLOSED, final=True)

    def failer() -> None:
        start.wait()
        for key in range(STREAMS):
            session.end(key, failed(ConnectionError("reset")))

    threads = [threading.Thread(target=closer) for _ in range(3)]
    threads += [threading.Thread(target=failer) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    inference = [span for span in telemetry.spans() if span.name == "chat m-1"]
    assert len(inference) == STREAMS == len(telemetry.tool_spans())
    # Each call took its stream's one ending: closed, or the failure.
    by_call = reasons(telemetry)
    assert set(by_call.values()) <= {n.CLOSED, n.STREAM_ERROR}
    for span in inference:
        assert span.attributes[n.TOOLCALL_ABORT_REASON] in {n.CLOSED, n.STREAM_ERROR}
    # Ended final: the session opens nothing more.
    assert session.open("late", Request(t, "anthropic", "m-1")) is None
    assert not session.holds()


def test_each_ending_says_how(telemetry, t):
    session = Session()
    for key in ("ended", "closed", "failed", "cli"):
        opened(session, t, key)
    session.end("ended", ENDED)
    session.end("closed", CLOSED)
    session.end("failed", failed(TimeoutError()))
    session.end("cli", stream_error("api_error"))
    session.end("ended", CLOSED)  # taken already: nothing
    assert reasons(telemetry) == {
        "tool_call tool_ended": n.INCOMPLETE,
        "tool_call tool_closed": n.CLOSED,
        "tool_call tool_failed": n.STREAM_ERROR,
        "tool_call tool_cli": n.STREAM_ERROR,
    }
    errors = {span.name: span.attributes.get("error.type") for span in telemetry.tool_spans()}
    assert errors["tool_call tool_failed"] == "TimeoutError"
    assert errors["tool_call tool_cli"] == "api_error"


def test_an_ending_that_fails_leaves_no_other_stream_open(telemetry, t):
    session = Session()
    states = [opened(session, t, key) for key in range(3)]

    def ending(state: StreamState) -> None:
        if state is states[0]:
            raise RuntimeError("the instrumentation's own bug")
        state.closed()

    session.end_all(ending)
    assert sorted(reasons(telemetry)) == ["tool_call tool_1", "tool_call tool_2"]


def test_a_stream_ended_elsewhere_leaves_and_is_not_kept(telemetry, t):
    session = Session()
    other = Session()
    state = opened(other, t, "k")
    session.add(state)
    assert session.live() == [state]
    other.end("k", ENDED)  # the wrapped iterator's end, say
    assert session.live() == []
    assert not session.holds()
    again = opened(other, t, "again")
    session.add(again)
    other.end("again", ENDED)
    held = weakref.ref(again)
    del state, again
    gc.collect()
    # Held weakly: the session keeps no ended stream alive.
    assert held() is None
