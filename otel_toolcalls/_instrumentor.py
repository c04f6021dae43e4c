"""Wiring only: build the telemetry, hand it to every adapter whose SDK is installed, undo it."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from . import _telemetry
from ._adapters import adapter_names
from ._config import resolve

_log = logging.getLogger(__name__)


class ToolCallsInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """``ToolCallsInstrumentor().instrument(tracer_provider=..., meter_provider=..., **settings)``.

    Settings (each also an environment variable, the keyword wins): ``capture_content``,
    ``inference_spans``, ``strict``, ``registry_size``, ``metrics_max_tool_names``,
    ``buffered_min_chunks``, ``buffered_window_ms``, ``buffered_min_ttfc_ms``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._instrumented: list[Any] = []

    def instrumentation_dependencies(self) -> Collection[str]:
        # Any one provider SDK is enough; each adapter skips an SDK that is not installed. The
        # distribution's `instruments-any` extra tells `opentelemetry-instrument` the same.
        return ()

    def _instrument(self, **kwargs: Any) -> None:
        settings = resolve(**kwargs)
        telemetry = _telemetry.Telemetry(
            settings,
            tracer_provider=kwargs.get("tracer_provider"),
            meter_provider=kwargs.get("meter_provider"),
        )
        _telemetry.set_active(telemetry)
        for name in adapter_names():
            try:
                adapter = importlib.import_module(f"{__package__}._adapters.{name}")
                if adapter.instrument(telemetry):
                    self._instrumented.append(adapter)
            except Exception:
                _log.warning("otel_toolcalls: could not instrument %s", name, exc_info=True)

    def _uninstrument(self, **kwargs: Any) -> None:
        while self._instrumented:
            adapter = self._instrumented.pop()
            try:
                adapter.uninstrument()
            except Exception:
                _log.warning("otel_toolcalls: could not uninstrument %s", adapter.__name__, exc_info=True)
        _telemetry.set_active(None)
