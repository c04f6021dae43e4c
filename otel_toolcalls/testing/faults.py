"""Faults a scenario reply can carry, named for what the agent loop sees, not for any wire format.

Each fault says where it strikes (``call``: the index of the tool call it targets, ``after``: how
many of that call's argument fragments get through) and what the package will report for the
calls it breaks (``reason``; None for faults that only change timing or fragmentation). The
wire format of each provider API is written by ``scenario.py`` from the builders next to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Fault:
    call: int = 0
    after: int = 2

    kind: ClassVar[str] = "none"
    reason: ClassVar[str | None] = None

    @property
    def breaks(self) -> bool:
        """True when the targeted call ends ``aborted``: the loop must not execute or keep it."""
        return self.reason is not None

    @property
    def id(self) -> str:
        return self.kind


@dataclass(frozen=True)
class CutMidArguments(Fault):
    """The connection drops after ``after`` argument fragments of the call: the SDK raises."""

    kind = "cut_mid_arguments"
    reason = "stream_error"


@dataclass(frozen=True)
class CutAfterCall(Fault):
    """The connection drops after the call's last argument fragment, before its completion event:
    the arguments parse as valid JSON, yet no event said the call was complete."""

    kind = "cut_after_call"
    reason = "stream_error"


@dataclass(frozen=True)
class Truncate(Fault):
    """The model hits its output limit after ``after`` fragments (``length``, ``max_tokens``,
    ``max_output_tokens``): the body ends normally, the call's arguments are partial."""

    kind = "truncate"
    reason = "truncated"


@dataclass(frozen=True)
class Filter(Fault):
    """A content filter ends the response mid-arguments (``content_filter``, ``refusal``)."""

    kind = "filter"
    reason = "filtered"


@dataclass(frozen=True)
class ErrorEvent(Fault):
    """The provider sends an in-stream error event mid-arguments (overloaded, server error)."""

    kind = "error_event"
    reason = "stream_error"


@dataclass(frozen=True)
class Buffer(Fault):
    """Nothing for ``wait`` seconds, then the whole body at once, as a buffering proxy delivers
    it: the call completes, the inference span says ``toolcall.stream.buffered``."""

    wait: float = 0.3
    kind = "buffer"


@dataclass(frozen=True)
class Pace(Fault):
    """``seconds`` between every write: a slow model."""

    seconds: float = 0.005
    kind = "pace"


@dataclass(frozen=True)
class Stall(Fault):
    """A pause of ``seconds`` after ``after`` fragments of the call, then the rest: a loop with a
    read timeout shorter than that sees the stream fail mid-arguments."""

    seconds: float = 0.1
    kind = "stall"


def cut_mid_arguments(*, after: int = 2, call: int = 0) -> Fault:
    return CutMidArguments(call=call, after=after)


def cut_after_call(*, call: int = 0) -> Fault:
    return CutAfterCall(call=call)


def truncate(*, after: int = 2, call: int = 0) -> Fault:
    return Truncate(call=call, after=after)


def filter(*, after: int = 2, call: int = 0) -> Fault:
    return Filter(call=call, after=after)


def error_event(*, after: int = 2, call: int = 0) -> Fault:
    return ErrorEvent(call=call, after=after)


def buffer(*, wait: float = 0.3) -> Fault:
    return Buffer(wait=wait)


def pace(seconds: float = 0.005) -> Fault:
    return Pace(seconds=seconds)


def stall(seconds: float = 0.1, *, after: int = 2, call: int = 0) -> Fault:
    return Stall(call=call, after=after, seconds=seconds)


# One of each: what ``each_fault`` runs a test over. The ones that break a call come first.
ALL_FAULTS: tuple[Fault, ...] = (
    cut_mid_arguments(),
    cut_after_call(),
    truncate(),
    filter(),
    error_event(),
    buffer(),
    pace(),
    stall(),
)
BREAKING_FAULTS: tuple[Fault, ...] = tuple(f for f in ALL_FAULTS if f.breaks)
