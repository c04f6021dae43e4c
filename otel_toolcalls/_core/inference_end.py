"""The end of a streamed request: its outcome as a whole, its inference span and metrics.

Called once, by ``StreamState.finalize`` after the calls have ended (and by ``final_event`` for an
adopted span that may end before the stream does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Span, Status, StatusCode

from . import names as n
from .errors import guarded
from .inference_metrics import reports_usage, request_attributes
from .usage import span_attributes

if TYPE_CHECKING:
    from .state import StreamState


def inference_attributes(state: StreamState) -> dict[str, Any]:
    """The inference span's attributes at its start."""
    return {**request_attributes(state.request), n.GEN_AI_REQUEST_STREAM: True}


def stream_outcome(state: StreamState, reason: str, error_type: str | None) -> tuple[str | None, str | None]:
    """(abort reason or None for completed, error type) of the stream as a whole."""
    if state._error_type is not None or reason == n.STREAM_ERROR:
        return n.STREAM_ERROR, error_type or state._error_type
    if state._stop_abort is not None:
        return state._stop_abort, None
    if state._final:
        return None, None
    return reason, None


def end_inference(state: StreamState, reason: str, error_type: str | None, end_ns: int) -> None:
    span = state.span
    outcome_reason, error_type = stream_outcome(state, reason, error_type)
    # Guarded alone: a failing meter must not leave the inference span unended.
    guarded(_record_inference, state, error_type, end_ns)
    if not span.is_recording():
        return
    if not state._owns_span and state.request.adopted_span is None:
        # Inference spans off: the current span is the caller's (an agent turn), not this request's.
        return
    if not state._owns_span:
        annotate(state, span, outcome_reason)
        return
    # The span's own: every end attribute in one set_attributes (one lock, one check in the SDK).
    attributes = outcome_attributes(state, outcome_reason)
    if state.response_id:
        attributes[n.GEN_AI_RESPONSE_ID] = state.response_id
    if state.response_model:
        attributes[n.GEN_AI_RESPONSE_MODEL] = state.response_model
    if state.usage is not None and reports_usage(state):
        attributes.update(span_attributes(state.usage))
    choices = sorted(set(state._finish_reasons) | state._choices_with_calls) or [0]
    attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] = [state._finish_reasons.get(c, "error") for c in choices]
    if error_type is not None:
        attributes[n.ERROR_TYPE] = error_type
    span.set_attributes(attributes)
    if error_type is not None:
        span.set_status(Status(StatusCode.ERROR, f"stream failed: {error_type}"))
    span.end(end_time=end_ns)


def _record_inference(state: StreamState, error_type: str | None, end_ns: int) -> None:
    state.telemetry.inference.record(state, error_type=error_type, end_ns=end_ns)
    if state.buffered:
        attributes = {n.GEN_AI_PROVIDER_NAME: state.provider}
        if state.model:
            attributes[n.GEN_AI_REQUEST_MODEL] = state.model
        state.telemetry.stream_buffered.add(1, attributes)


def outcome_attributes(state: StreamState, outcome_reason: str | None) -> dict[str, Any]:
    """The stream's toolcall.* attributes: count, outcome, abort reason, buffered."""
    attributes: dict[str, Any] = {n.TOOLCALL_COUNT: state.tool_calls}
    if outcome_reason is None:
        attributes[n.TOOLCALL_OUTCOME] = n.COMPLETED
    else:
        attributes[n.TOOLCALL_OUTCOME] = n.ABORTED
        attributes[n.TOOLCALL_ABORT_REASON] = outcome_reason
    if state.buffered:
        attributes[n.TOOLCALL_STREAM_BUFFERED] = True
    if state._owns_span and state.first_chunk_ns is not None:
        # Written at the end, with the rest, rather than by the first chunk.
        attributes[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = (state.first_chunk_ns - state.start_ns) / 1e9
    return attributes


def annotate(state: StreamState, span: Span, outcome_reason: str | None) -> None:
    span.set_attributes(outcome_attributes(state, outcome_reason))
