"""A framework's own execution span: a framework that makes one (Strands, ADK, AutoGen).

The adapters find that span through the framework itself (the span it handed its tool runner, or
the one it made for this call), never by reading ``span.attributes`` / ``span.kind``, which only
the OpenTelemetry SDK's span class has: under another tracer provider that check would miss the
framework's span and double it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry.trace import Span

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.execute import IncompleteToolCallError, annotate_execution
from otel_toolcalls._linking.runner import Execution

_log = logging.getLogger(__name__)


def annotate_or_refuse(
    telemetry: Telemetry, span: Span, call_id: str | None
) -> IncompleteToolCallError | None:
    """Adds ``toolcall.outcome`` and (for a completed call) the link to the framework's span; in
    strict mode, for an aborted call, marks it refused (status ERROR) and returns the error for the
    adapter to report through the framework's own tool-error path (raising there would end the
    framework's span OK, or be swallowed). Never ends the span."""
    if not span.is_recording():
        return None
    try:
        annotate_execution(span, call_id, telemetry=telemetry)
    except IncompleteToolCallError as refused:
        return refused
    return None


@contextmanager
def annotated_or_own(
    telemetry: Telemetry, opened: AbstractContextManager[Span], call_id: str | None, name: Any
) -> Iterator[Span]:
    """Enters the framework's span: annotated when it records, else the package's execution span
    made inside it. A strict refusal raises inside the framework's span, before the tool body (on
    entering the package's span, when that one is made)."""
    with opened as span:
        if span.is_recording():
            refused = annotate_or_refuse(telemetry, span, call_id)
            if refused is not None:
                raise refused
            yield span
            return
        with Execution(call_id, name if isinstance(name, str) else None, telemetry):
            yield span


def instrumentor_active(module_name: str, instrumentor: str, site: str) -> bool:
    """Another instrumentation of the framework (its ``module_name.instrumentor``) has instrumented
    this process, so its execution span comes. Its module is never imported here: loaded, its
    instrumentor imported it."""
    module = sys.modules.get(module_name)
    if module is None:
        return False
    try:
        return bool(getattr(module, instrumentor)().is_instrumented_by_opentelemetry)
    except Exception as exc:  # its API changed: the package makes its own span, as without it
        report(site, exc)
        return False
