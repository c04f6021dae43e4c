"""doctor's view of the OpenTelemetry side: the global providers, and where OTLP would export to.

Never reported: header values (``OTEL_EXPORTER_OTLP_*HEADERS`` carry API keys), and the user info,
query string and fragment of an endpoint URL (keys are put there too).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_SIGNALS = {"traces": "/v1/traces", "metrics": "/v1/metrics"}
# What the OpenTelemetry SDK does with OTEL_*_EXPORTER=otlp and no protocol set.
_DEFAULT_PROTOCOL = "grpc"
_DEFAULT_ENDPOINTS = {"grpc": "http://localhost:4317", "http/protobuf": "http://localhost:4318"}
_BY_EXPORTER = {"otlp_proto_grpc": "grpc", "otlp_proto_http": "http/protobuf"}


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _tracer(provider: Any) -> dict[str, Any]:
    from opentelemetry import trace

    if isinstance(provider, trace.ProxyTracerProvider):
        return {"real": False, "type": _type_name(provider), "note": "nothing set the global provider"}
    if isinstance(provider, trace.NoOpTracerProvider):
        return {"real": False, "type": _type_name(provider), "note": "set to the no-op provider"}
    report: dict[str, Any] = {"real": True, "type": _type_name(provider)}
    # The SDK's provider keeps its processors privately; reported when it is the SDK's.
    processors = getattr(getattr(provider, "_active_span_processor", None), "_span_processors", None)
    if isinstance(processors, tuple):
        report["span_processors"] = [_type_name(p) for p in processors]
    return report


def _meter(provider: Any) -> dict[str, Any]:
    from opentelemetry import metrics

    if type(provider).__name__ == "_ProxyMeterProvider":
        return {"real": False, "type": _type_name(provider), "note": "nothing set the global provider"}
    if isinstance(provider, metrics.NoOpMeterProvider):
        return {"real": False, "type": _type_name(provider), "note": "set to the no-op provider"}
    report: dict[str, Any] = {"real": True, "type": _type_name(provider)}
    readers = getattr(provider, "_metric_readers", None)
    if readers is None:  # opentelemetry-sdk before 1.4x keeps them in its configuration only
        readers = getattr(getattr(provider, "_sdk_config", None), "metric_readers", None)
    if isinstance(readers, (list, tuple)):
        report["metric_readers"] = [_type_name(r) for r in readers]
    return report


def providers() -> dict[str, Any]:
    from opentelemetry import metrics, trace

    return {"tracer": _tracer(trace.get_tracer_provider()), "meter": _meter(metrics.get_meter_provider())}


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment; a value that does not parse is not shown."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(not a URL; not shown)"
    if not parts.scheme or not host:
        return "(not a URL; not shown)"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _first(*variables: str) -> tuple[str | None, str | None]:
    for variable in variables:
        value = os.environ.get(variable, "").strip()
        if value:
            return value, variable
    return None, None


def _protocol(signal: str, exporter: str | None) -> tuple[str, str]:
    for name in (exporter or "").split(","):
        if name.strip() in _BY_EXPORTER:
            return _BY_EXPORTER[name.strip()], f"OTEL_{signal.upper()}_EXPORTER"
    value, variable = _first(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    if value is None or variable is None:
        return _DEFAULT_PROTOCOL, "default"
    return value, variable


def _endpoint(signal: str, protocol: str) -> tuple[str, str]:
    value, variable = _first(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if value is not None and variable is not None:
        return safe_url(value), variable
    value, variable = _first("OTEL_EXPORTER_OTLP_ENDPOINT")
    source = variable or "default"
    base = safe_url(value or _DEFAULT_ENDPOINTS.get(protocol, _DEFAULT_ENDPOINTS["grpc"]))
    if protocol.startswith("http") and not base.startswith("("):
        # The general endpoint is a base: HTTP exporters add the signal's path to it.
        base = base.rstrip("/") + _SIGNALS[signal]
    return base, source


def otlp() -> dict[str, Any]:
    """Per signal: the exporter named, the protocol and endpoint it would use, and each's source."""
    report: dict[str, Any] = {}
    for signal in _SIGNALS:
        exporter = os.environ.get(f"OTEL_{signal.upper()}_EXPORTER")
        protocol, protocol_source = _protocol(signal, exporter)
        endpoint, endpoint_source = _endpoint(signal, protocol)
        _, headers = _first(f"OTEL_EXPORTER_OTLP_{signal.upper()}_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
        report[signal] = {
            "exporter": exporter,
            "protocol": protocol,
            "protocol_source": protocol_source,
            "endpoint": endpoint,
            "endpoint_source": endpoint_source,
            "headers": f"set in {headers}, not shown" if headers else "none",
        }
    return report
