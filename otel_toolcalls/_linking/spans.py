"""Execution spans the package made or annotated, known by the package's own record of them.

Reading ``span.attributes`` works only for the OpenTelemetry SDK's span class: under another
tracer provider the check would miss the package's own span and make a second one. So the package
records each execution span it starts (``execute_tool``) or annotates (a framework's), keyed
weakly on the span object; attributes are read only as the fallback, for a framework's span the
package has not seen yet.
"""

from __future__ import annotations

import weakref
from collections.abc import Container
from typing import Any

from opentelemetry.trace import Span

from otel_toolcalls._core import names as n
from otel_toolcalls._core import process

# span -> the call id it executes (cut, as the span carries it), or None when it has none.
_EXECUTIONS: weakref.WeakKeyDictionary[Any, str | None] = process.EXECUTIONS
_ANNOTATED: weakref.WeakSet[Any] = process.ANNOTATED


def record(span: Span, call_id: str | None) -> None:
    """An execution span the package made, or a framework's it added the outcome (and link) to."""
    try:
        _EXECUTIONS[span] = call_id
        _ANNOTATED.add(span)
    except TypeError:  # a span class without weak references: the fallback reads it
        pass


def _attributes(span: Span) -> Any:
    return getattr(span, "attributes", None) or {}


def _recorded(span: Span, recorded: Container[Span]) -> bool:
    try:
        return span in recorded
    except TypeError:  # a span class that cannot be recorded (unhashable): never was
        return False


def is_execution(span: Span) -> bool:
    if _recorded(span, _EXECUTIONS):
        return True
    return bool(_attributes(span).get(n.GEN_AI_OPERATION_NAME) == n.OPERATION_EXECUTE_TOOL)


def is_annotated(span: Span) -> bool:
    return _recorded(span, _ANNOTATED) or n.TOOLCALL_OUTCOME in _attributes(span)


def call_id_of(span: Span) -> Any:
    """The call id the span executes: as recorded, else as the span carries it (None: unknown)."""
    if _recorded(span, _EXECUTIONS):
        return _EXECUTIONS[span]
    return _attributes(span).get(n.GEN_AI_TOOL_CALL_ID)


def carries_call_id(span: Span) -> bool:
    """Whether the framework's span already says which call it runs; False where that cannot be
    read (another tracer provider's span class): setting the id there again is harmless."""
    return _attributes(span).get(n.GEN_AI_TOOL_CALL_ID) is not None
