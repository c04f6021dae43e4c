"""The agno adapter's table of the streams each run started (no agno needed: the real openai SDK
against the fake provider): a run's cancellation ends its open streams ``cancelled`` and no one
else's; runs whose streams all ended leave the table (the agent loop: test_agno.py)."""

from __future__ import annotations

import weakref
from typing import Any

import openai

from otel_toolcalls._core.state import Births, StreamState
from otel_toolcalls._frameworks.agno import _Runs
from otel_toolcalls.testing.openai_chat import WEATHER, ToolCall, tool_call_script


def _open_stream(fake: Any, born: list[weakref.ref[StreamState]], call: ToolCall) -> Any:
    """A stream started inside ``Births`` and read to the middle of its call's arguments."""
    fake.enqueue(tool_call_script([call]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0)
    with Births(born):
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "?"}], stream=True
        )
    chunks = iter(stream)
    next(chunks), next(chunks), next(chunks)  # the call's start and two fragments
    return stream


def _outcomes(telemetry: Any) -> dict[str, tuple[str, str | None]]:
    return {
        s.attributes["toolcall.call.id"]: (
            s.attributes["toolcall.outcome"],
            s.attributes.get("toolcall.abort_reason"),
        )
        for s in telemetry.tool_spans()
    }


def test_a_cancelled_run_ends_its_open_streams_cancelled_and_no_others(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    runs = _Runs()
    mine: list[weakref.ref[StreamState]] = []
    theirs: list[weakref.ref[StreamState]] = []
    kept = [
        _open_stream(fake, mine, WEATHER),
        _open_stream(fake, theirs, ToolCall("get_time", '{"timezone": "Europe/Zurich"}', id="call_t")),
    ]
    runs.add("run-1", mine)
    runs.add("run-2", theirs)
    runs.cancelled("run-1")
    assert _outcomes(telemetry) == {WEATHER.id: ("aborted", "cancelled")}
    runs.cancelled("run-1")  # once: the run left the table
    runs.cancelled(None)  # an event without a run id
    kept[1].close()
    assert _outcomes(telemetry)["call_t"] == ("aborted", "closed")


def test_births_outside_the_block_are_not_kept(instrument: Any, fake: Any) -> None:
    born: list[weakref.ref[StreamState]] = []
    stream = _open_stream(fake, [], WEATHER)
    with Births(born):
        pass
    assert born == []
    stream.close()


def test_runs_whose_streams_ended_leave_the_table(instrument: Any, telemetry: Any, fake: Any) -> None:
    runs = _Runs()
    born: list[weakref.ref[StreamState]] = []
    stream = _open_stream(fake, born, WEATHER)
    runs.add("run-1", born)
    for _ in stream:
        pass  # read to its end: completed
    runs.add("run-2", [])  # the next run's stream prunes the ended one
    runs.cancelled("run-1")
    assert _outcomes(telemetry) == {WEATHER.id: ("completed", None)}
    assert "run-1" not in runs._born
