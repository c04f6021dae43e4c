"""Microsoft Agent Framework (``agent-framework-core``): each tool call its function-invocation
loop runs.

Choke point: ``FunctionTool.invoke(..., tool_call_id=...)``, which the loop's
``_auto_invoke_function`` calls with the model's call id (with or without function middleware).
When the framework's observability is on, ``invoke`` opens its own ``execute_tool {name}`` span
with ``get_function_span(attributes)``, the call id in those attributes, around the tool body:
that span gets the outcome and the link. When it is off, the package's span opens where the
framework's would: at ``FunctionTool.__call__``, the body's call, after ``invoke`` has parsed and
validated the arguments. A call whose arguments the framework rejects ("Argument parsing
failed") has no execution span in either setting; ``invoke`` hands the call id to that
``__call__`` through a context variable, taken once (a tool wrapping a tool gets one span).

The stream is not touched: the OpenAI clients (``agent-framework-openai``) stream through the
openai SDK, traced by the openai adapter, once; the framework's own ``chat`` span, when on, is
that request's inference span (an adopted span, section 6 of the telemetry contract).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import sys
from contextlib import ExitStack
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core import names as n
from otel_toolcalls._core.errors import report
from otel_toolcalls._core.scoped import Scoped
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

from .own_spans import annotated_or_own

_MODULE = "agent_framework._tools"
# The tool's invocation (the call id), the body's call and the span the framework opens around
# it: all or none. A class always resolves ``__call__`` (its metaclass's): that it is the tool's
# own is checked before wrapping it.
_TARGETS = ("FunctionTool.invoke", "FunctionTool.__call__", "get_function_span")
# 1.0.0 (2026-04-02), its first release; the betas and release candidates before it are not
# covered. FunctionTool.invoke(tool_call_id=...), its get_function_span and its __call__ of the
# body are the same to 1.23.0. Lanes 1.0.0 (in -previous: -floor pins opentelemetry-api and
# openai below what it needs), 1.23.0.
REQUIRES = Requires(
    sdk="agent-framework-core", targets=tuple((_MODULE, target) for target in _TARGETS),
    tested=(Tested("agent-framework-core", "1.0.0", "1.23.0"),),
)
_patches = Patches()
# What the framework writes for an invocation given no call id (a direct ``tool.invoke()``).
_NO_ID = "unknown"


def _framework_traces() -> bool:
    """Whether ``invoke`` is about to open the framework's own span (its observability is on)."""
    observability = sys.modules.get("agent_framework.observability")
    try:
        return bool(observability.OBSERVABILITY_SETTINGS.ENABLED)  # type: ignore[union-attr]
    except Exception as exc:
        report("_frameworks.agent_framework._framework_traces", exc)
        return False


class _Pending:
    """A model's call ``invoke`` is running untraced, until its body's ``__call__`` takes it."""

    __slots__ = ("call_id", "tool")

    def __init__(self, call_id: str, tool: Any) -> None:
        self.call_id: str | None = call_id
        self.tool = tool

    def take(self, tool: Any) -> str | None:
        if tool is not self.tool:
            return None
        call_id, self.call_id = self.call_id, None
        return call_id


_pending: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar(
    "otel_toolcalls_agent_framework_call", default=None
)


def _invoke(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    call_id = kwargs.get("tool_call_id")
    if not call_id or not isinstance(call_id, str) or not is_instrumentation_enabled() or _framework_traces():
        return wrapped(*args, **kwargs)
    return _untraced(_Pending(call_id, instance), wrapped, args, kwargs)


async def _untraced(pending: _Pending, wrapped: Any, args: Any, kwargs: Any) -> Any:
    # Copied into the worker thread a sync tool runs in, as the framework's own span would be.
    with Scoped(_pending, pending):
        return await wrapped(*args, **kwargs)


def _call(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """The body's call, arguments parsed: the package's span, for the call ``invoke`` is running.
    A strict refusal raises here, before the body: ``invoke`` raises it, the loop makes it the
    call's error result for the model, as for any tool that raised, and the run goes on."""
    pending = _pending.get()
    call_id = pending.take(instance) if pending is not None else None
    if call_id is None:
        return wrapped(*args, **kwargs)
    name = getattr(instance, "name", None)
    with ExitStack() as stack:
        stack.enter_context(Execution(call_id, name if isinstance(name, str) else None, telemetry))
        result = wrapped(*args, **kwargs)
        if inspect.isawaitable(result):
            # An async tool's body runs when awaited, by ``invoke``, in the same task, right away.
            return _awaited(stack.pop_all(), result)
        return result


async def _awaited(execution: ExitStack, body: Any) -> Any:
    with execution:
        return await body


def _function_span(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    opened = wrapped(*args, **kwargs)
    attributes = kwargs.get("attributes", args[0] if args else None)
    if not isinstance(attributes, dict) or not is_instrumentation_enabled():
        return opened
    call_id = attributes.get(n.GEN_AI_TOOL_CALL_ID)
    if not isinstance(call_id, str) or not call_id or call_id == _NO_ID:
        return opened  # not a model's call: the framework's span is left as is
    # A strict refusal raises inside the framework's span, before the tool body: the span ends
    # ERROR, invoke raises, the loop answers the model with an error result.
    return annotated_or_own(telemetry, opened, call_id, attributes.get(n.GEN_AI_TOOL_NAME))


def _own_call() -> bool:
    tools = sys.modules.get(_MODULE)
    return "__call__" in vars(getattr(tools, "FunctionTool", object))


def instrument(telemetry: Telemetry) -> bool:
    if not _own_call():
        return False
    wrappers = (_invoke, _call, _function_span)
    for target, wrapper in zip(_TARGETS, wrappers, strict=True):
        if not _patches.wrap(_MODULE, target, functools.partial(wrapper, telemetry)):
            _patches.unwrap_all()
            break
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
