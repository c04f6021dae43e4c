"""Buffered streams (TELEMETRY.md section 7): chunks held back and released in one burst after a long
wait are flagged; paced chunks are not. Real openai SDK against the fake provider."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest

from otel_toolcalls._core import state as _core
from otel_toolcalls.testing.openai_chat import WEATHER, Event, events_for, script_for

# 1 block start + the awkward fragments of WEATHER's arguments + the finish: well over 8 chunks.
EVENTS = events_for([WEATHER])


def _run(fake: Any, *, read_gap: float = 0.0, **script: Any) -> None:
    """``read_gap``: the consumer waits that long after each chunk, so chunks are read at least that
    far apart whatever the load (a server's pacing is lost when the consumer stalls: the chunks
    then wait in the socket and are read at once)."""
    fake.enqueue(script_for(EVENTS, split_characters=False, **script))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True):
        if read_gap:
            time.sleep(read_gap)


def _inference(telemetry: Any) -> Any:
    return telemetry.one("chat ")


def _buffered_points(telemetry: Any) -> list[Any]:
    return telemetry.points("toolcall.stream.buffered")


# The window is timed at the consumer: on a loaded machine the test process can be descheduled for
# longer than the default 10 ms between reading the first and the eighth chunk of a real burst (seen
# at load 30 on 2 cores). Tests expecting a flag widen it to 1 s; paced scripts that must not be
# flagged stay slower than the window whatever the load, since load only makes them slower.
WIDE_MS = 1000


def test_burst_after_a_long_wait_is_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    assert len(EVENTS) >= 10
    instrument(buffered_window_ms=WIDE_MS)
    _run(fake, first_byte_delay=0.3, burst=True)
    span = _inference(telemetry)
    assert span.attributes["toolcall.stream.buffered"] is True
    assert span.attributes["gen_ai.response.time_to_first_chunk"] >= 0.25
    assert span.attributes["toolcall.outcome"] == "completed"
    (point,) = _buffered_points(telemetry)
    assert point.value == 1
    assert point.attributes == {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini"}
    # The tool call itself is unaffected.
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_paced_fragments_are_not_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    # Read 20 ms apart against the default 10 ms window (7 gaps: 140 ms at the least).
    _run(fake, first_byte_delay=0.3, pace=0.01, read_gap=0.02)
    # With the wide window too, when the chunks are read wider apart than it (7 gaps of 0.2 s > 1 s).
    instrument(buffered_window_ms=WIDE_MS)
    _run(fake, first_byte_delay=0.3, pace=0.01, read_gap=0.2)
    spans = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert [s.attributes.get("toolcall.stream.buffered") for s in spans] == [None, None]
    assert _buffered_points(telemetry) == []


def test_fast_burst_is_not_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    # A short response that simply arrived at once: no long wait, nothing held back.
    _run(fake, burst=True)
    assert "toolcall.stream.buffered" not in _inference(telemetry).attributes
    assert _buffered_points(telemetry) == []


def test_thresholds_by_keyword(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(buffered_min_ttfc_ms=50, buffered_min_chunks=4, buffered_window_ms=WIDE_MS)
    _run(fake, first_byte_delay=0.1, pace=0.005)
    assert _inference(telemetry).attributes["toolcall.stream.buffered"] is True
    # The same burst is not flagged when its wait is below the threshold.
    instrument(buffered_min_ttfc_ms=5000, buffered_window_ms=WIDE_MS)
    _run(fake, first_byte_delay=0.3, burst=True)
    flagged = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    assert [s.attributes.get("toolcall.stream.buffered") for s in flagged] == [True, None]


def test_thresholds_by_environment(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TOOLCALLS_BUFFERED_MIN_TTFC_MS", "50")
    monkeypatch.setenv("OTEL_TOOLCALLS_BUFFERED_MIN_CHUNKS", "4")
    monkeypatch.setenv("OTEL_TOOLCALLS_BUFFERED_WINDOW_MS", str(WIDE_MS))
    instrument()
    _run(fake, first_byte_delay=0.1, pace=0.005)
    assert _inference(telemetry).attributes["toolcall.stream.buffered"] is True
    # The keyword wins over the variable.
    instrument(buffered_window_ms=1)
    _run(fake, first_byte_delay=0.1, pace=0.005, read_gap=0.005)
    second = [s for s in telemetry.spans() if s.name.startswith("chat ")][-1]
    assert "toolcall.stream.buffered" not in second.attributes


def test_clock_reads_do_not_grow_with_chunks(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int] = []
    real = _core._time_ns

    def counting() -> int:
        reads.append(1)
        return real()

    monkeypatch.setattr(_core, "_time_ns", counting)
    instrument(buffered_min_ttfc_ms=0)  # so that the Nth chunk always reads the clock
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    counts = []
    for size in (10, 60):
        reads.clear()
        text = [Event(content=f"w{i} ") for i in range(size)] + [Event(finish_reason="stop")]
        fake.enqueue(script_for(text, split_characters=False))
        for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True):
            pass
        counts.append(len(reads))
    # The first chunk's read, the Nth chunk's, and the end's (the inference span ends at that time,
    # the duration metric records it: the span's end reads no clock of its own); none per chunk.
    assert counts == [3, 3]
