"""Execution spans made by the framework adapters, and the call id handed to code that has none.

A framework that executes tools itself (LangChain, pydantic-ai, openai-agents) knows the call id;
the MCP client API does not carry one. ``tool_call_context`` puts the id where the MCP adapter (or
any code) finds it; the framework adapters set it around every execution they wrap.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span

from . import _spans
from ._linking import IncompleteToolCallError, annotate_execution, execute_tool
from ._registry import call_key
from ._telemetry import Telemetry

_log = logging.getLogger(__name__)

_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("otel_toolcalls_call_id", default=None)


class tool_call_context:
    """``with tool_call_context(call_id): await session.call_tool(...)``: the streamed call being
    executed, for code whose API carries no call id (the MCP client). Sync or async ``with``."""

    def __init__(self, call_id: str | None) -> None:
        self.call_id = call_id
        self._token: contextvars.Token[str | None] | None = None

    def __enter__(self) -> str | None:
        self._token = _CALL_ID.set(self.call_id)
        return self.call_id

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CALL_ID.reset(self._token)
            self._token = None

    async def __aenter__(self) -> str | None:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def current_tool_call_id() -> str | None:
    """The id set by ``tool_call_context`` (or by a framework adapter), if any."""
    return _CALL_ID.get()


def execution_in_progress() -> Span | None:
    """The current span when it is a tool-execution span (ours or a framework's)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    return span if _spans.is_execution(span) else None


class Execution:
    """One execution wrapped by a framework adapter: ``enter()`` before the tool runs (raises only
    ``IncompleteToolCallError``, in strict mode), ``exit(exc)`` after it.

    Never two execution spans for one execution: inside someone else's execution span for this
    call, that span gets the outcome and the link; inside one already annotated (ours, or a
    framework's that an outer adapter handled), nothing more is added.
    """

    __slots__ = ("_call_id", "_name", "_scope", "_telemetry", "_token")

    def __init__(self, call_id: str | None, name: str | None, telemetry: Telemetry | None = None) -> None:
        self._call_id = call_id or None
        self._name = name
        self._telemetry = telemetry
        self._scope: execute_tool | None = None
        self._token: contextvars.Token[str | None] | None = None

    def enter(self) -> None:
        try:
            self._token = _CALL_ID.set(self._call_id)
            span = execution_in_progress()
            if span is not None and self._same_call(span):
                if not _spans.is_annotated(span):
                    annotate_execution(span, self._call_id, telemetry=self._telemetry)
                return
            scope = execute_tool(self._call_id, name=self._name, telemetry=self._telemetry)
            scope.__enter__()
            self._scope = scope
        except IncompleteToolCallError:
            self._reset()
            raise
        except Exception:
            _log.debug("otel_toolcalls: could not start an execution span", exc_info=True)

    def exit(self, exc: BaseException | None) -> None:
        scope, self._scope = self._scope, None
        try:
            if scope is not None:
                scope.__exit__(type(exc) if exc is not None else None, exc, None)
        except Exception:
            _log.debug("otel_toolcalls: could not end an execution span", exc_info=True)
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
                _CALL_ID.reset(self._token)
            except ValueError:  # exited in another context (a callback scheduled elsewhere)
                _log.debug("otel_toolcalls: call-id context exited in another context")
            self._token = None


def run_sync(call_id: str | None, name: str | None, function: Any, *args: Any, **kwargs: Any) -> Any:
    execution = Execution(call_id, name)
    execution.enter()
    try:
        result = function(*args, **kwargs)
    except BaseException as exc:
        execution.exit(exc)
        raise
    execution.exit(None)
    return result


async def run_async(call_id: str | None, name: str | None, function: Any, *args: Any, **kwargs: Any) -> Any:
    execution = Execution(call_id, name)
    execution.enter()
    try:
        result = await function(*args, **kwargs)
    except BaseException as exc:
        execution.exit(exc)
        raise
    execution.exit(None)
    return result


__all__ = ["Execution", "current_tool_call_id", "run_async", "run_sync", "tool_call_context"]
