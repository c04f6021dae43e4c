"""How one stream ended: what its own events said of its end (a stop reason, the provider's final
event, an in-stream error) and the terminal event that ended it, taken once.

Nothing here locks: the stream calls it under its own lock (``state.StreamState``).
"""

from __future__ import annotations

from . import names as n
from .calls import classify


class EndRecord:
    __slots__ = ("closing", "error_type", "final", "finish_reasons", "stop_abort")

    def __init__(self) -> None:
        self.final = False
        self.stop_abort: str | None = None
        self.error_type: str | None = None
        self.finish_reasons: dict[int, str] = {}
        # What ended the stream, once (None: not ended): the reason a call opened meanwhile takes.
        self.closing: tuple[str, str | None] | None = None

    def stopped(self, reason: str | None, choice: int | None) -> str | None:
        """A finish/stop reason of ``choice`` (all when None): the abort it means (None: completed)."""
        abort = classify(reason)
        if reason is not None:
            self.finish_reasons[0 if choice is None else choice] = reason
        if abort is not None:
            self.stop_abort = abort
            if abort == n.STREAM_ERROR:
                self.error_type = reason
        return abort

    def errored(self, error_type: str | None) -> str:
        """An in-stream error event; the error type the open calls end with."""
        self.error_type = error_type or n.OTHER
        self.stop_abort = n.STREAM_ERROR
        return self.error_type

    def end(self, reason: str, error_type: str | None) -> tuple[str, str | None] | None:
        """The terminal event, taken once: (reason, error type) the open calls end with; None when
        the stream had ended already."""
        if self.closing is not None:
            return None
        self.closing = (reason, error_type if reason == n.STREAM_ERROR else None)
        return self.closing

    def outcome(self, reason: str, error_type: str | None) -> tuple[str | None, str | None]:
        """(abort reason or None for completed, error type) of the stream as a whole."""
        if self.error_type is not None or reason == n.STREAM_ERROR:
            return n.STREAM_ERROR, error_type or self.error_type
        if self.stop_abort is not None:
            return self.stop_abort, None
        if self.final:
            return None, None
        return reason, None

    def finish_reasons_of(self, choices_with_calls: set[int]) -> list[str]:
        """``gen_ai.response.finish_reasons``: one per choice that said one or had calls."""
        choices = sorted(set(self.finish_reasons) | choices_with_calls) or [0]
        return [self.finish_reasons.get(c, "error") for c in choices]
