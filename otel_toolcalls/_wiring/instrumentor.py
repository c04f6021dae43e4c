"""Wiring only: build the telemetry, hand it to every adapter whose SDK is installed, undo it."""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from otel_toolcalls._config import resolve
from otel_toolcalls._core import process
from otel_toolcalls._core import telemetry as _telemetry
from otel_toolcalls._core.errors import guarded, report
from otel_toolcalls._linking import peer_spans

from . import dependencies as _dependencies
from . import imports as _imports
from .adapters import Adapter, adapter_names, load

_log = logging.getLogger(__name__)

# Adapters whose missing targets were reported: once per process, however often instrument() runs.
_reported: set[str] = process.REPORTED


def _report_missing(name: str, adapter: Adapter) -> None:
    """One WARNING per adapter whose SDK lacks a target (a release moved or renamed a private): the
    adapter patches what it can, and what goes through the rest is not traced."""
    if name in _reported:
        return
    requires = adapter.REQUIRES
    missing = requires.missing()
    if not missing:
        return
    with process.LOCKS.reported:
        if name in _reported:
            return
        _reported.add(name)
    _log.warning(
        "otel_toolcalls: %s %s lacks %s: the %s adapter cannot trace what goes through %s "
        "(see `otel-toolcalls doctor`)",
        requires.sdk,
        requires.version() or "(version unknown)",
        ", ".join(missing),
        name,
        "it" if len(missing) == 1 else "them",
    )


class ToolCallsInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """``ToolCallsInstrumentor().instrument(tracer_provider=..., meter_provider=..., **settings)``.

    Settings (each also an environment variable, the keyword wins): ``capture_content``,
    ``inference_spans``, ``strict``, ``registry_size``, ``metrics_max_tool_names``,
    ``buffered_min_chunks``, ``buffered_window_ms``, ``buffered_min_ttfc_ms``, ``claude_code_tools``.

    An SDK the application has already imported is patched at once; one it has not is patched when
    (and if) the application imports a module the adapter patches (``_wiring.imports``): importing every
    installed SDK up front would cost seconds at start-up (litellm even fetches a cost map), for
    SDKs the application may never use.
    """

    def __init__(self) -> None:
        super().__init__()
        # BaseInstrumentor is a singleton: every ToolCallsInstrumentor() is this same object and
        # runs __init__ again, which must not forget what an earlier instrument() patched.
        if "_instrumented" not in self.__dict__:
            # (name, adapter) of each adapter that patched its SDK.
            self._instrumented: list[tuple[str, Adapter]] = []
            # The waits for SDKs not imported yet, cancelled by uninstrument().
            self._waits: list[_imports.Wait] = []
            # Bumped by each instrument() and uninstrument(): a wait of an earlier instrument()
            # already running in another thread finds it changed and does nothing.
            self._generation = 0

    def instrumented_adapters(self) -> dict[str, Adapter]:
        """The adapters that patched their SDK, by name (for ``otel-toolcalls doctor``)."""
        return dict(self._instrumented)

    def instrumentation_dependencies(self) -> Collection[str]:
        # Any one distribution an adapter patches is enough (the `instruments-any` extra, which
        # `opentelemetry-instrument` reads); each adapter skips an SDK that is not installed.
        return _dependencies.instrumentation_dependencies()

    def _instrument(self, **kwargs: Any) -> None:
        settings = resolve(**kwargs)
        telemetry = _telemetry.Telemetry(
            settings,
            tracer_provider=kwargs.get("tracer_provider"),
            meter_provider=kwargs.get("meter_provider"),
        )
        _telemetry.set_active(telemetry)
        guarded(peer_spans.watch, kwargs.get("tracer_provider"))
        self._generation += 1
        for name in adapter_names():
            try:
                adapter = load(name)
                apply = functools.partial(self._on_import, name, adapter, telemetry, self._generation)
                self._waits.append(_imports.when_imported(adapter.REQUIRES.modules, apply))
            except Exception:
                _log.warning("otel_toolcalls: could not instrument %s", name, exc_info=True)

    def _on_import(self, name: str, adapter: Adapter, telemetry: Any, generation: int) -> None:
        if generation == self._generation:
            self._apply(name, adapter, telemetry)

    def _apply(self, name: str, adapter: Adapter, telemetry: Any) -> None:
        if (name, adapter) in self._instrumented:
            return
        try:
            if adapter.instrument(telemetry):
                self._instrumented.append((name, adapter))
        except Exception:
            _log.warning("otel_toolcalls: could not instrument %s", name, exc_info=True)
        try:
            _report_missing(name, adapter)
        except Exception as exc:
            report("_wiring.instrumentor._report_missing", exc)

    def _uninstrument(self, **kwargs: Any) -> None:
        self._generation += 1
        while self._waits:
            self._waits.pop().cancel()
        while self._instrumented:
            name, adapter = self._instrumented.pop()
            try:
                adapter.uninstrument()
            except Exception:
                _log.warning("otel_toolcalls: could not uninstrument %s", name, exc_info=True)
        peer_spans.unwatch()
        _telemetry.set_active(None)
