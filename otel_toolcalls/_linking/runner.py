"""Execution spans made by the framework adapters: ``Execution`` (one execution as a ``with``
block), and ``run`` / ``run_async``, the one runner of a framework's tool function.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.registry import call_key
from otel_toolcalls._core.telemetry import Telemetry

from . import spans as _spans
from .context import enter_call_id, leave_call_id
from .execute import IncompleteToolCallError, annotate_execution, execute_tool

_log = logging.getLogger(__name__)


def execution_in_progress() -> Span | None:
    """The current span when it is a tool-execution span (ours or a framework's)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    return span if _spans.is_execution(span) else None


# What a framework hands back for a tool that failed without raising (its error result): the
# exception it caught, or, where it kept none, the error type its result says.
ErrorOf = Callable[[Any], "BaseException | str | None"]


class Execution:
    """One execution wrapped by a framework adapter, as a ``with`` block (sync or async code):
    entering raises only ``IncompleteToolCallError`` (strict mode), before the tool runs; leaving
    ends the span with the error the tool raised, or the one ``returned`` read from its result.

    Never two execution spans for one execution: inside a framework's own execution span for
    this call, that span gets the outcome and the link; inside one already annotated (ours, or a
    framework's that an outer adapter handled), nothing more is added.
    """

    __slots__ = ("_call_id", "_error", "_name", "_scope", "_telemetry", "_token", "_unknown")

    def __init__(
        self, call_id: str | None, name: str | None, telemetry: Telemetry, *, unknown: bool = True
    ) -> None:
        """``unknown=False``: a framework's own span for a call never seen streamed gets no outcome."""
        self._call_id = call_id or None
        self._unknown = unknown
        self._name = name
        # The instrumentor's, as the adapter was given it: never whichever is active when a tool runs.
        self._telemetry = telemetry
        self._scope: execute_tool | None = None
        self._token: contextvars.Token[str | None] | None = None
        self._error: BaseException | str | None = None

    def __enter__(self) -> Execution:
        try:
            self._token = enter_call_id(self._call_id)
            span = execution_in_progress()
            if span is not None and self._same_call(span):
                if not _spans.is_annotated(span):
                    annotate_execution(span, self._call_id, telemetry=self._telemetry, unknown=self._unknown)
                return self
            scope = execute_tool(self._call_id, name=self._name, telemetry=self._telemetry)
            scope.__enter__()
            self._scope = scope
        except IncompleteToolCallError:
            self._reset()
            raise
        except Exception as exc:
            report("_linking.runner.Execution.__enter__", exc)
        return self

    def returned(self, result: Any, error_of: ErrorOf | None) -> Any:
        """``result``, passed through; ``error_of(result)`` (a framework that turns a tool's
        exception into a result) is the execution's error when the block ends without raising."""
        if error_of is not None:
            try:
                self._error = error_of(result)
            except Exception as exc:
                report("_linking.runner.Execution.returned", exc)
        return result

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        error = exc if exc is not None else self._error
        scope, self._scope = self._scope, None
        try:
            if scope is not None:
                if isinstance(error, str):
                    scope.failed(error)  # an error result with no exception behind it
                    error = None
                scope.__exit__(type(error) if error is not None else None, error, None)
        except Exception as failure:
            report("_linking.runner.Execution.__exit__", failure)
        self._reset()

    def _same_call(self, span: Span) -> bool:
        other = _spans.call_id_of(span)
        if other is None or self._call_id is None:
            return True
        # A framework's span may carry the id whole, ours carries it cut.
        return isinstance(other, str) and call_key(other) == call_key(self._call_id)

    def _reset(self) -> None:
        if self._token is not None:
            try:
                leave_call_id(self._token)
            except ValueError:  # exited in another context (a callback scheduled elsewhere)
                _log.debug("otel_toolcalls: call-id context exited in another context")
            self._token = None


# The one runner of a framework's tool function: in an ``Execution`` block, its result read by
# ``error_of`` where the framework returns a tool's error instead of raising it. The async form
# differs only by its ``await``: the block must be entered in the task that awaits.


def run(execution: Execution, function: Any, args: Any, kwargs: Any, error_of: ErrorOf | None = None) -> Any:
    with execution:
        return execution.returned(function(*args, **kwargs), error_of)


async def run_async(
    execution: Execution, function: Any, args: Any, kwargs: Any, error_of: ErrorOf | None = None
) -> Any:
    with execution:
        return execution.returned(await function(*args, **kwargs), error_of)


__all__ = ["ErrorOf", "Execution", "execution_in_progress", "run", "run_async"]
