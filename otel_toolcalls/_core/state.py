"""The provider-neutral state machine: normalized stream events in, spans and metrics out.

Translators turn their SDK's chunks into the calls of ``sink.Sink``, which ``StreamState``
implements; nothing here knows a provider. Per-chunk events are cheap; span and metric work waits
for a block's end or the stream's end.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from . import document, process, revocation
from . import names as n
from .calls import Call, End, Opening, classify, error_type_of, start_span, utf8_len
from .document import BLANKS as _BLANKS
from .errors import guarded, report
from .metrics import StreamEnd, reports_usage
from .peers import peer_mark, peer_span_claimed, peer_span_started, recorded_elsewhere
from .registry import call_key
from .telemetry import Telemetry
from .usage import Usage, span_attributes

_log = logging.getLogger(__name__)
# The core's one clock, read through this module attribute at each use: a test replaces it to
# simulate when chunks arrive.
_time_ns = time.time_ns


def now_ns() -> int:
    """The core's clock, for a request's start (read where the request is made)."""
    return _time_ns()


@dataclass
class RequestInfo:
    """What the adapter knows of the request when the stream is built."""

    provider: str
    model: str | None
    operation: str = "chat"
    server_address: str | None = None
    server_port: int | None = None
    start_ns: int | None = None
    parent: otel_context.Context | None = None
    # The adopted span: the SDK's own inference span for this request or a peer's (another
    # instrumentation's): tool-call spans become its children and the package makes none.
    adopted_span: Span | None = None

    def attributes(self) -> dict[str, Any]:
        """What every inference signal (span and metrics) carries of the request itself; the port
        only with the address (the conventions: ``server.port`` is required if ``server.address`` is set)."""
        attributes: dict[str, Any] = {
            n.GEN_AI_OPERATION_NAME: self.operation,
            n.GEN_AI_PROVIDER_NAME: self.provider,
        }
        if self.model:
            attributes[n.GEN_AI_REQUEST_MODEL] = self.model
        if self.server_address:
            attributes[n.SERVER_ADDRESS] = self.server_address
            if self.server_port:
                attributes[n.SERVER_PORT] = self.server_port
        return attributes


# The first part of the key a superseded call stays open under (with its id: one key per call).
_SUPERSEDED = object()

# Streams still open (process.LIVE: ended at exit by stream's exit hook, disowned in a forked child).
LIVE: dict[int, StreamState] = process.LIVE

# The streams started inside a framework's step (``Births``), for a framework that ends them on a
# signal of its own (agno's run cancellation).
_BORN: contextvars.ContextVar[list[weakref.ref[StreamState]] | None] = contextvars.ContextVar(
    "otel_toolcalls_born", default=None
)


class Births:
    """Streams started in this block (this thread or task) are added to ``into``, weakly."""

    __slots__ = ("_into", "_token")

    def __init__(self, into: list[weakref.ref[StreamState]]) -> None:
        self._into = into

    def __enter__(self) -> None:
        self._token = _BORN.set(self._into)

    def __exit__(self, *exc_info: object) -> None:
        _BORN.reset(self._token)


class StreamState:
    """One streamed request: its inference span and its tool-call blocks (a ``sink.Sink``).

    A stream can end from any thread (``close()`` elsewhere, a collection, interpreter exit) while
    events still arrive. Whatever opens, settles or ends a call decides under ``_lock``, so a call
    is ended exactly once and none is opened once the stream is done; spans are ended after the
    lock is released, so an exporter never runs under it. Fragments take no lock: they only count
    into a call open or just ended (one that loses that race arrived after the end: not counted).
    """

    def __init__(self, telemetry: Telemetry, request: RequestInfo) -> None:
        self._t = self.telemetry = telemetry
        self.request = request
        self.provider = request.provider
        self.model = request.model
        self.start_ns = request.start_ns or _time_ns()
        self.open: dict[Hashable, Call] = {}
        # The last block whose own completion event arrived but whose outcome a later stop reason
        # may still change (Anthropic/Bedrock/Cohere block-stop before the message-level stop).
        self._pending: Call | None = None
        # The abort reason the pending block takes when no stop reason settles it (None: completed).
        self._pending_default: str | None = None
        self._finish_reasons: dict[int, str] = {}
        self._choices_with_calls: set[int] = set()
        self._final = False
        self._stop_abort: str | None = None
        self._error_type: str | None = None
        self._done = False
        # What finalize() ended the stream with: the reason a call that was being opened meanwhile takes.
        self._closing: tuple[str, str | None] = (n.INCOMPLETE, None)
        # Reentrant: a collection in the thread that holds it can abandon this very stream.
        self._lock = threading.RLock()
        self.tool_calls = 0
        self.response_id: str | None = None
        self.response_model: str | None = None
        # Token usage, set by the translator from the event carrying the final count (usage).
        self.usage: Usage | None = None
        self.pending_usage: Any = None  # Anthropic's message_start usage until message_delta
        self.first_chunk_ns: int | None = None
        self.buffered = False
        # The weak reference that abandons the stream when the user's object is collected
        # (owners.watch); held here so that it lives exactly as long as the state.
        self.watcher: Any = None
        self.buffered_probe = max(1, telemetry.settings.buffered_min_chunks)

        self._owns_span = False
        self._parent = parent = request.parent if request.parent is not None else otel_context.get_current()
        # The inference span: adopted, or made at its first need (a peer may start its own for this
        # request only after the SDK returned the stream: peers.peer_span_started).
        self._span: Span | None = request.adopted_span
        self._peer_mark = peer_mark()
        if self._span is not None:
            peer_span_claimed(self._span)
        elif not telemetry.settings.inference_spans:
            self._span = trace.get_current_span(parent)
        LIVE[id(self)] = self
        born = _BORN.get()
        if born is not None:
            born.append(weakref.ref(self))

    @property
    def span(self) -> Span:
        span = self._span
        if span is None:
            with self._lock:
                span = self._span = self._span or self._new_span()
        return span

    def _new_span(self) -> Span:
        """A peer's span started beside this request, adopted; else the package's own, from the
        request's start."""
        request = self.request
        peer = peer_span_started(self._parent, self.provider, self._peer_mark)
        if peer is not None:
            request.adopted_span = peer
            return peer  # type: ignore[no-any-return]
        self._owns_span = True
        return start_span(
            self._t.tracer,
            f"{request.operation} {request.model}" if request.model else request.operation,
            context=self._parent,
            kind=SpanKind.CLIENT,
            attributes={**request.attributes(), n.GEN_AI_REQUEST_STREAM: True},
            start_time=self.start_ns,
        )

    @property
    def _child_context(self) -> otel_context.Context:
        return trace.set_span_in_context(self.span, self._parent)

    def disown(self) -> None:
        """Done without ending anything: the stream is another process's (the fork hook, in
        process) or another test's (its reset)."""
        # A new lock: a thread of the parent may have held this one at the fork, and that thread
        # does not exist here to release it.
        self._lock = threading.RLock()
        self._done = True
        self.open = {}
        self._pending = None

    def set_provider(self, provider: str) -> None:
        """A routing layer above the SDK (LiteLLM) names the provider better than the SDK's client;
        called before the first chunk."""
        self.provider = self.request.provider = provider
        if self._owns_span:
            self.span.set_attribute(n.GEN_AI_PROVIDER_NAME, provider)

    # -- per-chunk bookkeeping -------------------------------------------------------------------

    def first_chunk(self) -> None:
        # The span attribute and the metric are written at the end (_end_inference), the metric
        # with the response model. No lock: a stream ended from another thread meanwhile has read
        # it already or reads it after; either way the chunk did arrive before the stream's end.
        self.first_chunk_ns = _time_ns()

    def nth_chunk(self) -> None:
        """Called once, at chunk number ``buffered_min_chunks``: the second and last clock read."""
        first = self.first_chunk_ns
        settings = self._t.settings
        if first is None or (first - self.start_ns) < settings.buffered_min_ttfc_ms * 1e6:
            return
        if (_time_ns() - first) <= settings.buffered_window_ms * 1e6:
            with self._lock:
                self.buffered = self.buffered or not self._done

    # -- block events ----------------------------------------------------------------------------

    def block_started(
        self,
        key: Hashable,
        *,
        name: str,
        call_id: str | None = None,
        index: int | None = None,
        tool_type: str = n.TOOL_TYPE_FUNCTION,
        choice: int = 0,
        whole: bool = False,
        free_form: bool = False,
        revocable: bool = False,
    ) -> None:
        """A tool-call block starts; ``whole``: it arrived whole, arguments parsed (Gemini parts);
        ``free_form``: its arguments are not a JSON object's text (OpenAI custom tool input);
        ``revocable``: its server may take it back after its block ended (``revocation``)."""
        opening = Opening(
            key, name[: n.MAX_NAME_LENGTH], call_id or None, index, tool_type, choice, whole, free_form,
            revocable,
        )  # fmt: skip
        ends: list[End] = []
        with self._lock:
            if self._done:
                return
            previous = self.open.pop(key, None)
            if previous is not None:
                self._supersede(previous, ends)
            self._take_pending(ends)
            call = self._start_call(opening)
            if self._done:
                # Finalized while the span was being started (a span processor, or a collection in
                # this thread, ended the stream): the call ends as the stream did, not left open.
                reason, error_type = self._closing
                ends.append((call, reason, error_type, None))
            else:
                self.open[key] = call
            self._choices_with_calls.add(choice)
            self.tool_calls += 1
        self._end_calls(ends)

    def _supersede(self, call: Call, ends: list[End]) -> None:
        """Under the lock: a new block on the key of an open one (SGLang sends two calls on index
        0). The earlier call's own arguments decide: cut, it ends now; else it stays open under a key
        of its own and ends as the rest of its choice does."""
        if call.cut():
            # Ended now, before the new block's span starts, though the span work comes later.
            ends.append((call, n.UNTERMINATED, None, _time_ns()))
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
        start_ns = _time_ns()
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
        tail = text.rstrip(_BLANKS)
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
        with self._lock:
            call = self.open.pop(key, None)
            if call is None:
                return
            self._take_pending(ends)
            call.stop_ns = _time_ns()
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

    # -- stream-level events ---------------------------------------------------------------------

    def settle(self, reason: str | None, *, choice: int | None = None, completes_open: bool = False) -> None:
        """A finish/stop reason arrived; it settles the calls of ``choice`` (all when None).

        ``completes_open``: the reason is itself the calls' completion event (OpenAI chat).
        """
        abort = classify(reason)
        ends: list[End] = []
        with self._lock:
            if self._done:
                return
            if reason is not None:
                self._finish_reasons[0 if choice is None else choice] = reason
            if abort is not None:
                self._stop_abort = abort
                if abort == n.STREAM_ERROR:
                    self._error_type = reason
            if self._pending is not None and (choice is None or self._pending.choice == choice):
                self._take_pending(ends, abort)
            if abort is not None or completes_open:
                error_type = reason if abort == n.STREAM_ERROR else None
                for key, call in list(self.open.items()):
                    if choice is None or call.choice == choice:
                        del self.open[key]
                        ends.append((call, abort, error_type, None))
        self._end_calls(ends)

    def final_event(self) -> None:
        """The provider's last event for the response arrived (message_stop, response.completed...)."""
        with self._lock:
            if self._done:
                return
            self._final = True
            # Made now if not yet: a peer's span started beside the request is adopted by then.
            span = self.span
            if span is self.request.adopted_span and span.is_recording():
                # The adopted span (an SDK span, say) may end with the body, before this
                # stream is finalized: its toolcall.* attributes are written now, while it is open.
                span.set_attributes(self._outcome_attributes(self._outcome(n.INCOMPLETE, None)[0]))

    def error_event(self, error_type: str | None) -> None:
        """An in-stream error event that raised nothing: open calls end as stream errors now."""
        ends: list[End] = []
        with self._lock:
            if self._done:
                return
            self._error_type = error_type or n.OTHER
            self._stop_abort = n.STREAM_ERROR
            self._take_pending(ends)
            self._take_open(ends, n.STREAM_ERROR, self._error_type)
        self._end_calls(ends)

    # -- terminal events: each reaches finalize() once ---------------------------------------------

    def ended(self) -> None:
        """The SDK's iterator is exhausted without raising."""
        self.finalize(n.INCOMPLETE)

    def failed(self, exc: BaseException) -> None:
        self.finalize(n.STREAM_ERROR, error_type_of(exc))

    def closed(self) -> None:
        self.finalize(n.CLOSED)

    def cancelled(self) -> None:
        self.finalize(n.CANCELLED)

    def abandoned(self) -> None:
        self.finalize(n.ABANDONED)

    def finalize(self, reason: str, error_type: str | None = None) -> None:
        ends: list[End] = []
        with self._lock:
            if self._done:
                return
            self._done = True
            self._closing = (reason, error_type if reason == n.STREAM_ERROR else None)
            self._take_pending(ends)
            self._take_open(ends, *self._closing)
        LIVE.pop(id(self), None)
        self._end_calls(ends)
        try:
            self._end_inference(reason, error_type, _time_ns())
        except Exception as exc:
            report("end_inference", exc)

    # -- the end of the request as a whole: once, from finalize() ---------------------------------

    def _outcome(self, reason: str, error_type: str | None) -> tuple[str | None, str | None]:
        """(abort reason or None for completed, error type) of the stream as a whole."""
        if self._error_type is not None or reason == n.STREAM_ERROR:
            return n.STREAM_ERROR, error_type or self._error_type
        if self._stop_abort is not None:
            return self._stop_abort, None
        if self._final:
            return None, None
        return reason, None

    def _end_inference(self, reason: str, error_type: str | None, end_ns: int) -> None:
        span = self.span
        outcome_reason, error_type = self._outcome(reason, error_type)
        # Guarded alone: a failing meter must not leave the inference span unended.
        guarded(self._record_inference, error_type, end_ns)
        if not span.is_recording():
            return
        if not self._owns_span and self.request.adopted_span is None:
            # Inference spans off: the current span is the caller's (an agent turn), not this request's.
            return
        if not self._owns_span:
            span.set_attributes(self._outcome_attributes(outcome_reason))
            return
        # The span's own: every end attribute in one set_attributes (one lock, one check in the SDK).
        attributes = self._outcome_attributes(outcome_reason)
        if self.response_id:
            attributes[n.GEN_AI_RESPONSE_ID] = self.response_id
        if self.response_model:
            attributes[n.GEN_AI_RESPONSE_MODEL] = self.response_model
        if self.usage is not None and reports_usage(self.request.operation):
            attributes.update(span_attributes(self.usage))
        choices = sorted(set(self._finish_reasons) | self._choices_with_calls) or [0]
        attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] = [self._finish_reasons.get(c, "error") for c in choices]
        if error_type is not None:
            attributes[n.ERROR_TYPE] = error_type
        span.set_attributes(attributes)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR, f"stream failed: {error_type}"))
        span.end(end_time=end_ns)

    def _record_inference(self, error_type: str | None, end_ns: int) -> None:
        request = self.request
        attributes = request.attributes()
        if self.response_model:
            attributes[n.GEN_AI_RESPONSE_MODEL] = self.response_model
        self._t.metrics.stream_ended(
            StreamEnd(
                attributes=attributes,
                operation=request.operation,
                recorded_elsewhere=recorded_elsewhere(request.adopted_span),
                start_ns=self.start_ns,
                first_chunk_ns=self.first_chunk_ns,
                usage=self.usage,
                error_type=error_type,
                end_ns=end_ns,
            )
        )
        if self.buffered:
            self._t.metrics.stream_was_buffered(self.provider, self.model)

    def _outcome_attributes(self, outcome_reason: str | None) -> dict[str, Any]:
        """The stream's toolcall.* attributes: count, outcome, abort reason, buffered."""
        attributes: dict[str, Any] = {n.TOOLCALL_COUNT: self.tool_calls}
        if outcome_reason is None:
            attributes[n.TOOLCALL_OUTCOME] = n.COMPLETED
        else:
            attributes[n.TOOLCALL_OUTCOME] = n.ABORTED
            attributes[n.TOOLCALL_ABORT_REASON] = outcome_reason
        if self.buffered:
            attributes[n.TOOLCALL_STREAM_BUFFERED] = True
        if self._owns_span and self.first_chunk_ns is not None:
            # Written at the end, with the rest, rather than by the first chunk.
            attributes[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = (self.first_chunk_ns - self.start_ns) / 1e9
        return attributes

    # -- decide under the lock, end after it ------------------------------------------------------

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

    def _end_call(
        self, call: Call, reason: str | None, error_type: str | None, end_ns: int | None = None
    ) -> None:
        revocation.end(self._t, (self.provider, self.model), call, reason, error_type, end_ns or _time_ns())
