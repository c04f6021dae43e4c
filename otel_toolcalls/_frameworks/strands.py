"""Strands Agents: each tool call the agent loop runs.

Choke points: ``_start_tool_telemetry`` hands over the ``execute_tool {name}`` span Strands made for
the call (``gen_ai.tool.call.id`` = ``toolUseId``); ``_run_tool`` runs the tool with it current. That
span gets the outcome and the link; without a recording provider the package makes the span.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Span

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls._wiring.patches import Earlier, Patches, Requires, Tested

from .own_spans import annotate_or_refuse

_MODULE = "strands.tools.executors._executor"
# The span Strands opens for a call, then the run of the tool: one without the other is no use.
# Earlier: Tracer.start_tool_call_span (the span) and ToolExecutor._stream (the hooks and the tool).
# 1.19.0, the first of the last twelve months. Its tool span and run moved from
# Tracer.start_tool_call_span / ToolExecutor._stream to the executor's _start_tool_telemetry /
# _run_tool in 1.62. Lanes 1.19.0, 1.50.2 (-mid), 1.61.1, 1.62.0.
REQUIRES = Requires(
    sdk="strands-agents",
    targets=((_MODULE, "_start_tool_telemetry"), (_MODULE, "_run_tool")),
    earlier=(
        Earlier(
            "1.62.0",
            (("strands.telemetry.tracer", "Tracer.start_tool_call_span"), (_MODULE, "ToolExecutor._stream")),
        ),
    ),
    tested=(Tested("strands-agents", "1.19.0", "1.62.0"),),
)
_patches = Patches()

# (toolUseId, span) of the tool span Strands opened last in this task: the terminal opens it, then
# runs _run_tool in the same task (the concurrent executor runs each tool in its own task).
_OPENED: contextvars.ContextVar[tuple[Any, Span] | None] = contextvars.ContextVar(
    "otel_toolcalls_strands_span", default=None
)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# target -> the toolUse in its arguments: _start_tool_telemetry(ctx) / _run_tool(ctx); before 1.62
# Tracer.start_tool_call_span(tool, ...) / ToolExecutor._stream(agent, tool_use, ...).
_TOOL_USE = {
    "_start_tool_telemetry": lambda a, k: _dict(getattr(k.get("ctx", a[0] if a else None), "tool_use", None)),
    "_run_tool": lambda a, k: _dict(getattr(k.get("ctx", a[0] if a else None), "tool_use", None)),
    "Tracer.start_tool_call_span": lambda a, k: _dict(k.get("tool", a[0] if a else None)),
    "ToolExecutor._stream": lambda a, k: _dict(k.get("tool_use", a[1] if len(a) > 1 else None)),
}


def _opens(tool_use: Any, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    opened = wrapped(*args, **kwargs)
    try:
        # _start_tool_telemetry returns (span, ...); start_tool_call_span the span.
        span = opened[0] if isinstance(opened, tuple) else opened
        _OPENED.set((tool_use(args, kwargs).get("toolUseId"), span))
    except Exception as exc:
        report("_frameworks.strands._opens", exc)
    return opened


def _results_list(args: Any, kwargs: Any) -> Any:
    """The list ``ToolExecutor._stream(agent, tool_use, tool_results, ...)`` appends its result to
    (before 1.62): a refusal that replaces the stream appends its own, for the model to be told."""
    results = kwargs.get("tool_results", args[2] if len(args) > 2 else None)
    return results if isinstance(results, list) else None


def error_result(call_id: Any, refused: IncompleteToolCallError) -> dict[str, Any]:
    """A strict refusal as the ``ToolResult`` Strands makes of a tool that raised."""
    return {"toolUseId": str(call_id), "status": "error", "content": [{"text": f"Error: {refused}"}]}


def _refusal(call_id: Any, refused: IncompleteToolCallError, results: list[Any] | None) -> Any:
    """A strict refusal as a Strands error result (``status: error``, the refusal its exception),
    the way Strands reports a tool that raised: raised instead, it would leave Strands' span ending
    OK. The model is told, the loop goes on, ``AfterToolCallEvent`` hooks see the exception (before
    1.62: the result, without the hooks running)."""
    try:
        from strands.types.events import ToolResultEvent
    except ImportError:  # before 1.62
        from strands.types._events import ToolResultEvent

    result = error_result(call_id, refused)
    if results is not None:
        results.append(result)
    try:
        return ToolResultEvent(result, exception=refused)
    except TypeError:  # a release whose result keeps no exception (1.19)
        return ToolResultEvent(result)


async def _annotated(
    telemetry: Telemetry, span: Span, call_id: Any, results: Any, wrapped: Any, args: Any, kwargs: Any
) -> AsyncIterator[Any]:
    refused = annotate_or_refuse(telemetry, span, call_id)
    if refused is not None:
        yield _refusal(call_id, refused, results)
        return
    async for event in wrapped(*args, **kwargs):
        yield event


async def _own_span(
    telemetry: Telemetry, call_id: Any, name: Any, results: Any, wrapped: Any, args: Any, kwargs: Any
) -> AsyncIterator[Any]:
    execution = Execution(call_id, name, telemetry)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(execution)
        except IncompleteToolCallError as refused:
            yield _refusal(call_id, refused, results)
            return
        last = None
        async for last in wrapped(*args, **kwargs):
            yield last
        # Strands turns a tool's exception into an error result: the result's exception is the error.
        execution.returned(last, _result_error)


def _result_error(event: Any) -> BaseException | str | None:
    exception = getattr(event, "exception", None)
    if isinstance(exception, BaseException):
        return exception
    # A release whose result keeps no exception (1.19): the error result says only that it failed.
    result = getattr(event, "tool_result", None)
    return "tool_error" if isinstance(result, dict) and result.get("status") == "error" else None


def _runs(telemetry: Telemetry, runs: str, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    opened = _OPENED.get()
    tool_use = _TOOL_USE[runs](args, kwargs)
    call_id = tool_use.get("toolUseId")
    if opened is None or opened[0] != call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)  # a direct call (agent.tool.x()): no span, its id is made up
    _OPENED.set(None)
    span = opened[1]
    results = _results_list(args, kwargs) if runs == "ToolExecutor._stream" else None
    if span.is_recording() and trace.get_current_span() is span:
        return _annotated(telemetry, span, call_id, results, wrapped, args, kwargs)
    return _own_span(telemetry, call_id, tool_use.get("name"), results, wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    (opens_module, opens), (runs_module, runs) = REQUIRES.installed_targets()
    _patches.wrap(opens_module, opens, functools.partial(_opens, _TOOL_USE[opens]))
    runner = functools.partial(_runs, telemetry, runs)
    if _patches and not _patches.wrap(runs_module, runs, runner):
        _patches.unwrap_all()
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
