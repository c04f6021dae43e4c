"""A simulated clock for the core: time moves only when the test says, so assertions on gaps
(time to first chunk, the buffered window, when a span ends) hold at any machine load."""

from __future__ import annotations

import time

import pytest

from otel_toolcalls._core import clock as core_clock


class SimulatedClock:
    """Stands in for ``clock.time_ns``, the one clock the core reads (a request's start included)."""

    def __init__(self) -> None:
        self.now = time.time_ns()  # a plausible epoch for the spans' times

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += round(seconds * 1e9)


def install(monkeypatch: pytest.MonkeyPatch) -> SimulatedClock:
    clock = SimulatedClock()
    monkeypatch.setattr(core_clock, "time_ns", clock)
    return clock
