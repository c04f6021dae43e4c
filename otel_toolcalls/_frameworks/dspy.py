"""DSPy (``dspy``): an ``execute_tool`` span around each ``dspy.Tool`` run, linked to the model's
call where DSPy has one.

Choke points:

- ``ToolCalls.ToolCall.execute(functions)``: how a native tool call (function calling through
  LiteLLM) is run, with the call's ``id`` (DSPy keeps it from 3.3.0; before, the call has none and
  its execution is ``unknown``). A strict refusal is raised from it before the tool runs, as the
  ``RuntimeError`` DSPy documents for a failed tool call (``IncompleteToolCallError`` is one).
- ``Tool.__call__`` / ``Tool.acall``: every ``dspy.Tool`` run, ReAct's steps included. ReAct asks
  for its tool by text fields (``next_tool_name`` / ``next_tool_args``), whichever adapter: there
  is no tool-call block, so no call id: the span is the package's, ``unknown``, never linked,
  never refused. Inside ``execute`` (a ``Tool`` handed to it) the call's span is the one span.

DSPy makes no OpenTelemetry spans itself. Its LM streams through LiteLLM or, from 3.4 by default
(``engine="auto"``), through its bundled ``lm15`` client: the litellm or the dspy_lm15 adapter
traces the stream once; nothing here touches it.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, run, run_async
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

_log = logging.getLogger(__name__)

_MODULE = "dspy.adapters.types.tool"
_EXECUTE = "ToolCalls.ToolCall.execute"
# 3.1.0 (2026-01-06) is the first of the last twelve months, but a native tool call keeps its id
# (so an execution can be linked or refused) from 3.3.0 (2026-08-03). Tool.__call__ / acall and
# ToolCalls.ToolCall.execute are the same from 3.1.0. Lanes 3.3.0 (-previous), 3.4.1; the
# dspy_lm15 adapter runs in the 3.4.1 lane.
REQUIRES = Requires(
    sdk="dspy", targets=((_MODULE, _EXECUTE), (_MODULE, "Tool.__call__"), (_MODULE, "Tool.acall")),
    tested=(Tested("dspy", "3.3.0", "3.4.1"),),
)
_patches = Patches()
# The modules whose frames stand between execute() and its caller once it is wrapped.
_BETWEEN = ("wrapt", __name__.split(".")[0])


def _name(obj: Any) -> str | None:
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) else None


def _tool_call(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    return run(Execution(None, _name(instance), telemetry), wrapped, args, kwargs)


async def _tool_acall(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled():
        return await wrapped(*args, **kwargs)
    return await run_async(Execution(None, _name(instance), telemetry), wrapped, args, kwargs)


def _callers_functions(name: Any) -> dict[Any, Any]:
    """What ``execute()`` with no functions finds itself, from its caller's frame (this wrapper
    and wrapt's stand between them now): the caller's local, else global, of the call's name."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _BETWEEN:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return {}
    found = frame.f_locals.get(name) or frame.f_globals.get(name)
    return {name: found} if found is not None else {}


def _execute(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    name = _name(instance)
    if not args and kwargs.get("functions") is None:
        kwargs = {**kwargs, "functions": _callers_functions(name)}
    call_id = getattr(instance, "id", None)
    execution = Execution(call_id if isinstance(call_id, str) else None, name, telemetry)
    return run(execution, wrapped, args, kwargs)


def _defines_call() -> bool:
    # A Tool without its own __call__ would find its metaclass's: wrapping that would break Tool().
    try:
        from dspy.adapters.types.tool import Tool

        return "__call__" in vars(Tool)
    except Exception as exc:
        report("_frameworks.dspy._defines_call", exc)
        return False


def instrument(telemetry: Telemetry) -> bool:
    if _defines_call():
        _patches.wrap(_MODULE, "Tool.__call__", functools.partial(_tool_call, telemetry))
    else:
        _log.debug("otel_toolcalls: dspy.Tool defines no __call__: its direct runs get no span")
    _patches.wrap(_MODULE, "Tool.acall", functools.partial(_tool_acall, telemetry))
    _patches.wrap(_MODULE, _EXECUTE, functools.partial(_execute, telemetry))
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
