"""The provider-neutral state machine: normalized stream events in, spans and metrics out.

Adapters translate their SDK's chunks into the calls below; nothing here knows a provider. One
``StreamState`` lives per streamed request. Its event methods are cheap (the per-fragment one is
two additions); all span and metric work is deferred to a block's end or the stream's end.

Threads: a stream can end from any thread (``close()`` while another thread iterates, a garbage
collection, interpreter exit) while events still arrive. Every method that opens, settles or ends
a call decides under the state's lock, so a call is ended by exactly one of them and none is
opened once the stream is done; the spans are ended after the lock is released, so an exporter
never runs under it. Fragments take no lock: they only count into a call that is open or was
just ended (a fragment that loses that race arrived after the end, and is not counted).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from . import inference_end as inference
from . import names as n
from . import process
from .blocks import BlockEvents
from .calls import Call, End, classify, end_call, error_type_of, start_span, utf8_len
from .errors import report
from .telemetry import Telemetry
from .usage import Usage

# Re-exported: the core's vocabulary, for the adapters and tests that name it from here.
__all__ = ["LIVE", "RequestInfo", "StreamState", "classify", "error_type_of", "utf8_len"]

_log = logging.getLogger(__name__)
_time_ns = time.time_ns


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
    # Someone else's inference span for this request (an SDK that traces itself, another
    # instrumentation): tool-call spans become its children and the package makes none.
    adopted_span: Span | None = None


# Streams still open (process.LIVE: ended at exit by _stream's hook, disowned in a forked child).
LIVE: dict[int, StreamState] = process.LIVE


class StreamState(BlockEvents):
    """One streamed request: its inference span and its tool-call blocks."""

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
        # Token usage, set by the translator from the event carrying the final count (_usage).
        self.usage: Usage | None = None
        self.pending_usage: Any = None  # Anthropic's message_start usage until message_delta
        self.first_chunk_ns: int | None = None
        self.buffered = False
        # The weak reference that abandons the stream when the user's object is collected
        # (_request.watch); held here so that it lives exactly as long as the state.
        self.watcher: Any = None
        self.buffered_probe = max(1, telemetry.settings.buffered_min_chunks)

        self._owns_span = False
        parent = request.parent if request.parent is not None else otel_context.get_current()
        if request.adopted_span is not None:
            self.span: Span = request.adopted_span
        elif telemetry.settings.inference_spans:
            self.span = start_span(
                telemetry.tracer,
                f"{request.operation} {request.model}" if request.model else request.operation,
                context=parent,
                kind=SpanKind.CLIENT,
                attributes=inference.inference_attributes(self),
                start_time=self.start_ns,
            )
            self._owns_span = True
        else:
            self.span = trace.get_current_span(parent)
        self._child_context = trace.set_span_in_context(self.span, parent)
        LIVE[id(self)] = self

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
        # The span attribute and the metric are written at the end (_inference_end), the metric
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
            span = self.request.adopted_span
            if span is not None and span.is_recording():
                # Someone else's span (an SDK that traces itself) may end with the body, before this
                # stream is finalized: its toolcall.* attributes are written now, while it is open.
                inference.annotate(self, span, inference.stream_outcome(self, n.INCOMPLETE, None)[0])

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
            inference.end_inference(self, reason, error_type, _time_ns())
        except Exception as exc:
            report("end_inference", exc)

    def _now(self) -> int:
        return _time_ns()

    def _end_call(
        self, call: Call, reason: str | None, error_type: str | None, end_ns: int | None = None
    ) -> None:
        end_call(self._t, (self.provider, self.model), call, reason, error_type, end_ns or _time_ns())
