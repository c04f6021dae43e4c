"""The tracer, the instruments and the settings one ``instrument()`` call wires together."""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

from opentelemetry import metrics, trace

from otel_toolcalls._config import Settings
from otel_toolcalls.version import __version__

from . import errors, process
from . import names as n
from .counts import counts_for
from .inference_metrics import InferenceInstruments
from .usage import FIELDS

_SCOPE = "otel_toolcalls"
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"

# Two seconds tables, apart on purpose (TELEMETRY.md section 4 names them apart): the tool-call
# durations' own "seconds buckets", from milliseconds to minutes, and the GenAI conventions'
# advised boundaries for the inference metrics, which their dashboards expect as written.
TOOL_CALL_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
INFERENCE_SECONDS_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92
)  # fmt: skip
_BYTES_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)
_DELTAS_BUCKETS = (0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 4000, 16000)

# The one memory of calls (held by process), so that execute_tool finds calls whichever instrument() saw.
REGISTRY = process.REGISTRY


class Spec(NamedTuple):
    unit: str
    description: str
    buckets: Any = None  # the advised bucket boundaries of a histogram; None: a counter
    # A counter counted in the package and reported at collection (``counts``): those added to on
    # every call's or stream's end, where a synchronous add is most of the metric's cost.
    observed: bool = False


# Every instrument the package records, by name.
_INSTRUMENTS: dict[str, Spec] = {
    n.METRIC_CALLS: Spec("{call}", "Streamed tool calls by outcome.", observed=True),
    n.METRIC_DURATION: Spec("s", "Tool-call block start to completion or abort.", TOOL_CALL_SECONDS_BUCKETS),
    n.METRIC_ARGUMENTS_SIZE: Spec("By", "UTF-8 bytes of a call's argument fragments.", _BYTES_BUCKETS),
    n.METRIC_ARGUMENTS_DELTAS: Spec("{delta}", "Argument fragments of a call.", _DELTAS_BUCKETS),
    n.METRIC_EXECUTE_TOOL_DURATION: Spec("s", "Duration of tool executions.", TOOL_CALL_SECONDS_BUCKETS),
    n.METRIC_REPLAYED_ABORTED: Spec(
        "{call}", "Aborted tool calls found again in a later request's input history."
    ),
    n.METRIC_STREAM_BUFFERED: Spec(
        "{stream}", "Streams whose chunks arrived in one burst after a long wait."
    ),
    n.METRIC_INTERNAL_ERRORS: Spec(
        "{error}", "Failures of the package's own steps, by site; none reached the application."
    ),
    # The GenAI conventions' inference metrics (inference_metrics records them).
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


class Telemetry:
    """What the adapters and the core share: built by ``instrument()``, read on every stream."""

    def __init__(
        self,
        settings: Settings,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self.settings = settings
        self.registry = REGISTRY
        self.registry.resize(settings.registry_size)
        self.tracer = trace.get_tracer(
            _SCOPE, __version__, tracer_provider=tracer_provider, schema_url=_SCHEMA_URL
        )
        meter = metrics.get_meter(_SCOPE, __version__, meter_provider=meter_provider, schema_url=_SCHEMA_URL)
        self.tool_name_for_metrics = ToolNameLimiter(settings.metrics_max_tool_names)
        made = {name: _instrument(meter, name, spec) for name, spec in _INSTRUMENTS.items()}
        self.calls = made[n.METRIC_CALLS]
        self.duration = made[n.METRIC_DURATION]
        self.arguments_size = made[n.METRIC_ARGUMENTS_SIZE]
        self.arguments_deltas = made[n.METRIC_ARGUMENTS_DELTAS]
        self.execute_duration = made[n.METRIC_EXECUTE_TOOL_DURATION]
        # The conventions' inference metrics (duration, time to first chunk, token usage).
        self.inference = InferenceInstruments(made)
        self.replayed_aborted = made[n.METRIC_REPLAYED_ABORTED]
        self.stream_buffered = made[n.METRIC_STREAM_BUFFERED]
        self.internal_errors = made[n.METRIC_INTERNAL_ERRORS]


_ACTIVE: Telemetry | None = None


def active() -> Telemetry | None:
    return _ACTIVE


def set_active(telemetry: Telemetry | None) -> None:
    """The instrumentor's telemetry (None: uninstrumented); the package's own failures count into it."""
    global _ACTIVE
    _ACTIVE = telemetry
    errors.count_into(telemetry.internal_errors if telemetry is not None else None)


def current() -> Telemetry:
    """The instrumentor's telemetry, or, for ``execute_tool`` used without ``instrument()``, one built
    once on the global providers with settings from the environment (process.FALLBACK)."""
    if _ACTIVE is not None:
        return _ACTIVE
    fallback: Telemetry | None = process.FALLBACK.value
    if fallback is None:
        from otel_toolcalls._config import resolve

        fallback = process.FALLBACK.value = Telemetry(resolve())
    return fallback
