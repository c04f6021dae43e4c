"""One streamed request, normalized stream events in, spans and metrics out: the composition of
its tool-call blocks (``blocks``), how it ended (``ending``) and its inference span (``inference``).

Translators turn their SDK's chunks into the calls of ``sink.Sink``, which ``StreamState``
implements; nothing here knows a provider. Per-chunk events are cheap; span and metric work waits
for a block's end or the stream's end.
"""

from __future__ import annotations

import contextvars
import weakref
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

from . import clock, process
from . import names as n
from .blocks import Blocks
from .calls import End, error_type_of
from .ending import EndRecord
from .errors import report
from .inference import Inference, RequestInfo
from .telemetry import Telemetry
from .usage import Usage

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


class StreamState(Blocks):
    """One streamed request: its tool-call blocks (the ``Blocks`` it is: the per-chunk calls cost
    no hop), how it ends (``ending``) and its inference span (``inference``).

    A stream can end from any thread (``close()`` elsewhere, a collection, interpreter exit) while
    events still arrive: whatever ends it decides under the blocks' lock, once.
    """

    def __init__(self, telemetry: Telemetry, request: RequestInfo) -> None:
        super().__init__(telemetry, request.provider, request.model, EndRecord())
        self.request = request
        self.inference = Inference(telemetry, request)
        self.start_ns = self.inference.start_ns
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
        LIVE[id(self)] = self
        born = _BORN.get()
        if born is not None:
            born.append(weakref.ref(self))

    @property
    def span(self) -> Span:
        span = self.inference.span
        if span is None:
            with self.lock:
                span = self.inference.made()
        return span

    def call_context(self) -> otel_context.Context:
        return trace.set_span_in_context(self.span, self.inference.parent)

    def disown(self) -> None:
        """Done without ending anything: the stream is another process's (the fork hook, in
        process) or another test's (its reset)."""
        self.disown_calls()
        if self.ending.closing is None:
            self.ending.closing = (n.INCOMPLETE, None)

    def set_provider(self, provider: str) -> None:
        """A routing layer above the SDK (LiteLLM) names the provider better than the SDK's client;
        called before the first chunk."""
        self.provider = provider
        self.inference.renamed(provider)

    # -- per-chunk bookkeeping -------------------------------------------------------------------

    def first_chunk(self) -> None:
        # The span attribute and the metric are written at the end (inference.end), the metric
        # with the response model. No lock: a stream ended from another thread meanwhile has read
        # it already or reads it after; either way the chunk did arrive before the stream's end.
        self.first_chunk_ns = clock.time_ns()

    def nth_chunk(self) -> None:
        """Called once, at chunk number ``buffered_min_chunks``: the second and last clock read."""
        first = self.first_chunk_ns
        settings = self.telemetry.settings
        if first is None or (first - self.start_ns) < settings.buffered_min_ttfc_ms * 1e6:
            return
        if (clock.time_ns() - first) <= settings.buffered_window_ms * 1e6:
            with self.lock:
                self.buffered = self.buffered or self.ending.closing is None

    # -- stream-level events ---------------------------------------------------------------------

    def settle(self, reason: str | None, *, choice: int | None = None, completes_open: bool = False) -> None:
        """A finish/stop reason arrived; it settles the calls of ``choice`` (all when None).

        ``completes_open``: the reason is itself the calls' completion event (OpenAI chat).
        """
        ends: list[End] = []
        with self.lock:
            if self.ending.closing is not None:
                return
            abort = self.ending.stopped(reason, choice)
            error_type = reason if abort == n.STREAM_ERROR else None
            self.take_choice(ends, abort, choice, completes_open, error_type)
        self.end_calls(ends)

    def final_event(self) -> None:
        """The provider's last event for the response arrived (message_stop, response.completed...)."""
        with self.lock:
            ending = self.ending
            if ending.closing is not None:
                return
            ending.final = True
            # Made now if not yet: a peer's span started beside the request is adopted by then.
            span = self.span
            if self.inference.adopted(span) and span.is_recording():
                # The adopted span (an SDK span, say) may end with the body, before this
                # stream is finalized: its toolcall.* attributes are written now, while it is open.
                reason = ending.outcome(n.INCOMPLETE, None)[0]
                span.set_attributes(self.inference.outcome_attributes(self, reason))

    def error_event(self, error_type: str | None) -> None:
        """An in-stream error event that raised nothing: open calls end as stream errors now."""
        ends: list[End] = []
        with self.lock:
            if self.ending.closing is not None:
                return
            error_type = self.ending.errored(error_type)
            self.take_pending(ends)
            self.take_open(ends, n.STREAM_ERROR, error_type)
        self.end_calls(ends)

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
        with self.lock:
            closing = self.ending.end(reason, error_type)
            if closing is None:
                return
            self.take_pending(ends)
            self.take_open(ends, *closing)
        LIVE.pop(id(self), None)
        self.end_calls(ends)
        try:
            end_ns = clock.time_ns()
            finish_reasons = self.ending.finish_reasons_of(self.choices_with_calls)
            outcome = self.ending.outcome(reason, error_type)
            self.inference.end(self.span, self, outcome, finish_reasons, end_ns)
        except Exception as exc:
            report("end_inference", exc)
