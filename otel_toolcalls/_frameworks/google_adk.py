"""Google ADK (``google-adk``): each function call the runner executes for the model.

Choke point: ``_call_tool_async``, the call of ``tool.run_async`` once the before-tool callbacks let
it run. ADK's own ``execute_tool {name}`` span around it gets the outcome and the link; when ADK's
tracer records nothing, the package makes the execution span.

``Runner.run_live`` runs its tools through the same choke point, but from 2.10 its module
(``tools._live_caller``) imports ``_call_tool_async`` and ``_call_tool_in_thread_pool`` by name: its
own references are patched there, whichever was imported first. Before 2.10 the live path calls
the module globals of ``functions`` (``_tool_caller`` in 2.9), patched with the rest; its thread
pool came in 1.24. A call the server cancelled (``toolCallCancellation``, revoked by the Gemini
Live adapter) before ADK runs it reads aborted: strict mode refuses its body (ADK itself ignores
the cancellation).
"""

from __future__ import annotations

import functools
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Span

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, run_async
from otel_toolcalls._wiring.patches import Earlier, Patches, Requires, Tested

from .own_spans import annotate_or_refuse

_FLOWS = "google.adk.flows.llm_flows"
_LIVE = f"{_FLOWS}.tools._live_caller"
_CALL, _POOL = "_call_tool_async", "_call_tool_in_thread_pool"
# 1.20.0, the first of the last twelve months (1.x and 2.x). Its tool call moved from
# functions.__call_tool_async (to 2.8) to _tool_caller (2.9) and tools._caller (2.10). Lanes
# 1.20.0, 1.39.1 (the last 1.x), 2.5.0 (-mid: 2.x on 1.x's design), 2.9.2 (beside CrewAI
# 1.15.28), 2.13.0.
REQUIRES = Requires(
    sdk="google-adk",
    # _POOL: run_config.tool_thread_pool_config, the live path's other way to run a tool.
    targets=((f"{_FLOWS}.tools._caller", _CALL), (_LIVE, _CALL), (_LIVE, _POOL)),
    surfaces=((_LIVE, "handle_function_calls_live"),),
    earlier=(
        Earlier("2.10.0", ((f"{_FLOWS}._tool_caller", _CALL), (f"{_FLOWS}._tool_caller", _POOL))),
        Earlier("2.9.0", ((f"{_FLOWS}.functions", f"_{_CALL}"), (f"{_FLOWS}.functions", _POOL))),
        Earlier("1.24.0", ((f"{_FLOWS}.functions", f"_{_CALL}"),)),
    ),
    tested=(Tested("google-adk", "1.20.0", "2.13.0"),),
)
_patches = Patches()


def _adk_span(tool: Any) -> Span | None:
    """ADK's execute_tool span, when ADK says (in the OpenTelemetry context) a tool execution of its
    is being recorded. A strict refusal raises inside that span: ADK hands it to its
    ``on_tool_error_callback``s, marks its span ERROR, and raises it to the runner's caller when no
    callback answers it."""
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    try:
        from google.adk.telemetry import _instrumentation

        scope = getattr(_instrumentation, "_active_tool_execution_tel_ctx", None)
    except ImportError:
        scope = None  # older 1.x: no _instrumentation module
    if scope is None:
        # Before 2.7 ADK keeps no scope: its span, current here, is the one named for the tool.
        named = getattr(span, "name", None) == f"execute_tool {getattr(tool, 'name', None)}"
        return span if named else None
    try:
        return None if scope() is None else span
    except Exception as exc:
        report("_frameworks.google_adk._adk_span", exc)
        return None


async def _annotated(
    telemetry: Telemetry, span: Span, call_id: Any, wrapped: Any, args: Any, kwargs: Any
) -> Any:
    refused = annotate_or_refuse(telemetry, span, call_id)
    if refused is not None:
        raise refused
    return await wrapped(*args, **kwargs)


def _call_tool_async(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # _call_tool_async(tool, args=..., tool_context=...), _call_tool_in_thread_pool(the same, max_workers=...)
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    tool = kwargs.get("tool", args[0] if args else None)
    tool_context = kwargs.get("tool_context", args[2] if len(args) > 2 else None)
    # The model's id, or the ``adk-…`` id ADK assigns where the model gave none.
    call_id = getattr(tool_context, "function_call_id", None)
    span = _adk_span(tool)
    if span is not None:
        return _annotated(telemetry, span, call_id, wrapped, args, kwargs)
    return run_async(Execution(call_id, getattr(tool, "name", None), telemetry), wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_call_tool_async, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
