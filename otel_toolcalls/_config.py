"""Settings: every one is an ``instrument()`` keyword and an environment variable; the keyword wins."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

_log = logging.getLogger(__name__)

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURE_ON = frozenset({"span_only", "span_and_event", "true"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Settings:
    capture_content: bool = False
    inference_spans: bool = True
    strict: bool = False
    registry_size: int = 10_000
    metrics_max_tool_names: int = 64
    buffered_min_chunks: int = 8
    buffered_window_ms: float = 10.0
    buffered_min_ttfc_ms: float = 250.0
    claude_code_tools: bool = False


# keyword -> its environment variable (capture_content has the conventions' own, above)
ENV_VARIABLES = {
    "inference_spans": "OTEL_TOOLCALLS_INFERENCE_SPANS",
    "strict": "OTEL_TOOLCALLS_STRICT",
    "registry_size": "OTEL_TOOLCALLS_REGISTRY_SIZE",
    "metrics_max_tool_names": "OTEL_TOOLCALLS_METRICS_MAX_TOOL_NAMES",
    "buffered_min_chunks": "OTEL_TOOLCALLS_BUFFERED_MIN_CHUNKS",
    "buffered_window_ms": "OTEL_TOOLCALLS_BUFFERED_WINDOW_MS",
    "buffered_min_ttfc_ms": "OTEL_TOOLCALLS_BUFFERED_MIN_TTFC_MS",
    "claude_code_tools": "OTEL_TOOLCALLS_CLAUDE_CODE_TOOLS",
}


def _parse_bool(name: str, raw: str, default: bool) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    _log.warning("ignoring %s=%r: expected true or false", name, raw)
    return default


def _parse_number(name: str, raw: str, default: Any) -> Any:
    try:
        value = type(default)(raw.strip())
    except ValueError:
        _log.warning("ignoring %s=%r: expected a number", name, raw)
        return default
    if value < 0:
        _log.warning("ignoring %s=%r: expected a non-negative number", name, raw)
        return default
    return value


def capture_content_from_env() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CAPTURE_ON


def strict_from_env() -> bool:
    raw = os.environ.get(ENV_VARIABLES["strict"])
    return Settings.strict if raw is None else _parse_bool(ENV_VARIABLES["strict"], raw, Settings.strict)


def resolve(**keywords: Any) -> Settings:
    """Settings from ``instrument()`` keywords, then the environment, then the defaults."""
    defaults = Settings()
    values: dict[str, Any] = {}
    for field, env_name in ENV_VARIABLES.items():
        default = getattr(defaults, field)
        if keywords.get(field) is not None:
            values[field] = keywords[field]
            continue
        raw = os.environ.get(env_name)
        if raw is None:
            continue
        if isinstance(default, bool):
            values[field] = _parse_bool(env_name, raw, default)
        else:
            values[field] = _parse_number(env_name, raw, default)
    capture = keywords.get("capture_content")
    values["capture_content"] = capture_content_from_env() if capture is None else bool(capture)
    return Settings(**values)
