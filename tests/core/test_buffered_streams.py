"""Buffered streams (TELEMETRY.md section 7): chunks held back and released in one burst after a long
wait are flagged; paced chunks are not. Real openai SDK against the fake provider.

The flag compares when chunks reach the consumer with the settings' thresholds. Most tests run on a
simulated clock (tests/helpers/sim_clock.py): the consumer moves it between chunks, so the gaps the
core sees are exactly the ones the test states, at any load, and the thresholds are checked at
their edges. Two tests keep the real clock end to end, each robust by construction: load only
lengthens waits and gaps, and neither can fail by a wait or gap growing.
"""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest
import sim_clock

from otel_toolcalls._core import clock as _core
from otel_toolcalls.testing.openai_chat import WEATHER, Event, events_for, script_for

# 1 block start + the awkward fragments of WEATHER's arguments + the finish: well over 8 chunks.
EVENTS = events_for([WEATHER])
# The defaults (_config.py): 8 chunks, 10 ms, 250 ms.
MIN_CHUNKS, WINDOW, MIN_TTFC = 8, 0.010, 0.250


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> sim_clock.SimulatedClock:
    return sim_clock.install(monkeypatch)


def _client(fake: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)


def _simulated(fake: Any, clock: sim_clock.SimulatedClock, *, wait: float, gap: float) -> None:
    """The first chunk reaches the consumer ``wait`` after the request, each next one ``gap`` after
    the one before (the server writes at once; only the simulated clock moves)."""
    fake.enqueue(script_for(EVENTS, split_characters=False))
    stream = _client(fake).chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
    clock.advance(wait)
    for _ in stream:
        clock.advance(gap)


def _real(fake: Any, *, read_gap: float = 0.0, **script: Any) -> None:
    """``read_gap``: the consumer waits that long after each chunk, so chunks are read at least that
    far apart whatever the load (a server's pacing is lost when the consumer stalls: the chunks
    then wait in the socket and are read at once)."""
    fake.enqueue(script_for(EVENTS, split_characters=False, **script))
    for _ in _client(fake).chat.completions.create(model="gpt-4o-mini", messages=[], stream=True):
        if read_gap:
            time.sleep(read_gap)


def _flags(telemetry: Any) -> list[Any]:
    chats = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    return [s.attributes.get("toolcall.stream.buffered") for s in chats]


def _buffered_points(telemetry: Any) -> list[Any]:
    return telemetry.points("toolcall.stream.buffered")


