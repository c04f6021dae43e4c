"""Execution spans linked to their streamed call only when that call completed.

The seed rule: a call whose stream ended during its argument fragments is not a call. Code that
executes tools wraps the execution in ``execute_tool``; the span it makes carries a link to the
tool-call span when (and only when) the call completed, and strict mode refuses to run an aborted one.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from otel_toolcalls._core import names as n
from otel_toolcalls._core.calls import error_type_of
from otel_toolcalls._core.errors import report
from otel_toolcalls._core.registry import CallRecord, call_key
from otel_toolcalls._core.telemetry import Telemetry, in_force

from . import carried as _carried
from . import spans as _spans

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_CALL_ID_ARG = "tool_call_id"
_REFUSED_ERROR_TYPE = "otel_toolcalls.IncompleteToolCallError"


class IncompleteToolCallError(RuntimeError):
    """Raised, in strict mode, instead of running a tool whose streamed call was aborted."""

    def __init__(self, call_id: str, name: str | None, reason: str | None) -> None:
        self.call_id = call_id
        self.tool_name = name
        self.reason = reason
        super().__init__(
            f"refusing to execute tool call {call_id!r} ({name or 'unknown tool'}): "
            f"its stream ended before the call completed ({reason or 'aborted'})"
        )


IncompleteToolCallError.__module__ = "otel_toolcalls"


def tool_call_outcome(call_id: str) -> str | None:
    """``"completed"``, ``"aborted"``, or None when the id was never seen (here, or by the process
    that sent the current request, through the ``toolcalls`` propagator) or has left the registry."""
    record = _lookup(in_force(), call_id)
    return record.outcome if record is not None else None


def _lookup(telemetry: Telemetry, call_id: str | None) -> CallRecord | None:
    # What this process saw wins over anything carried from another.
    if not call_id:
        return None
    record = telemetry.registry.get(call_id)
    return record if record is not None else _carried.carried_record(call_id)


def _strict(telemetry: Telemetry, strict: bool | None) -> bool:
    return telemetry.settings.strict if strict is None else strict


def _link_to(record: CallRecord | None) -> Link | None:
    if record is None or record.outcome != n.COMPLETED or record.span_context is None:
        return None
    if not record.span_context.is_valid:
        return None
    return Link(record.span_context, {n.GEN_AI_ATTRIBUTION_LINK_TYPE: n.LINK_TYPE_CAUSED_BY_GENERATION})


def _refusal(
    span: Span, record: CallRecord | None, call_id: str | None, name: str | None, strict: bool
) -> IncompleteToolCallError | None:
    """In strict mode, for an aborted call: the span marked refused, and the error to raise before
    the tool's body runs (the caller ends what it must first)."""
    if not strict or record is None or record.outcome != n.ABORTED or not call_id:
        return None
    try:
        span.set_attribute(n.ERROR_TYPE, _REFUSED_ERROR_TYPE)
        span.set_status(Status(StatusCode.ERROR, "refused: the streamed tool call was aborted"))
    except Exception as exc:
        report("_linking.execute.mark_refused", exc)
    return IncompleteToolCallError(call_id, name, record.reason)


def annotate_execution(
    span: Span,
    call_id: str | None,
    *,
    strict: bool | None = None,
    telemetry: Telemetry | None = None,
    unknown: bool = True,
) -> None:
    """For a framework's own execution span: add ``toolcall.outcome``, the call id
    where the span has none, and, for a completed call, the link; in strict mode raise
    ``IncompleteToolCallError`` for an aborted call. The span is never ended here.
    ``unknown=False``: a call never seen adds nothing to the span."""
    telemetry = telemetry if telemetry is not None else in_force()
    record = _lookup(telemetry, call_id)
    _spans.record(span, call_key(call_id) if call_id else None)
    if record is None and not unknown:
        return
    try:
        if call_id and not _spans.carries_call_id(span):
            # A framework's span may not say which call it runs (mcp 2.x's tools/call span).
            span.set_attribute(n.GEN_AI_TOOL_CALL_ID, call_key(call_id))
        span.set_attribute(n.TOOLCALL_OUTCOME, record.outcome if record else n.UNKNOWN)
        link = _link_to(record)
        if link is not None:
            span.add_link(link.context, link.attributes)
        if record is not None and record.reason:
            span.set_attribute(n.TOOLCALL_ABORT_REASON, record.reason)
    except Exception as exc:
        report("_linking.execute.annotate_execution", exc)
    refusal = _refusal(span, record, call_id, record.name if record else None, _strict(telemetry, strict))
    if refusal is not None:
        raise refusal


