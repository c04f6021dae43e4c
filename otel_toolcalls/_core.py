"""The provider-neutral state machine: normalized stream events in, spans and metrics out.

Adapters translate their SDK's chunks into the calls below; nothing here knows a provider. One
``StreamState`` lives per streamed request. Its event methods are cheap (the per-fragment one is
two additions); all span and metric work is deferred to a block's end or the stream's end.
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
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from . import _names as n
from ._inference_metrics import reports_usage
from ._registry import CallRecord
from ._telemetry import Telemetry
from ._usage import Usage, span_attributes

_log = logging.getLogger(__name__)
_time_ns = time.time_ns

# Finish/stop reasons, matched on lower-cased text, so a name the table does not list still lands in
# the right class (TELEMETRY.md section 6: "token limits of any name", "refusal of any name").
_TRUNCATING = ("length", "max_tokens", "max_output_tokens", "context_window", "token_limit")
_FILTERING = (
    "filter",
    "safety",
    "recitation",
    "blocklist",
    "prohibited",
    "guardrail",
    "refusal",
    "spii",
    "armor",
)
_ERRORING = frozenset({"error", "timeout", "failed"})


def classify(reason: str | None) -> str | None:
    """The abort reason a finish/stop reason means, or None when it completes what it settles."""
    if not reason:
        return None
    low = reason.lower()
    if "malformed" in low:
        return n.MALFORMED
    if low in _ERRORING:
        return n.STREAM_ERROR
    if any(word in low for word in _TRUNCATING):
        return n.TRUNCATED
    if any(word in low for word in _FILTERING):
        return n.FILTERED
    return None


def error_type_of(exc: BaseException) -> str:
    """``openai.APIConnectionError`` rather than ``openai._exceptions.APIConnectionError``."""
    cls = type(exc)
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    public = []
    for part in module.split("."):
        if part.startswith("_"):
            break
        public.append(part)
    return ".".join([*public, cls.__qualname__]) if public else cls.__qualname__


def utf8_len(text: str) -> int:
    # str.isascii() is O(1) in CPython; only non-ASCII fragments pay for an encode.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


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


class _Call:
    __slots__ = (
        "call_id",
        "choice",
        "content",
        "deltas",
        "has_size",
        "index",
        "key",
        "name",
        "size",
        "span",
        "start_ns",
        "stop_ns",
        "tool_type",
    )

    def __init__(
        self,
        key: Hashable,
        choice: int,
        index: int | None,
        call_id: str | None,
        name: str,
        tool_type: str,
        span: Span,
        start_ns: int,
        capture: bool,
    ) -> None:
        self.key = key
        self.choice = choice
        self.index = index
        self.call_id = call_id
        self.name = name
        self.tool_type = tool_type
        self.span = span
        self.start_ns = start_ns
        self.stop_ns: int | None = None
        self.deltas = 0
        self.size = 0
        self.has_size = False
        self.content: list[str] | None = [] if capture else None


# Streams still open, so that interpreter exit can end their calls as abandoned before the
# tracer provider's own atexit shutdown runs (see _stream.install_exit_hook).
LIVE: dict[int, StreamState] = {}


class StreamState:
    """One streamed request: its inference span and its tool-call blocks."""

    def __init__(self, telemetry: Telemetry, request: RequestInfo) -> None:
        self._t = telemetry
        self.request = request
        self.provider = request.provider
        self.model = request.model
        self.start_ns = request.start_ns or _time_ns()
        self.open: dict[Hashable, _Call] = {}
        # The last block whose own completion event arrived but whose outcome a later stop reason
        # may still change (Anthropic/Bedrock/Cohere block-stop before the message-level stop).
        self._pending: _Call | None = None
        # The abort reason the pending block takes when no stop reason settles it (None: completed).
        self._pending_default: str | None = None
        self._finish_reasons: dict[int, str] = {}
        self._choices_with_calls: set[int] = set()
        self._final = False
        self._stop_abort: str | None = None
        self._error_type: str | None = None
        self._done = False
        self._lock = threading.Lock()
        self.tool_calls = 0
        self.response_id: str | None = None
        self.response_model: str | None = None
        # Token usage, set by the translator from the event carrying the final count (_usage).
        self.usage: Usage | None = None
        self.pending_usage: Any = None  # Anthropic's message_start usage until message_delta
        self.first_chunk_ns: int | None = None
        self.buffered = False
        self.watcher: Any = None  # the weakref.finalize that abandons the stream on collection
        self.buffered_probe = max(1, telemetry.settings.buffered_min_chunks)

        self._owns_span = False
        parent = request.parent if request.parent is not None else otel_context.get_current()
        if request.adopted_span is not None:
            self.span: Span = request.adopted_span
        elif telemetry.settings.inference_spans:
            self.span = telemetry.tracer.start_span(
                f"{request.operation} {request.model}" if request.model else request.operation,
                context=parent,
                kind=SpanKind.CLIENT,
                attributes=self._inference_attributes(),
                start_time=self.start_ns,
            )
            self._owns_span = True
        else:
            self.span = trace.get_current_span(parent)
        self._child_context = trace.set_span_in_context(self.span, parent)
        LIVE[id(self)] = self

    def _inference_attributes(self) -> dict[str, Any]:
        r = self.request
        attributes: dict[str, Any] = {
            n.GEN_AI_OPERATION_NAME: r.operation,
            n.GEN_AI_PROVIDER_NAME: r.provider,
            n.GEN_AI_REQUEST_STREAM: True,
        }
        if r.model:
            attributes[n.GEN_AI_REQUEST_MODEL] = r.model
        if r.server_address:
            attributes[n.SERVER_ADDRESS] = r.server_address
        if r.server_port:
            attributes[n.SERVER_PORT] = r.server_port
        return attributes

    def set_provider(self, provider: str) -> None:
        """A routing layer above the SDK (LiteLLM) names the provider better than the SDK's client;
        called before the first chunk."""
        self.provider = self.request.provider = provider
        if self._owns_span:
            self.span.set_attribute(n.GEN_AI_PROVIDER_NAME, provider)

    # -- per-chunk bookkeeping -------------------------------------------------------------------

    def first_chunk(self) -> None:
        now = self.first_chunk_ns = _time_ns()
        ttfc = (now - self.start_ns) / 1e9
        if self._owns_span:
            self.span.set_attribute(n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, ttfc)
        # The time-to-first-chunk metric is recorded at the end, with the response model.

    def nth_chunk(self) -> None:
        """Called once, at chunk number ``buffered_min_chunks``: the second and last clock read."""
        first = self.first_chunk_ns
        settings = self._t.settings
        if first is None or (first - self.start_ns) < settings.buffered_min_ttfc_ms * 1e6:
            return
        if (_time_ns() - first) <= settings.buffered_window_ms * 1e6:
            self.buffered = True

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
    ) -> None:
        if self._done:
            return
        previous = self.open.pop(key, None)
        if previous is not None:
            self._end_call(previous, n.INCOMPLETE, None)
        self.other_block_started()
        name = name[: n.MAX_NAME_LENGTH]
        if call_id is not None:
            call_id = call_id[: n.MAX_NAME_LENGTH]
        attributes: dict[str, Any] = {
            n.GEN_AI_PROVIDER_NAME: self.provider,
            n.GEN_AI_TOOL_NAME: name,
            n.GEN_AI_TOOL_TYPE: tool_type,
        }
        if self.model:
            attributes[n.GEN_AI_REQUEST_MODEL] = self.model
        if call_id:
            attributes[n.GEN_AI_TOOL_CALL_ID] = call_id
        if index is not None:
            attributes[n.TOOLCALL_INDEX] = index
        start_ns = _time_ns()
        span = self._t.tracer.start_span(
            n.TOOL_CALL_SPAN_PREFIX + name,
            context=self._child_context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_ns,
        )
        self.open[key] = _Call(
            key,
            choice,
            index,
            call_id or None,
            name,
            tool_type,
            span,
            start_ns,
            self._t.settings.capture_content,
        )
        self._choices_with_calls.add(choice)
        self.tool_calls += 1

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
        call.has_size = True
        if call.content is not None:
            call.content.append(text)

    def fragment_size(self, key: Hashable, nbytes: int, text: str | None = None) -> None:
        """A fragment whose size the adapter measured (arguments that arrive as values, not text)."""
        call = self.open.get(key)
        if call is None:
            _log.debug("argument fragment for a block that never started: %r", key)
            return
        call.deltas += 1
        call.size += nbytes
        call.has_size = True
        if call.content is not None and text is not None:
            call.content.append(text)

    def block_stopped(self, key: Hashable, *, unsettled: str | None = None) -> None:
        """The block's own completion event; a later stop reason may still truncate it.

        ``unsettled``: the abort reason it takes if nothing settles it (an OpenAI Responses item
        done with status ``incomplete`` is ``truncated`` unless a ``response.incomplete`` says why).
        """
        call = self.open.pop(key, None)
        if call is None:
            return
        self._settle_pending()
        call.stop_ns = _time_ns()
        self._pending = call
        self._pending_default = unsettled

    def block_completed(self, key: Hashable) -> None:
        """A completion event nothing later can overturn (OpenAI Responses item done, Gemini part)."""
        call = self.open.pop(key, None)
        if call is not None:
            self._end_call(call, None, None)

    def block_aborted(self, key: Hashable, reason: str, error_type: str | None = None) -> None:
        call = self.open.pop(key, None)
        if call is not None:
            self._end_call(call, reason, error_type)

    def other_block_started(self) -> None:
        """Any new block (text included) settles the pending one: the limit did not cut it."""
        if self._pending is not None:
            self._settle_pending()

    def _settle_pending(self, reason: str | None = None) -> None:
        call, self._pending = self._pending, None
        default, self._pending_default = self._pending_default, None
        if call is not None:
            self._end_call(call, reason or default, None, call.stop_ns)

    # -- stream-level events ---------------------------------------------------------------------

    def settle(self, reason: str | None, *, choice: int | None = None, completes_open: bool = False) -> None:
        """A finish/stop reason arrived; it settles the calls of ``choice`` (all when None).

        ``completes_open``: the reason is itself the calls' completion event (OpenAI chat).
        """
        if reason is not None:
            self._finish_reasons[0 if choice is None else choice] = reason
        abort = classify(reason)
        if abort is not None:
            self._stop_abort = abort
            if abort == n.STREAM_ERROR:
                self._error_type = reason
        if self._pending is not None and (choice is None or self._pending.choice == choice):
            self._settle_pending(abort)
        if abort is None and not completes_open:
            return
        for key, call in list(self.open.items()):
            if choice is None or call.choice == choice:
                del self.open[key]
                self._end_call(call, abort, reason if abort == n.STREAM_ERROR else None)

    def final_event(self) -> None:
        """The provider's last event for the response arrived (message_stop, response.completed...)."""
        self._final = True
        span = self.request.adopted_span
        if span is not None and span.is_recording():
            # Someone else's span (an SDK that traces itself) may end with the body, before this
            # stream is finalized: its toolcall.* attributes are written now, while it is open.
            self._annotate(span, self._stream_outcome(n.INCOMPLETE, None)[0])

    def error_event(self, error_type: str | None) -> None:
        """An in-stream error event that raised nothing: open calls end as stream errors now."""
        self._error_type = error_type or n.OTHER
        self._stop_abort = n.STREAM_ERROR
        self._settle_pending()
        self._abort_open(n.STREAM_ERROR, self._error_type)

    def _abort_open(self, reason: str, error_type: str | None) -> None:
        calls = list(self.open.values())
        self.open.clear()
        for call in calls:
            self._end_call(call, reason, error_type)

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
        with self._lock:
            if self._done:
                return
            self._done = True
        LIVE.pop(id(self), None)
        if self.watcher is not None:
            self.watcher.detach()
            self.watcher = None
        try:
            self._settle_pending()
            self._abort_open(reason, error_type if reason == n.STREAM_ERROR else None)
            self._end_inference(reason, error_type)
        except Exception:
            _log.debug("otel_toolcalls: failed to finalize a stream", exc_info=True)

    def _stream_outcome(self, reason: str, error_type: str | None) -> tuple[str | None, str | None]:
        """(abort reason or None for completed, error type) of the stream as a whole."""
        if self._error_type is not None or reason == n.STREAM_ERROR:
            return n.STREAM_ERROR, error_type or self._error_type
        if self._stop_abort is not None:
            return self._stop_abort, None
        if self._final:
            return None, None
        return reason, None

    def _end_inference(self, reason: str, error_type: str | None) -> None:
        span = self.span
        outcome_reason, error_type = self._stream_outcome(reason, error_type)
        end_ns = _time_ns()
        self._t.inference.record(self, error_type=error_type, end_ns=end_ns)
        if self.buffered:
            attributes = {n.GEN_AI_PROVIDER_NAME: self.provider}
            if self.model:
                attributes[n.GEN_AI_REQUEST_MODEL] = self.model
            self._t.stream_buffered.add(1, attributes)
        if not span.is_recording():
            return
        if not self._owns_span and self.request.adopted_span is None:
            # Inference spans off: the current span is the caller's (an agent turn), not this request's.
            return
        self._annotate(span, outcome_reason)
        if not self._owns_span:
            return
        if self.response_id:
            span.set_attribute(n.GEN_AI_RESPONSE_ID, self.response_id)
        if self.response_model:
            span.set_attribute(n.GEN_AI_RESPONSE_MODEL, self.response_model)
        if self.usage is not None and reports_usage(self):
            span.set_attributes(span_attributes(self.usage))
        choices = sorted(set(self._finish_reasons) | self._choices_with_calls) or [0]
        span.set_attribute(
            n.GEN_AI_RESPONSE_FINISH_REASONS, [self._finish_reasons.get(c, "error") for c in choices]
        )
        if error_type is not None:
            span.set_attribute(n.ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR, f"stream failed: {error_type}"))
        span.end(end_time=end_ns)

    def _annotate(self, span: Span, outcome_reason: str | None) -> None:
        span.set_attribute(n.TOOLCALL_COUNT, self.tool_calls)
        if outcome_reason is None:
            span.set_attribute(n.TOOLCALL_OUTCOME, n.COMPLETED)
        else:
            span.set_attribute(n.TOOLCALL_OUTCOME, n.ABORTED)
            span.set_attribute(n.TOOLCALL_ABORT_REASON, outcome_reason)
        if self.buffered:
            span.set_attribute(n.TOOLCALL_STREAM_BUFFERED, True)

    # -- one call's end ----------------------------------------------------------------------------

    def _end_call(
        self, call: _Call, reason: str | None, error_type: str | None, end_ns: int | None = None
    ) -> None:
        """Ends a call's span, records its metrics and remembers it; ``reason`` None is completed."""
        try:
            end_ns = end_ns or _time_ns()
            span = call.span
            outcome = n.COMPLETED if reason is None else n.ABORTED
            if reason == n.STREAM_ERROR:
                error_type = error_type or n.OTHER
            elif reason is not None:
                error_type = reason
            if span.is_recording():
                span.set_attribute(n.TOOLCALL_ARGUMENTS_DELTAS, call.deltas)
                if call.has_size:
                    span.set_attribute(n.TOOLCALL_ARGUMENTS_SIZE, call.size)
                span.set_attribute(n.TOOLCALL_OUTCOME, outcome)
                if reason is not None:
                    span.set_attribute(n.TOOLCALL_ABORT_REASON, reason)
                    span.set_attribute(n.ERROR_TYPE, error_type or reason)
                    span.set_status(Status(StatusCode.ERROR, n.ABORT_DESCRIPTIONS[reason]))
                if call.content is not None:
                    span.set_attribute(
                        n.GEN_AI_TOOL_CALL_ARGUMENTS, "".join(call.content)[: n.MAX_ARGUMENTS_LENGTH]
                    )
            span.end(end_time=end_ns)
            self._record_metrics(call, outcome, reason, error_type, end_ns)
            if call.call_id:
                self._t.registry.put(
                    call.call_id,
                    CallRecord(outcome, reason, call.name, call.tool_type, span.get_span_context()),
                )
        except Exception:
            _log.debug("otel_toolcalls: failed to end a tool-call span", exc_info=True)

    def _record_metrics(
        self, call: _Call, outcome: str, reason: str | None, error_type: str | None, end_ns: int
    ) -> None:
        t = self._t
        attributes: dict[str, Any] = {
            n.GEN_AI_PROVIDER_NAME: self.provider,
            n.GEN_AI_TOOL_NAME: t.tool_name_for_metrics(call.name),
            n.TOOLCALL_OUTCOME: outcome,
        }
        if self.model:
            attributes[n.GEN_AI_REQUEST_MODEL] = self.model
        if call.has_size:
            t.arguments_size.record(call.size, attributes)
        t.arguments_deltas.record(call.deltas, attributes)
        if reason is not None:
            attributes = {**attributes, n.TOOLCALL_ABORT_REASON: reason, n.ERROR_TYPE: error_type or reason}
        t.calls.add(1, attributes)
        t.duration.record(max(0, end_ns - call.start_ns) / 1e9, attributes)
