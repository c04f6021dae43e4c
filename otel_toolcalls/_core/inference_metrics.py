"""The GenAI conventions' client inference metrics, recorded once per stream, when it ends.

The inference duration (``error.type`` when it failed), time to first chunk and token usage, for
every stream the package sees, whoever made its inference span (or none was made); an operation that is not
inference (``fetch_response``) gets the operation duration and no usage. Recorded at the end so
that time to first chunk carries ``gen_ai.response.model``, which arrives with or after that chunk.
The stream hands over values (``StreamEnd``); this module knows no stream.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from . import names as n
from .usage import FIELDS, Usage

_log = logging.getLogger(__name__)

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


def reports_usage(operation: str) -> bool:
    """The conventions: no token usage for an operation that is not inference (``fetch_response``)."""
    return operation != n.OPERATION_FETCH_RESPONSE


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """A stream's end as its metrics read it."""

    # What every inference metric carries: the request's attributes and the response model.
    attributes: dict[str, Any]
    operation: str
    # Someone else's inference span, whose instrumentation may record some metrics itself.
    adopted_span: Any
    start_ns: int
    first_chunk_ns: int | None
    usage: Usage | None
    error_type: str | None
    end_ns: int


class InferenceInstruments:
    def __init__(self, made: dict[str, Any]) -> None:
        """``made``: every instrument, by name (``telemetry`` makes them all from one table)."""
        self.duration = made[n.METRIC_INFERENCE_DURATION]
        self.operation_duration = made[n.METRIC_OPERATION_DURATION]
        self.time_to_first_chunk = made[n.METRIC_TIME_TO_FIRST_CHUNK]
        self.tokens = {metric: made[metric] for _, _, metric in FIELDS}

    def record(self, end: StreamEnd) -> None:
        try:
            self._record(end)
        except Exception:
            _log.debug("otel_toolcalls: failed to record inference metrics", exc_info=True)

    def _record(self, end: StreamEnd) -> None:
        skip = recorded_elsewhere(end.adopted_span)
        attributes = end.attributes
        inference = end.operation in n.INFERENCE_OPERATIONS
        name, duration = (
            (n.METRIC_INFERENCE_DURATION, self.duration)
            if inference
            else (n.METRIC_OPERATION_DURATION, self.operation_duration)
        )
        if name not in skip:
            failed = {**attributes, n.ERROR_TYPE: end.error_type} if end.error_type else attributes
            duration.record(max(0, end.end_ns - end.start_ns) / 1e9, failed)
        if not inference:
            return
        first = end.first_chunk_ns
        if first is not None and n.METRIC_TIME_TO_FIRST_CHUNK not in skip:
            self.time_to_first_chunk.record(max(0, first - end.start_ns) / 1e9, attributes)
        if end.usage is not None and reports_usage(end.operation):
            self._record_usage(end.usage, attributes, skip)

    def _record_usage(self, usage: Usage, attributes: dict[str, Any], skip: frozenset[str]) -> None:
        tokens = {**attributes, n.GEN_AI_TOKEN_MODALITY: n.TOKEN_MODALITY_UNKNOWN}
        for field, _, metric in FIELDS:
            value = getattr(usage, field)
            # A 0 cache or reasoning count (most requests) adds nothing to its counter's total,
            # only a series of zeros; input and output are always recorded.
            if value is None or metric in skip or (value == 0 and field in _SUBSETS):
                continue
            self.tokens[metric].add(value, tokens)
