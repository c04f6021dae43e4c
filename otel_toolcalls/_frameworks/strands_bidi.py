"""Strands' ``BidiAgent`` (``strands.bidi``, formerly ``strands.experimental.bidi``): each tool call
its loop runs from a live model (Nova Sonic, OpenAI Realtime, Gemini Live).

Choke point: ``_AgentLoop._run_tool(tool_use)``, one task per call, started as soon as the model's
tool use arrives. For Nova Sonic that is the ``toolUse`` event, before the block's ``contentEnd``
(or a barge-in) decides the call's outcome: the execution first waits for the block to settle
(``_linking.settling``), then runs in an ``execute_tool`` span linked to a completed call. In strict
mode a call that ended aborted (cut, interrupted) is refused before Strands runs it: the loop gets
an error result, which it sends to the model as it sends a tool's failure.
"""

from __future__ import annotations

import contextlib
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking import settling
from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls._wiring.patches import Patches, Requires

from .strands import error_result

_MODULE = "strands.bidi.agent.loop"
REQUIRES = Requires(
    sdk="strands-agents",
    targets=((_MODULE, "_AgentLoop._run_tool"),),
    surfaces=((_MODULE, "_AgentLoop"),),
    # strands.bidi's loop is in 1.58 (until 1.62 its tools run through ToolExecutor._stream as
    # well, the strands adapter's older design). Lanes bidi-floor 1.58.0, bidi 1.62.0 (Python 3.12).
    since="1.58.0",
)
_patches = Patches()
_telemetry: list[Telemetry] = []


def _tool_use(args: Any, kwargs: Any) -> dict[str, Any]:
    tool_use = kwargs.get("tool_use", args[0] if args else None)
    return tool_use if isinstance(tool_use, dict) else {}


def _result_error(result: Any) -> str | None:
    return "tool_error" if isinstance(result, dict) and result.get("status") == "error" else None


async def _run_tool(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not _telemetry or not is_instrumentation_enabled():
        return await wrapped(*args, **kwargs)
    tool_use = _tool_use(args, kwargs)
    call_id = tool_use.get("toolUseId")
    try:
        await settling.settled_by(call_id)
    except Exception as exc:
        report(f"{__name__}.settle", exc)
    execution = Execution(call_id if isinstance(call_id, str) else None, tool_use.get("name"), _telemetry[0])
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(execution)
        except IncompleteToolCallError as refused:
            return error_result(call_id, refused)
        return execution.returned(await wrapped(*args, **kwargs), _result_error)


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_MODULE)
    except ImportError:
        return False
    _telemetry[:] = [telemetry]
    return _patches.wrap(_MODULE, "_AgentLoop._run_tool", _run_tool)


def uninstrument() -> None:
    _patches.unwrap_all()
    _telemetry.clear()
