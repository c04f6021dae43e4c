"""The package's own failures: never raised into the host, but counted and said once.

Every step the package runs on the host's behalf (translating a chunk, ending a span, reading a
request) fails alone. A failure adds 1 to ``toolcall.internal_errors`` with ``error.site`` (the
step's name: a code location, so a bounded set) and ``error.type``, and is logged at WARNING the
first time a site fails (then at DEBUG): an operator sees that the package is failing without a
log line per chunk.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import process

if TYPE_CHECKING:
    from .metrics import Metrics

_log = logging.getLogger("otel_toolcalls")

# The metrics of the active instrumentor (telemetry.set_active hands them over; None: not instrumented).
_metrics: Metrics | None = None

# Sites already warned about (process.WARNED: a test's reset empties it).
_warned: set[str] = process.WARNED


def _first_time(site: str) -> bool:
    if site in _warned:
        return False
    with process.LOCKS.warned:
        if site in _warned:
            return False
        _warned.add(site)
        return True


def warn_once(site: str, message: str) -> None:
    """Says once per process, at WARNING, that something the user does is not seen (``site``: who
    says it; a second call from it is silent)."""
    if _first_time(site):
        _log.warning("otel_toolcalls: %s", message)


def count_into(metrics: Metrics | None) -> None:
    """Where ``report`` counts from now on (``Metrics.internal_error``), or None."""
    global _metrics
    _metrics = metrics


def report(site: str, exc: BaseException) -> None:
    """Counts and logs one internal error at ``site``; itself never raises."""
    try:
        metrics = _metrics
        if metrics is not None:
            metrics.internal_error(site, type(exc).__qualname__)
    except Exception:  # a meter that raises: the log below still tells
        _log.debug("otel_toolcalls: could not count an internal error", exc_info=True)
    if _first_time(site):
        _log.warning("otel_toolcalls: internal error in %s (further ones at DEBUG)", site, exc_info=exc)
    else:
        _log.debug("otel_toolcalls: internal error in %s", site, exc_info=exc)


def site_of(step: Any) -> str:
    """``module.qualname`` of a step, without the package prefix: a code location."""
    name = getattr(step, "__qualname__", None) or getattr(step, "__name__", None) or type(step).__name__
    module = str(getattr(step, "__module__", "") or "").removeprefix("otel_toolcalls.")
    return f"{module}.{name}" if module else str(name)


def guarded(step: Callable[..., Any], *args: Any) -> None:
    """Runs a step that must never raise into the application."""
    try:
        step(*args)
    except Exception as exc:
        report(site_of(step), exc)
