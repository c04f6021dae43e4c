"""The block state machine of one stream: each tool-call block opens (its span starts), counts its
argument fragments, waits for a stop reason once its own block stopped, and ends ``completed`` or
aborted with a reason, exactly once.

The stream's lock guards every decision to open, settle or end a call, so a call is ended exactly
once and none is opened once the stream is done; spans are ended after the lock is released, so an
exporter never runs under it. Fragments take no lock: they only count into a call open or just
ended (one that loses that race arrived after the end: not counted).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind

from . import clock, document, revocation
from . import names as n
from .calls import Call, End, Opening, start_span, utf8_len
from .document import BLANKS
from .ending import EndRecord
from .registry import call_key
from .sink import Sink
from .telemetry import Telemetry

_log = logging.getLogger(__name__)

# The first part of the key a superseded call stays open under (with its id: one key per call).
_SUPERSEDED = object()


class Blocks(Sink):
    """A stream's tool-call blocks (the ``sink.Sink`` a translator drives); ``call_context`` is
    the parent of their spans, given by the stream (``state.StreamState``)."""

    def __init__(self, telemetry: Telemetry, provider: str, model: str | None, ending: EndRecord) -> None:
        self.telemetry = telemetry
        self.provider = provider
        self.model = model
        self.ending = ending
        self.open: dict[Hashable, Call] = {}
        # The last block whose own completion event arrived but whose outcome a later stop reason
        # may still change (Anthropic/Bedrock/Cohere block-stop before the message-level stop).
        self._pending: Call | None = None
        # The abort reason the pending block takes when no stop reason settles it (None: completed).
        self._pending_default: str | None = None
        self.choices_with_calls: set[int] = set()
        self.tool_calls = 0
        # Reentrant: a collection in the thread that holds it can abandon this very stream.
        self.lock = threading.RLock()

    def call_context(self) -> otel_context.Context:
        """The context the calls' spans start in (under the inference span): the stream's to give."""
        raise NotImplementedError

    def start_block(self, opening: Opening) -> None:
        ends: list[End] = []
        with self.lock:
            if self.ending.closing is not None:
                return
            previous = self.open.pop(opening.key, None)
            if previous is not None:
                self._supersede(previous, ends)
            self.take_pending(ends)
            call = self._start_call(opening)
            closing = self.ending.closing
            if closing is not None:
                # Finalized while the span was being started (a span processor, or a collection in
                # this thread, ended the stream): the call ends as the stream did, not left open.
                ends.append((call, closing[0], closing[1], None))
            else:
                self.open[opening.key] = call
            self.choices_with_calls.add(opening.choice)
            self.tool_calls += 1
        self.end_calls(ends)

    def _supersede(self, call: Call, ends: list[End]) -> None:
        """Under the lock: a new block on the key of an open one (SGLang sends two calls on index
        0). The earlier call's own arguments decide: cut, it ends now; else it stays open under a key
        of its own and ends as the rest of its choice does."""
        if call.cut():
            # Ended now, before the new block's span starts, though the span work comes later.
            ends.append((call, n.UNTERMINATED, None, clock.time_ns()))
        else:
            self.open[(_SUPERSEDED, id(call))] = call

    def _start_call(self, opening: Opening) -> Call:
        attributes: dict[str, Any] = {
            n.GEN_AI_PROVIDER_NAME: self.provider,
            n.TOOLCALL_TOOL_NAME: opening.name,
            n.TOOLCALL_TOOL_TYPE: opening.tool_type,
        }
        if self.model:
            attributes[n.TOOLCALL_REQUEST_MODEL] = self.model
        if opening.call_id:
            attributes[n.TOOLCALL_CALL_ID] = call_key(opening.call_id)
        if opening.index is not None:
            attributes[n.TOOLCALL_INDEX] = opening.index
        start_ns = clock.time_ns()
        span = start_span(
            self.telemetry.tracer,
            n.TOOL_CALL_SPAN_PREFIX + opening.name,
            context=self.call_context(),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_ns,
        )
        return Call(opening, span, start_ns, self.telemetry.settings.capture_content)

    def is_open(self, key: Hashable) -> bool:
        return key in self.open

    def call_id_of(self, key: Hashable) -> str | None:
        call = self.open.get(key)
        return call.call_id if call is not None else None

    def open_keys(self) -> list[Hashable]:
        return list(self.open)

    def unended_calls(self) -> list[Call]:
        """The calls not ended yet: open, or stopped and awaiting their stop reason. No lock: read
        from any thread, by a caller that may hold a lock this stream's end takes after its own."""
        pending = self._pending
        return [*list(self.open.values()), *((pending,) if pending is not None else ())]

    def fragment(self, key: Hashable, text: str | None) -> None:
        """One argument fragment as the SDK delivered it: counted, never parsed or joined."""
        if not text:
            return
        try:
            # A subscript, not .get(): no method call on the path of every fragment.
            call = self.open[key]
        except KeyError:
            _log.debug("argument fragment for a block that never started: %r", key)
            return
        call.deltas += 1
        # The ASCII fragment (most of them) costs no call; utf8_len alone knows the other bytes.
        call.size += len(text) if text.isascii() else utf8_len(text)
        # One strip (rstrip hands back the same str when nothing goes) and, for an object whose
        # strings are not followed, its last character.
        tail = text.rstrip(BLANKS)
        if tail:
            if call.plain:
                call.last = tail[-1]
            else:
                document.take(call, tail)
        if call.content is not None:
            call.keep(text)

    def arguments_closed(self, key: Hashable) -> bool:
        """The call open at ``key`` has arguments that end a whole document (``document``)."""
        call = self.open.get(key)
        return call is not None and document.complete(call)

    def follow_strings(self, key: Hashable) -> None:
        """The call open at ``key`` follows its strings, if no text of it has come yet."""
        call = self.open.get(key)
        # Asked on every delta of such a server: the common answer (text has come) costs no call.
        if call is not None and call.checked and not call.opened:
            document.follow(call)

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
        with self.lock:
            call = self.open.pop(key, None)
            if call is None:
                return
            self.take_pending(ends)
            call.stop_ns = clock.time_ns()
            self._pending = call
            self._pending_default = unsettled
        self.end_calls(ends)

    def block_completed(self, key: Hashable) -> None:
        """A completion event nothing later can overturn (OpenAI Responses item done, Gemini part)."""
        self.block_aborted(key, None)

    def block_aborted(self, key: Hashable, reason: str | None, error_type: str | None = None) -> None:
        with self.lock:
            call = self.open.pop(key, None)
        if call is not None:
            self.end_call(call, reason, error_type)

    def other_block_started(self) -> None:
        """Any new block (text included) settles the pending one: the limit did not cut it."""
        ends: list[End] = []
        with self.lock:
            self.take_pending(ends)
        self.end_calls(ends)

    def disown_calls(self) -> None:
        """Forgets every call unended (another process's, or another test's) and the lock."""
        # A new lock: a thread of the parent may have held this one at the fork, and that thread
        # does not exist here to release it.
        self.lock = threading.RLock()
        self.open = {}
        self._pending = None

    # -- decide under the lock, end after it ------------------------------------------------------

    def take_choice(
        self,
        ends: list[End],
        abort: str | None,
        choice: int | None,
        completes_open: bool,
        error_type: str | None,
    ) -> None:
        """Under the lock: a stop reason of ``choice`` (all when None) settles its pending call
        with ``abort``, and ends its open calls when it aborts them or is their completion."""
        if self._pending is not None and (choice is None or self._pending.choice == choice):
            self.take_pending(ends, abort)
        if abort is not None or completes_open:
            for key, call in list(self.open.items()):
                if choice is None or call.choice == choice:
                    del self.open[key]
                    ends.append((call, abort, error_type, None))

    def take_pending(self, ends: list[End], reason: str | None = None) -> None:
        """Under the lock: the pending call, settled with ``reason`` (or its default), to be ended."""
        call, self._pending = self._pending, None
        default, self._pending_default = self._pending_default, None
        if call is not None:
            ends.append((call, reason or default, None, call.stop_ns))

    def take_open(self, ends: list[End], reason: str, error_type: str | None) -> None:
        """Under the lock: every open call, to be ended with ``reason``."""
        for call in self.open.values():
            ends.append((call, reason, error_type, None))
        self.open.clear()

    def end_calls(self, ends: list[End]) -> None:
        """Outside the lock: the calls the locked part took, ended by this thread and no other."""
        for call, reason, error_type, end_ns in ends:
            self.end_call(call, reason, error_type, end_ns)

    def end_call(
        self, call: Call, reason: str | None, error_type: str | None, end_ns: int | None = None
    ) -> None:
        revocation.end(
            self.telemetry, (self.provider, self.model), call, reason, error_type, end_ns or clock.time_ns()
        )
