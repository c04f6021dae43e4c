"""The GenAI conventions' client inference metrics, recorded once per stream, when it ends.

``gen_ai.client.inference.duration`` (request to end, ``error.type`` when it failed),
``gen_ai.client.inference.time_to_first_chunk`` and the token counters
``gen_ai.client.inference.usage.*`` (``{token}``, with ``gen_ai.token.modality``), all with the
attributes the conventions require and recommend, and the advised buckets. They are recorded for
every stream the package sees: with its own inference span, with someone else's (an SDK that
traces itself), or with inference spans off. Recording at the end rather than at the first chunk
lets time-to-first-chunk carry ``gen_ai.response.model``, which arrives with or after that chunk.

An operation that is not inference (``fetch_response``: a stored response streamed again) gets the
conventions' ``gen_ai.client.operation.duration`` instead, and no time-to-first-chunk or token
usage (the conventions: no usage for that operation).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from . import names as n
from .usage import FIELDS

if TYPE_CHECKING:
    from .state import RequestInfo, StreamState

_log = logging.getLogger(__name__)

# The conventions' advised ExplicitBucketBoundaries for the inference duration and time to first chunk.
SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

# Instrumentation scopes that record some of these metrics themselves, by metric name: where one of
# them made the inference span the package adopted, the package leaves those metrics to it. An
# instrumentation is identified by the scope of its span; one not listed records none of them.
RECORDED_BY_SCOPE: dict[str, frozenset[str]] = {
    # anthropic 2.x tracing itself: spans only (anthropic/_tracing.py and anthropic/lib/_tracing
    # import opentelemetry.trace and no meter), so the package records every metric.
    "com.anthropic.sdk.python": frozenset(),
    # opentelemetry-instrumentation-openai-v2 records these two, older names for other signals.
    "opentelemetry.instrumentation.openai_v2": frozenset(
        {n.METRIC_OPERATION_DURATION, "gen_ai.client.token.usage"}
    ),
}

_SUBSETS = frozenset({"cache_read", "cache_write", "reasoning"})


def recorded_elsewhere(span: Any) -> frozenset[str]:
    """The metrics the instrumentation that made ``span`` (an adopted span) records itself."""
    if span is None:
        return frozenset()
    scope = getattr(span, "instrumentation_scope", None)
    return RECORDED_BY_SCOPE.get(getattr(scope, "name", None) or "", frozenset())


def request_attributes(request: RequestInfo) -> dict[str, Any]:
    """What every inference signal (span and metrics) carries of the request itself; the port only
    with the address (the conventions: ``server.port`` is required if ``server.address`` is set)."""
    attributes: dict[str, Any] = {
        n.GEN_AI_OPERATION_NAME: request.operation,
        n.GEN_AI_PROVIDER_NAME: request.provider,
    }
    if request.model:
        attributes[n.GEN_AI_REQUEST_MODEL] = request.model
    if request.server_address:
        attributes[n.SERVER_ADDRESS] = request.server_address
        if request.server_port:
            attributes[n.SERVER_PORT] = request.server_port
    return attributes


def attributes_of(state: StreamState) -> dict[str, Any]:
    """The attributes every inference metric carries (``metric_attributes.gen_ai``)."""
    attributes = request_attributes(state.request)
    if state.response_model:
        attributes[n.GEN_AI_RESPONSE_MODEL] = state.response_model
    return attributes


def reports_usage(state: StreamState) -> bool:
    return state.usage is not None and state.request.operation != n.OPERATION_FETCH_RESPONSE


class InferenceInstruments:
    def __init__(self, made: dict[str, Any]) -> None:
        """``made``: every instrument, by name (``_telemetry`` makes them all from one table)."""
        self.duration = made[n.METRIC_INFERENCE_DURATION]
        self.operation_duration = made[n.METRIC_OPERATION_DURATION]
        self.time_to_first_chunk = made[n.METRIC_TIME_TO_FIRST_CHUNK]
        self.tokens = {metric: made[metric] for _, _, metric in FIELDS}

    def record(self, state: StreamState, *, error_type: str | None, end_ns: int) -> None:
        try:
            self._record(state, error_type=error_type, end_ns=end_ns)
        except Exception:
            _log.debug("otel_toolcalls: failed to record inference metrics", exc_info=True)

    def _record(self, state: StreamState, *, error_type: str | None, end_ns: int) -> None:
        skip = recorded_elsewhere(state.request.adopted_span)
        attributes = attributes_of(state)
        inference = state.request.operation in n.INFERENCE_OPERATIONS
        name, duration = (
            (n.METRIC_INFERENCE_DURATION, self.duration)
            if inference
            else (n.METRIC_OPERATION_DURATION, self.operation_duration)
        )
        if name not in skip:
            failed = {**attributes, n.ERROR_TYPE: error_type} if error_type else attributes
            duration.record(max(0, end_ns - state.start_ns) / 1e9, failed)
        if not inference:
            return
        first = state.first_chunk_ns
        if first is not None and n.METRIC_TIME_TO_FIRST_CHUNK not in skip:
            self.time_to_first_chunk.record(max(0, first - state.start_ns) / 1e9, attributes)
        if reports_usage(state):
            self._record_usage(state, attributes, skip)

    def _record_usage(self, state: StreamState, attributes: dict[str, Any], skip: frozenset[str]) -> None:
        tokens = {**attributes, n.GEN_AI_TOKEN_MODALITY: n.TOKEN_MODALITY_UNKNOWN}
        for field, _, metric in FIELDS:
            value = getattr(state.usage, field)
            # A 0 cache or reasoning count (most requests) adds nothing to its counter's total,
            # only a series of zeros; input and output are always recorded.
            if value is None or metric in skip or (value == 0 and field in _SUBSETS):
                continue
            self.tokens[metric].add(value, tokens)
