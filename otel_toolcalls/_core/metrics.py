"""Every metric the package records: the instrument table, and one method per signal.

Nothing else in the package calls ``add`` or ``record``: a call's end, a tool's execution, a
stream's end (the GenAI conventions' inference metrics), a replayed aborted call, a buffered stream
and an internal error each have their method here, which builds the signal's attributes. The names
are TELEMETRY.md section 4's (``names.METRIC_*``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, NamedTuple

from opentelemetry import metrics

from . import names as n
from . import process
from .counts import counts_for
from .usage import FIELDS, Usage

# Two seconds tables, apart on purpose (TELEMETRY.md section 4 names them apart): the tool-call
# durations' own "seconds buckets", from milliseconds to minutes, and the GenAI conventions'
# advised boundaries for the inference metrics, which their dashboards expect as written.
TOOL_CALL_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
INFERENCE_SECONDS_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92
)  # fmt: skip
_BYTES_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)
_DELTAS_BUCKETS = (0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 4000, 16000)


class Spec(NamedTuple):
    unit: str
    description: str
    buckets: Any = None  # the advised bucket boundaries of a histogram; None: a counter
    # A counter counted in the package and reported at collection (``counts``): those added to on
    # every call's or stream's end, where a synchronous add is most of the metric's cost.
    observed: bool = False


# Every instrument the package records, by name.
INSTRUMENTS: dict[str, Spec] = {
    n.METRIC_TOOLCALL_CALLS: Spec("{call}", "Streamed tool calls by outcome.", observed=True),
    n.METRIC_TOOLCALL_DURATION: Spec(
        "s", "Tool-call block start to completion or abort.", TOOL_CALL_SECONDS_BUCKETS
    ),
    n.METRIC_TOOLCALL_ARGUMENTS_SIZE: Spec(
        "By", "UTF-8 bytes of a call's argument fragments.", _BYTES_BUCKETS
    ),
    n.METRIC_TOOLCALL_ARGUMENTS_DELTAS: Spec("{delta}", "Argument fragments of a call.", _DELTAS_BUCKETS),
    n.METRIC_EXECUTE_TOOL_DURATION: Spec("s", "Duration of tool executions.", TOOL_CALL_SECONDS_BUCKETS),
    n.METRIC_TOOLCALL_REPLAYED_ABORTED: Spec(
        "{call}", "Aborted tool calls found again in a later request's input history."
    ),
    n.METRIC_TOOLCALL_STREAM_BUFFERED: Spec(
        "{stream}", "Streams whose chunks arrived in one burst after a long wait."
    ),
    n.METRIC_TOOLCALL_INTERNAL_ERRORS: Spec(
        "{error}", "Failures of the package's own steps, by site; none reached the application."
    ),
    # The GenAI conventions' inference metrics.
    n.METRIC_INFERENCE_DURATION: Spec("s", "GenAI client inference duration.", INFERENCE_SECONDS_BUCKETS),
    n.METRIC_OPERATION_DURATION: Spec("s", "GenAI operation duration.", INFERENCE_SECONDS_BUCKETS),
    n.METRIC_TIME_TO_FIRST_CHUNK: Spec(
        "s", "Time from the request to the first chunk of a streamed response.", INFERENCE_SECONDS_BUCKETS
    ),
    **{metric: Spec("{token}", f"Tokens, as {attribute}.", observed=True) for _, attribute, metric in FIELDS},
}


def _instrument(meter: metrics.Meter, name: str, spec: Spec) -> Any:
    unit, description, buckets, observed = spec
    if observed:
        return counts_for(meter, name, unit=unit, description=description)
    if buckets is None:
        return meter.create_counter(name, unit=unit, description=description)
    try:
        return meter.create_histogram(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
        )
    except TypeError:  # opentelemetry-api older than 1.23 has no bucket advisory
        return meter.create_histogram(name, unit=unit, description=description)


class ToolNameLimiter:
    """Caps the distinct tool names metrics carry: names come from model output, unbounded."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        process.renew_at_fork(self)

    def __call__(self, name: str) -> str:
        if name in self._seen:
            return name
        with self._lock:
            if name in self._seen:
                return name
            if len(self._seen) >= self._limit:
                return n.OTHER
            self._seen.add(name)
            return name

    def after_fork_in_child(self) -> None:
        # The names stay (the child's series go on from the parent's); the lock is new, as a
        # thread of the parent may have held it at the fork.
        self._lock = threading.Lock()


# -- the inference metrics' inputs ------------------------------------------------------------------

_SUBSETS = frozenset({"cache_read", "cache_write", "reasoning"})


def reports_usage(operation: str) -> bool:
    """The conventions: no token usage for an operation that is not inference (``fetch_response``)."""
    return operation != n.OPERATION_FETCH_RESPONSE


@dataclass(slots=True)
class StreamEnd:
    """A stream's end as its metrics read it: recorded at the end so that time to first chunk
    carries ``gen_ai.response.model``, which arrives with or after that chunk (made per stream:
    not frozen, whose every field would be set through object.__setattr__)."""

    # What every inference metric carries: the request's attributes and the response model.
    attributes: dict[str, Any]
    operation: str
    # The metrics the instrumentation of the adopted span (a peer's, the SDK's) records itself.
    recorded_elsewhere: frozenset[str]
    start_ns: int
    first_chunk_ns: int | None
    usage: Usage | None
    error_type: str | None
    end_ns: int


@dataclass(slots=True)
class CallEnd:
    """A tool call's end as its metrics read it (made per call: not frozen, whose every field
    would be set through object.__setattr__)."""

    provider: str
    model: str | None
    tool_name: str
    outcome: str
    reason: str | None  # the abort reason; None: completed
    error_type: str | None
    arguments_size: int | None  # UTF-8 bytes of its fragments; None: it arrived whole, not measured
    arguments_deltas: int
    seconds: float


