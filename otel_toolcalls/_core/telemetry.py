"""The tracer, the metrics and the settings one ``instrument()`` call wires together."""

from __future__ import annotations

from opentelemetry import metrics, trace

from otel_toolcalls._config import Settings
from otel_toolcalls.version import __version__

from . import errors, process
from .metrics import Metrics

_SCOPE = "otel_toolcalls"
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"

# The one memory of calls (held by process), so that execute_tool finds calls whichever instrument() saw.
REGISTRY = process.REGISTRY


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
        # Every record goes through it: one method per signal.
        self.metrics = Metrics(meter, settings.metrics_max_tool_names)


_ACTIVE: Telemetry | None = None


def active() -> Telemetry | None:
    return _ACTIVE


def set_active(telemetry: Telemetry | None) -> None:
    """The instrumentor's telemetry (None: uninstrumented); the package's own failures count into it."""
    global _ACTIVE
    _ACTIVE = telemetry
    errors.count_into(telemetry.metrics if telemetry is not None else None)


def in_force() -> Telemetry:
    """The instrumentor's telemetry, or, for ``execute_tool`` used without ``instrument()``, one built
    once on the global providers with settings from the environment (process.FALLBACK)."""
    if _ACTIVE is not None:
        return _ACTIVE
    fallback: Telemetry | None = process.FALLBACK.value
    if fallback is None:
        from otel_toolcalls._config import resolve

        fallback = process.FALLBACK.value = Telemetry(resolve())
    return fallback