class execute_tool:
    """Wraps one tool execution in an ``execute_tool {name}`` span.

    As a context manager (sync or async), ``call_id`` is the streamed call's id. As a decorator,
    the id is read at each call from the keyword argument named ``call_id_arg`` (default
    ``tool_call_id``), which is passed on to the function unchanged.
    """

    def __init__(
        self,
        call_id: str | None = None,
        *,
        name: str | None = None,
        strict: bool | None = None,
        tool_type: str | None = None,
        call_id_arg: str = DEFAULT_CALL_ID_ARG,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.call_id = call_id
        self.name = name
        self.strict = strict
        self.tool_type = tool_type
        self.call_id_arg = call_id_arg
        self._span: Span | None = None
        self._token: Any = None
        self._start = 0.0
        self._given = telemetry  # the instrumentor's, from a framework adapter; else the active one
        self._telemetry: Telemetry | None = None
        self._outcome = n.UNKNOWN
        self._failed: str | None = None

    # -- context manager -------------------------------------------------------------------------

    def __enter__(self) -> Span:
        telemetry = self._telemetry = self._given if self._given is not None else in_force()
        # A tool service with no id of its own runs the call its request carries.
        if not self.call_id and (carried := _carried.carried()) is not None:
            self.call_id = carried.call_id
        record = _lookup(telemetry, self.call_id)
        self._outcome = record.outcome if record is not None else n.UNKNOWN
        name = (self.name or (record.name if record else None) or "unknown")[: n.MAX_NAME_LENGTH]
        self.name = name
        tool_type = self.tool_type or (record.tool_type if record else None) or n.TOOL_TYPE_FUNCTION
        attributes: dict[str, Any] = {
            n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL,
            n.GEN_AI_TOOL_NAME: name,
            n.GEN_AI_TOOL_TYPE: tool_type,
            n.TOOLCALL_OUTCOME: self._outcome,
        }
        if self.call_id:
            attributes[n.GEN_AI_TOOL_CALL_ID] = call_key(self.call_id)
        if record is not None and record.reason:
            attributes[n.TOOLCALL_ABORT_REASON] = record.reason
        link = _link_to(record)
        self._start = time.perf_counter()
        try:
            span = self._span = telemetry.tracer.start_span(
                n.EXECUTE_TOOL_SPAN_PREFIX + name,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                links=[link] if link is not None else None,
            )
        except Exception as exc:
            # A span processor that raises in on_start (the SDK does not catch it) must not keep
            # the tool from running.
            report("_linking.execute.start_span", exc)
            span = self._span = trace.INVALID_SPAN
        refusal = _refusal(span, record, self.call_id, name, _strict(telemetry, self.strict))
        if refusal is not None:
            self._finish(_REFUSED_ERROR_TYPE)
            raise refusal
        _spans.record(span, call_key(self.call_id) if self.call_id else None)
        self._token = otel_context.attach(trace.set_span_in_context(span))
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            otel_context.detach(self._token)
            self._token = None
        error_type = error_type_of(exc) if exc is not None else self._failed
        if error_type is not None and self._span is not None:
            try:
                self._record_failure(self._span, exc, error_type)
            except Exception as failure:
                report("_linking.execute.record_failure", failure)
        self._finish(error_type)

    def failed(self, error_type: str) -> None:
        """The execution failed though nothing was raised here: a framework that answers the model
        with an error result (its ``error_type``) and keeps no exception. ``__exit__`` records it."""
        self._failed = error_type

    def _record_failure(self, span: Span, exc: BaseException | None, error_type: str) -> None:
        # The message and stack trace are content: a tool's exception quotes its arguments, a URL
        # with its key. The type alone, unless content capture is on.
        span.set_attribute(n.ERROR_TYPE, error_type)
        if exc is not None and self._telemetry is not None and self._telemetry.settings.capture_content:
            span.set_status(Status(StatusCode.ERROR, f"{error_type}: {exc}"[:200]))
            span.record_exception(exc)
        else:
            span.set_status(Status(StatusCode.ERROR, error_type))

    async def __aenter__(self) -> Span:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def _finish(self, error_type: str | None) -> None:
        span, self._span = self._span, None
        if span is None or self._telemetry is None:
            return
        # The metric first and on its own: a span processor raising in on_end must not cost it.
        try:
            self._telemetry.metrics.tool_executed(
                self.name or "unknown", self._outcome, error_type, time.perf_counter() - self._start
            )
        except Exception as exc:
            report("_linking.execute.record_duration", exc)
        try:
            span.end()
        except Exception as exc:  # a span processor raising in on_end: the SDK does not catch it
            report("_linking.execute.end_span", exc)

    # -- decorator -------------------------------------------------------------------------------

    def _for_call(self, function: Callable[..., Any], kwargs: dict[str, Any]) -> execute_tool:
        return execute_tool(
            kwargs.get(self.call_id_arg, self.call_id),
            name=self.name or function.__name__,
            strict=self.strict,
            tool_type=self.tool_type,
            telemetry=self._given,
        )

    def __call__(self, function: F) -> F:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                async with self._for_call(function, kwargs):
                    return await function(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._for_call(function, kwargs):
                return function(*args, **kwargs)

        return run  # type: ignore[return-value]
