"""The inference span of one streamed request and its end: the span adopted (the SDK's own, or a
peer's), made at its first need, or none (inference spans off: the caller's current span); ended
once with the stream's outcome, usage and response attributes, and the request's metrics recorded.

What the response said of itself comes from the stream (``Said``); how the stream ended from its
``ending.EndRecord``. Nothing here locks: the stream makes the span under its own lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from . import clock
from . import names as n
from .calls import start_span
from .errors import guarded
from .metrics import StreamEnd, reports_usage
from .peers import peer_mark, peer_span_claimed, peer_span_started, recorded_elsewhere
from .telemetry import Telemetry
from .usage import Usage, span_attributes


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


class Said(Protocol):
    """What the stream learnt of its response by the end (``state.StreamState`` holds it)."""

    tool_calls: int
    buffered: bool
    first_chunk_ns: int | None
    response_id: str | None
    response_model: str | None
    usage: Usage | None


class Inference:
    __slots__ = ("owns_span", "parent", "peer_mark", "request", "span", "start_ns", "telemetry")

    def __init__(self, telemetry: Telemetry, request: RequestInfo) -> None:
        self.telemetry = telemetry
        self.request = request
        self.start_ns = request.start_ns or clock.time_ns()
        self.owns_span = False
        self.parent = parent = request.parent if request.parent is not None else otel_context.get_current()
        # Made at its first need, not now: a peer may start its own span for this request only
        # after the SDK returned the stream (peers.peer_span_started).
        self.span: Span | None = request.adopted_span
        self.peer_mark = peer_mark()
        if self.span is not None:
            peer_span_claimed(self.span)
        elif not telemetry.settings.inference_spans:
            self.span = trace.get_current_span(parent)

    def made(self) -> Span:
        """The span, made now if not yet (under the stream's lock): a peer's span started beside
        this request, adopted; else the package's own, from the request's start."""
        if self.span is not None:
            return self.span
        request = self.request
        peer = peer_span_started(self.parent, request.provider, self.peer_mark)
        if peer is not None:
            request.adopted_span = self.span = peer
            return peer  # type: ignore[no-any-return]
        self.owns_span = True
        span = self.span = start_span(
            self.telemetry.tracer,
            f"{request.operation} {request.model}" if request.model else request.operation,
            context=self.parent,
            kind=SpanKind.CLIENT,
            attributes={**request.attributes(), n.GEN_AI_REQUEST_STREAM: True},
            start_time=self.start_ns,
        )
        return span

    def adopted(self, span: Span) -> bool:
        """``span`` is the adopted one (the SDK's or a peer's), which may end before the stream."""
        return span is self.request.adopted_span

    def renamed(self, provider: str) -> None:
        """The provider named better than by the SDK's client (a routing layer above it)."""
        self.request.provider = provider
        if self.owns_span and self.span is not None:
            self.span.set_attribute(n.GEN_AI_PROVIDER_NAME, provider)

    def outcome_attributes(self, said: Said, outcome_reason: str | None) -> dict[str, Any]:
        """The stream's toolcall.* attributes: count, outcome, abort reason, buffered."""
        attributes: dict[str, Any] = {n.TOOLCALL_COUNT: said.tool_calls}
        if outcome_reason is None:
            attributes[n.TOOLCALL_OUTCOME] = n.COMPLETED
        else:
            attributes[n.TOOLCALL_OUTCOME] = n.ABORTED
            attributes[n.TOOLCALL_ABORT_REASON] = outcome_reason
        if said.buffered:
            attributes[n.TOOLCALL_STREAM_BUFFERED] = True
        if self.owns_span and said.first_chunk_ns is not None:
            # Written at the end, with the rest, rather than by the first chunk.
            attributes[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = (said.first_chunk_ns - self.start_ns) / 1e9
        return attributes

    def end(
        self,
        span: Span,
        said: Said,
        outcome: tuple[str | None, str | None],
        finish_reasons: list[str],
        end_ns: int,
    ) -> None:
        """Once, at the stream's end: the metrics, then the span's end attributes (and its end, if
        the package's own); ``outcome``: (abort reason or None, error type) of the stream."""
        outcome_reason, error_type = outcome
        # Guarded alone: a failing meter must not leave the inference span unended.
        guarded(self.record, said, error_type, end_ns)
        if not span.is_recording():
            return
        if not self.owns_span and self.request.adopted_span is None:
            # Inference spans off: the current span is the caller's (an agent turn), not this request's.
            return
        if not self.owns_span:
            span.set_attributes(self.outcome_attributes(said, outcome_reason))
            return
        # The span's own: every end attribute in one set_attributes (one lock, one check in the SDK).
        attributes = self.outcome_attributes(said, outcome_reason)
        if said.response_id:
            attributes[n.GEN_AI_RESPONSE_ID] = said.response_id
        if said.response_model:
            attributes[n.GEN_AI_RESPONSE_MODEL] = said.response_model
        if said.usage is not None and reports_usage(self.request.operation):
            attributes.update(span_attributes(said.usage))
        attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] = finish_reasons
        if error_type is not None:
            attributes[n.ERROR_TYPE] = error_type
        span.set_attributes(attributes)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR, f"stream failed: {error_type}"))
        span.end(end_time=end_ns)

    def record(self, said: Said, error_type: str | None, end_ns: int) -> None:
        request = self.request
        attributes = request.attributes()
        if said.response_model:
            attributes[n.GEN_AI_RESPONSE_MODEL] = said.response_model
        self.telemetry.metrics.stream_ended(
            StreamEnd(
                attributes=attributes,
                operation=request.operation,
                recorded_elsewhere=recorded_elsewhere(request.adopted_span),
                start_ns=self.start_ns,
                first_chunk_ns=said.first_chunk_ns,
                usage=said.usage,
                error_type=error_type,
                end_ns=end_ns,
            )
        )
        if said.buffered:
            self.telemetry.metrics.stream_was_buffered(request.provider, request.model)