class Metrics:
    """The instruments of one ``instrument()``, and the one method that records each signal."""

    def __init__(self, meter: metrics.Meter, max_tool_names: int) -> None:
        made = {name: _instrument(meter, name, spec) for name, spec in INSTRUMENTS.items()}
        # Tool names on metrics are bounded (they come from model output).
        self.tool_names = ToolNameLimiter(max_tool_names)
        self.toolcall_calls = made[n.METRIC_TOOLCALL_CALLS]
        self.toolcall_duration = made[n.METRIC_TOOLCALL_DURATION]
        self.toolcall_arguments_size = made[n.METRIC_TOOLCALL_ARGUMENTS_SIZE]
        self.toolcall_arguments_deltas = made[n.METRIC_TOOLCALL_ARGUMENTS_DELTAS]
        self.execute_tool_duration = made[n.METRIC_EXECUTE_TOOL_DURATION]
        self.toolcall_replayed_aborted = made[n.METRIC_TOOLCALL_REPLAYED_ABORTED]
        self.toolcall_stream_buffered = made[n.METRIC_TOOLCALL_STREAM_BUFFERED]
        self.toolcall_internal_errors = made[n.METRIC_TOOLCALL_INTERNAL_ERRORS]
        self.inference_duration = made[n.METRIC_INFERENCE_DURATION]
        self.operation_duration = made[n.METRIC_OPERATION_DURATION]
        self.time_to_first_chunk = made[n.METRIC_TIME_TO_FIRST_CHUNK]
        self.tokens = {metric: made[metric] for _, _, metric in FIELDS}

    def call_ended(self, end: CallEnd) -> None:
        """``toolcall.calls``, ``toolcall.duration`` and the arguments' size and deltas of one call."""
        attributes: dict[str, Any] = {
            n.GEN_AI_PROVIDER_NAME: end.provider,
            n.GEN_AI_TOOL_NAME: self.tool_names(end.tool_name),
            n.TOOLCALL_OUTCOME: end.outcome,
        }
        if end.model:
            attributes[n.GEN_AI_REQUEST_MODEL] = end.model
        if end.arguments_size is not None:
            self.toolcall_arguments_size.record(end.arguments_size, attributes)
        self.toolcall_arguments_deltas.record(end.arguments_deltas, attributes)
        if end.reason is not None:
            attributes = {
                **attributes,
                n.TOOLCALL_ABORT_REASON: end.reason,
                n.ERROR_TYPE: end.error_type or end.reason,
            }
        self.toolcall_calls.add(1, attributes)
        self.toolcall_duration.record(end.seconds, attributes)

    def tool_executed(self, tool_name: str, outcome: str, error_type: str | None, seconds: float) -> None:
        """``gen_ai.execute_tool.duration``: one tool execution (``execute_tool``)."""
        attributes: dict[str, Any] = {
            n.GEN_AI_TOOL_NAME: self.tool_names(tool_name),
            n.TOOLCALL_OUTCOME: outcome,
        }
        if error_type is not None:
            attributes[n.ERROR_TYPE] = error_type
        self.execute_tool_duration.record(seconds, attributes)

    def call_replayed(self, provider: str, model: str | None, tool_name: str) -> None:
        """``toolcall.replayed_aborted``: an aborted call found in a request's input history."""
        attributes: dict[str, Any] = {
            n.GEN_AI_PROVIDER_NAME: provider,
            n.GEN_AI_TOOL_NAME: self.tool_names(tool_name),
        }
        if model:
            attributes[n.GEN_AI_REQUEST_MODEL] = model
        self.toolcall_replayed_aborted.add(1, attributes)

    def stream_was_buffered(self, provider: str, model: str | None) -> None:
        """``toolcall.stream.buffered``: a stream whose chunks came in one burst after a long wait."""
        attributes = {n.GEN_AI_PROVIDER_NAME: provider}
        if model:
            attributes[n.GEN_AI_REQUEST_MODEL] = model
        self.toolcall_stream_buffered.add(1, attributes)

    def internal_error(self, site: str, error_type: str) -> None:
        """``toolcall.internal_errors``: one failure of the package's own step at ``site``."""
        self.toolcall_internal_errors.add(1, {n.ERROR_SITE: site, n.ERROR_TYPE: error_type})

    def stream_ended(self, end: StreamEnd) -> None:
        """The conventions' inference metrics of one stream: duration (``error.type`` when it
        failed), time to first chunk and token usage, whoever made its inference span; an operation
        that is not inference (``fetch_response``) gets the operation duration and no usage. Its
        caller guards it (``errors.guarded``): a failure is counted there."""
        self._stream_ended(end)

    def _stream_ended(self, end: StreamEnd) -> None:
        skip = end.recorded_elsewhere
        attributes = end.attributes
        inference = end.operation in n.INFERENCE_OPERATIONS
        name, duration = (
            (n.METRIC_INFERENCE_DURATION, self.inference_duration)
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
            self._usage(end.usage, attributes, skip)

    def _usage(self, usage: Usage, attributes: dict[str, Any], skip: frozenset[str]) -> None:
        tokens = {**attributes, n.GEN_AI_TOKEN_MODALITY: n.TOKEN_MODALITY_UNKNOWN}
        for field, _, metric in FIELDS:
            value = getattr(usage, field)
            # A 0 cache or reasoning count (most requests) adds nothing to its counter's total,
            # only a series of zeros; input and output are always recorded.
            if value is None or metric in skip or (value == 0 and field in _SUBSETS):
                continue
            self.tokens[metric].add(value, tokens)