def test_burst_after_a_long_wait_is_flagged(instrument: Any, telemetry: Any, fake: Any, clock: Any) -> None:
    assert len(EVENTS) >= 10
    _simulated(fake, clock, wait=0.3, gap=0.0)
    span = telemetry.one("chat ")
    assert span.attributes["toolcall.stream.buffered"] is True
    assert span.attributes["gen_ai.response.time_to_first_chunk"] == 0.3
    assert span.attributes["toolcall.outcome"] == "completed"
    (point,) = _buffered_points(telemetry)
    assert point.value == 1
    assert point.attributes == {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini"}
    # The tool call itself is unaffected.
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_the_window_spans_the_first_n_chunks(instrument: Any, telemetry: Any, fake: Any, clock: Any) -> None:
    # The Nth chunk arrives (N - 1) gaps after the first: flagged up to the window, inclusive.
    instrument(buffered_window_ms=7)
    _simulated(fake, clock, wait=0.3, gap=0.001)  # the 8th chunk at 7 ms
    _simulated(fake, clock, wait=0.3, gap=0.001 + 1e-9)  # at 7 ms + 7 ns
    assert _flags(telemetry) == [True, None]
    (point,) = _buffered_points(telemetry)
    assert point.value == 1


def test_paced_fragments_are_not_flagged(instrument: Any, telemetry: Any, fake: Any, clock: Any) -> None:
    # 2 ms apart: 14 ms from the first to the 8th chunk, against the 10 ms window.
    _simulated(fake, clock, wait=0.3, gap=0.002)
    # Paced from the start, after no wait at all.
    _simulated(fake, clock, wait=0.0, gap=0.5)
    assert _flags(telemetry) == [None, None]
    assert _buffered_points(telemetry) == []


def test_a_wait_below_the_threshold_is_not_flagged(
    instrument: Any, telemetry: Any, fake: Any, clock: Any
) -> None:
    # A short response that simply arrived at once: nothing was held back.
    _simulated(fake, clock, wait=0.0, gap=0.0)
    # The threshold's edge: a burst after exactly the minimum wait is flagged, 1 ms less is not.
    _simulated(fake, clock, wait=MIN_TTFC - 0.001, gap=0.0)
    _simulated(fake, clock, wait=MIN_TTFC, gap=0.0)
    assert _flags(telemetry) == [None, None, True]


def test_thresholds_by_keyword(instrument: Any, telemetry: Any, fake: Any, clock: Any) -> None:
    # 100 ms wait, 2 ms gaps: below the default wait, and 14 ms to the 8th chunk > 10 ms.
    _simulated(fake, clock, wait=0.1, gap=0.002)
    instrument(buffered_min_ttfc_ms=50, buffered_min_chunks=4)  # 6 ms to the 4th chunk
    _simulated(fake, clock, wait=0.1, gap=0.002)
    instrument(buffered_min_ttfc_ms=50, buffered_window_ms=15)  # the 8th chunk at 14 ms
    _simulated(fake, clock, wait=0.1, gap=0.002)
    instrument(buffered_min_ttfc_ms=5000)  # a 0.3 s burst is below this threshold
    _simulated(fake, clock, wait=0.3, gap=0.0)
    assert _flags(telemetry) == [None, True, True, None]


def test_thresholds_by_environment(
    instrument: Any, telemetry: Any, fake: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TOOLCALLS_BUFFERED_MIN_TTFC_MS", "50")
    monkeypatch.setenv("OTEL_TOOLCALLS_BUFFERED_MIN_CHUNKS", "4")
    monkeypatch.setenv("OTEL_TOOLCALLS_BUFFERED_WINDOW_MS", "7")  # the 4th chunk at 6 ms
    instrument()
    _simulated(fake, clock, wait=0.1, gap=0.002)
    # The keyword wins over the variable.
    instrument(buffered_window_ms=5)
    _simulated(fake, clock, wait=0.1, gap=0.002)
    assert _flags(telemetry) == [True, None]


def test_real_clock_a_burst_after_a_wait_is_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    # The real clock end to end. Robust at any load: the server waits 0.3 s before the first byte,
    # so the wait the core measures is >= 0.3 s > 0.25 s, and the window (10 minutes) holds any
    # burst a loaded machine can stretch. Load can only lengthen the wait.
    instrument(buffered_window_ms=600_000)
    _real(fake, first_byte_delay=0.3, burst=True)
    span = telemetry.one("chat ")
    assert span.attributes["toolcall.stream.buffered"] is True
    assert span.attributes["gen_ai.response.time_to_first_chunk"] >= 0.3


def test_real_clock_paced_reads_are_not_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    # The real clock end to end. Robust at any load: the consumer sleeps 20 ms after each chunk, so
    # the 8th chunk is read >= 140 ms after the first, against the 10 ms window; load only
    # lengthens the gaps.
    _real(fake, first_byte_delay=0.3, read_gap=0.02)
    assert _flags(telemetry) == [None]
    assert _buffered_points(telemetry) == []


def test_clock_reads_do_not_grow_with_chunks(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int] = []
    real = _core.time_ns

    def counting() -> int:
        reads.append(1)
        return real()

    monkeypatch.setattr(_core, "time_ns", counting)
    instrument(buffered_min_ttfc_ms=0)  # so that the Nth chunk always reads the clock
    client = _client(fake)
    counts = []
    for size in (10, 60):
        reads.clear()
        text = [Event(content=f"w{i} ") for i in range(size)] + [Event(finish_reason="stop")]
        fake.enqueue(script_for(text, split_characters=False))
        for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True):
            pass
        counts.append(len(reads))
    # The request's start, the first chunk's read, the Nth chunk's, and the end's (the inference
    # span ends at that time, the duration metric records it: the span's end reads no clock of its
    # own); none per chunk.
    assert counts == [4, 4]
