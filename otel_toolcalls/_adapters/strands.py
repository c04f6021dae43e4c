"""Strands Agents: each tool call the agent loop runs.

Strands makes its own ``execute_tool {name}`` span (``gen_ai.tool.call.id`` = ``toolUseId``) in the
``ExecuteToolStage`` terminal, around ``_run_tool``. Two choke points in
``strands.tools.executors._executor``: ``_start_tool_telemetry`` hands over the span Strands made
for this call; ``_run_tool`` runs the tool with that span current. That span gets
``toolcall.outcome`` and the link, never a second one. When Strands' tracer has no recording
provider, the package makes the execution span itself.

A strict refusal is a Strands error result (``status: error``, the ``IncompleteToolCallError`` as
its exception), the way Strands reports a tool that raised: raised instead, it would leave
Strands' span ending OK. The model is told and the loop goes on; ``AfterToolCallEvent`` hooks see
the exception. Direct calls (``agent.tool.x()``) get no span from Strands and none from the
package: their ids are made up, not a model's call.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Span

from .._execution import Execution
from .._linking import IncompleteToolCallError
from .._telemetry import Telemetry
from ._foreign import annotate_or_refuse
from ._patches import Patches, Requires

_log = logging.getLogger(__name__)

_MODULE = "strands.tools.executors._executor"
# The span Strands opens for a call, then the run of the tool: one without the other is no use.
REQUIRES = Requires(
    sdk="strands-agents",
    targets=((_MODULE, "_start_tool_telemetry"), (_MODULE, "_run_tool")),
)
_patches = Patches()

# (toolUseId, span) of the tool span Strands opened last in this task: the terminal opens it, then
# runs _run_tool in the same task (the concurrent executor runs each tool in its own task).
_OPENED: contextvars.ContextVar[tuple[Any, Span] | None] = contextvars.ContextVar(
    "otel_toolcalls_strands_span", default=None
)


def _tool_use(ctx: Any) -> dict[str, Any]:
    tool_use = getattr(ctx, "tool_use", None)
    return tool_use if isinstance(tool_use, dict) else {}


def _start_tool_telemetry(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    opened = wrapped(*args, **kwargs)
    try:
        ctx = kwargs.get("ctx", args[0] if args else None)
        _OPENED.set((_tool_use(ctx).get("toolUseId"), opened[0]))
    except Exception:
        _log.debug("otel_toolcalls: could not read Strands' tool span", exc_info=True)
    return opened


def _refusal(call_id: Any, refused: IncompleteToolCallError) -> Any:
    from strands.types.events import ToolResultEvent

    result = {"toolUseId": str(call_id), "status": "error", "content": [{"text": f"Error: {refused}"}]}
    return ToolResultEvent(result, exception=refused)


async def _annotated(
    telemetry: Telemetry, span: Span, call_id: Any, wrapped: Any, args: Any, kwargs: Any
) -> AsyncIterator[Any]:
    refused = annotate_or_refuse(telemetry, span, call_id)
    if refused is not None:
        yield _refusal(call_id, refused)
        return
    async for event in wrapped(*args, **kwargs):
        yield event


async def _own_span(
    telemetry: Telemetry, call_id: Any, name: Any, wrapped: Any, args: Any, kwargs: Any
) -> AsyncIterator[Any]:
    execution = Execution(call_id, name, telemetry)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(execution)
        except IncompleteToolCallError as refused:
            yield _refusal(call_id, refused)
            return
        last = None
        async for last in wrapped(*args, **kwargs):
            yield last
        # Strands turns a tool's exception into an error result: the result's exception is the error.
        execution.returned(last, _result_error)


def _result_error(event: Any) -> BaseException | None:
    exception = getattr(event, "exception", None)
    return exception if isinstance(exception, BaseException) else None


def _run_tool(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    opened = _OPENED.get()
    tool_use = _tool_use(kwargs.get("ctx", args[0] if args else None))
    call_id = tool_use.get("toolUseId")
    if opened is None or opened[0] != call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)  # a direct call: Strands opened no span for it
    _OPENED.set(None)
    span = opened[1]
    if span.is_recording() and trace.get_current_span() is span:
        return _annotated(telemetry, span, call_id, wrapped, args, kwargs)
    return _own_span(telemetry, call_id, tool_use.get("name"), wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    (module, opens), (_, runs) = REQUIRES.targets
    _patches.wrap(module, opens, _start_tool_telemetry)
    if _patches and not _patches.wrap(module, runs, functools.partial(_run_tool, telemetry)):
        _patches.unwrap_all()
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
