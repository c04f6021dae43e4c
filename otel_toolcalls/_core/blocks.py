"""The block events of a stream: tool-call blocks opened, fed, stopped and ended.

A part of ``StreamState`` (``_core``), apart because it is the one part that knows a call's
lifecycle inside a stream: a block replaced at its index, the pending block a later stop reason may
still truncate, the lock-then-end discipline (decide under the lock, end spans after it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind

from . import names as n
from .calls import Call, End, Opening, start_span
from .registry import call_key
from .sink import Sink
from .telemetry import Telemetry

_log = logging.getLogger("otel_toolcalls._core.state")


class BlockEvents(Sink):
    """The block half of ``StreamState``: the attributes below are set by its ``__init__``; the
    translator-facing ``block_started`` is ``Sink``'s, which hands over an ``Opening``."""

    _t: Telemetry
    _lock: threading.RLock
    _done: bool
    _closing: tuple[str, str | None]
    _child_context: otel_context.Context
    _choices_with_calls: set[int]
    _pending: Call | None
    _pending_default: str | None
    open: dict[Hashable, Call]
    provider: str
    model: str | None
    tool_calls: int

    def _now(self) -> int:
        raise NotImplementedError

    def _end_call(
        self, call: Call, reason: str | None, error_type: str | None, end_ns: int | None = None
    ) -> None:
        raise NotImplementedError

    # -- block events ----------------------------------------------------------------------------

    def _open_block(self, opening: Opening) -> None:
        ends: list[End] = []
        with self._lock:
            if self._done:
                return
            previous = self.open.pop(opening.key, None)
            if previous is not None:
                # Ended now, before the new block's span starts, though the span work comes later.
                ends.append((previous, n.INCOMPLETE, None, self._now()))
            self._take_pending(ends)
            call = self._start_call(opening)
            if self._done:
                # Finalized while the span was being started (a span processor, or a collection in
                # this thread, ended the stream): the call ends as the stream did, not left open.
                reason, error_type = self._closing
                ends.append((call, reason, error_type, None))
            else:
                self.open[opening.key] = call
            self._choices_with_calls.add(opening.choice)
            self.tool_calls += 1
        self._end_calls(ends)

    def _start_call(self, opening: Opening) -> Call:
        attributes: dict[str, Any] = {
            n.GEN_AI_PROVIDER_NAME: self.provider,
            n.GEN_AI_TOOL_NAME: opening.name,
            n.GEN_AI_TOOL_TYPE: opening.tool_type,
        }
        if self.model:
            attributes[n.GEN_AI_REQUEST_MODEL] = self.model
        if opening.call_id:
            attributes[n.GEN_AI_TOOL_CALL_ID] = call_key(opening.call_id)
        if opening.index is not None:
            attributes[n.TOOLCALL_INDEX] = opening.index
        start_ns = self._now()
        span = start_span(
            self._t.tracer,
            n.TOOL_CALL_SPAN_PREFIX + opening.name,
            context=self._child_context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_ns,
        )
        return Call(opening, span, start_ns, self._t.settings.capture_content)

    def is_open(self, key: Hashable) -> bool:
        return key in self.open

    def call_id_of(self, key: Hashable) -> str | None:
        call = self.open.get(key)
        return call.call_id if call is not None else None

    def open_keys(self) -> list[Hashable]:
        return list(self.open)

    def fragment(self, key: Hashable, text: str | None) -> None:
        """One argument fragment as the SDK delivered it: counted, never parsed or joined."""
        if not text:
            return
        call = self.open.get(key)
        if call is None:
            _log.debug("argument fragment for a block that never started: %r", key)
            return
        call.deltas += 1
        call.size += len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if call.content is not None:
            call.keep(text)

    def fragment_size(self, key: Hashable, nbytes: int, text: str | None = None) -> None:
        """A fragment whose size the adapter measured (arguments that arrive as values, not text)."""
        call = self.open.get(key)
        if call is None:
            _log.debug("argument fragment for a block that never started: %r", key)
            return
        call.deltas += 1
        call.size += nbytes
        if call.content is not None and text is not None:
            call.keep(text)

    def block_stopped(self, key: Hashable, *, unsettled: str | None = None) -> None:
        """The block's own completion event; a later stop reason may still truncate it.

        ``unsettled``: the abort reason it takes if nothing settles it (an OpenAI Responses item
        done with status ``incomplete`` is ``truncated`` unless a ``response.incomplete`` says why).
        """
        ends: list[End] = []
        with self._lock:
            call = self.open.pop(key, None)
            if call is None:
                return
            self._take_pending(ends)
            call.stop_ns = self._now()
            self._pending = call
            self._pending_default = unsettled
        self._end_calls(ends)

    def block_completed(self, key: Hashable) -> None:
        """A completion event nothing later can overturn (OpenAI Responses item done, Gemini part)."""
        self.block_aborted(key, None)

    def block_aborted(self, key: Hashable, reason: str | None, error_type: str | None = None) -> None:
        with self._lock:
            call = self.open.pop(key, None)
        if call is not None:
            self._end_call(call, reason, error_type)

    def other_block_started(self) -> None:
        """Any new block (text included) settles the pending one: the limit did not cut it."""
        ends: list[End] = []
        with self._lock:
            self._take_pending(ends)
        self._end_calls(ends)

    def _take_pending(self, ends: list[End], reason: str | None = None) -> None:
        """Under the lock: the pending call, settled with ``reason`` (or its default), to be ended."""
        call, self._pending = self._pending, None
        default, self._pending_default = self._pending_default, None
        if call is not None:
            ends.append((call, reason or default, None, call.stop_ns))

    def _take_open(self, ends: list[End], reason: str, error_type: str | None) -> None:
        """Under the lock: every open call, to be ended with ``reason``."""
        for call in self.open.values():
            ends.append((call, reason, error_type, None))
        self.open.clear()

    def _end_calls(self, ends: list[End]) -> None:
        """Outside the lock: the calls the locked part took, ended by this thread and no other."""
        for call, reason, error_type, end_ns in ends:
            self._end_call(call, reason, error_type, end_ns)
