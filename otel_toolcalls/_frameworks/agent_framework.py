"""Microsoft Agent Framework (``agent-framework-core``): each tool call its function-invocation
loop runs.

Choke point: ``FunctionTool.invoke(..., tool_call_id=...)``, which the loop's
``_auto_invoke_function`` calls with the model's call id (with or without function middleware).
When the framework's observability is on, ``invoke`` opens its own ``execute_tool {name}`` span
with ``get_function_span(attributes)``, the call id in those attributes, around the tool body:
that span gets the outcome and the link. When it is off, the package's span wraps ``invoke``.

The stream is not touched: the OpenAI clients (``agent-framework-openai``) stream through the
openai SDK, traced by the openai adapter, once; the framework's own ``chat`` span, when on, is
that request's inference span (an adopted span, section 6 of the telemetry contract).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Span

from otel_toolcalls._core import names as n
from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, run_async
from otel_toolcalls._wiring.patches import Patches, Requires

from .own_spans import annotate_or_refuse

_MODULE = "agent_framework._tools"
# The tool's invocation (the call id), then the span the framework opens inside it: both or neither.
REQUIRES = Requires(
    sdk="agent-framework-core", targets=((_MODULE, "FunctionTool.invoke"), (_MODULE, "get_function_span"))
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


def _invoke(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    call_id = kwargs.get("tool_call_id")
    if not call_id or not is_instrumentation_enabled() or _framework_traces():
        return wrapped(*args, **kwargs)
    # A strict refusal raises from ``invoke`` before the tool runs: the loop makes it the call's
    # error result for the model, as for any tool that raised, and the run goes on.
    name = getattr(instance, "name", None)
    execution = Execution(call_id, name if isinstance(name, str) else None, telemetry)
    return run_async(execution, wrapped, args, kwargs)


@contextmanager
def _inside(telemetry: Telemetry, opened: Any, call_id: str, name: Any) -> Iterator[Span]:
    """The framework's span annotated, or, when its tracer records nothing, the package's made
    inside it. A strict refusal raises inside the framework's span, before the tool body: the
    span ends ERROR, ``invoke`` raises, the loop answers the model with an error result."""
    with opened as span:
        if span.is_recording():
            refused = annotate_or_refuse(telemetry, span, call_id)
            if refused is not None:
                raise refused
            yield span
            return
        with Execution(call_id, name if isinstance(name, str) else None, telemetry):
            yield span


def _function_span(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    opened = wrapped(*args, **kwargs)
    attributes = kwargs.get("attributes", args[0] if args else None)
    if not isinstance(attributes, dict) or not is_instrumentation_enabled():
        return opened
    call_id = attributes.get(n.GEN_AI_TOOL_CALL_ID)
    if not isinstance(call_id, str) or not call_id or call_id == _NO_ID:
        return opened  # not a model's call: the framework's span is left as is
    return _inside(telemetry, opened, call_id, attributes.get(n.GEN_AI_TOOL_NAME))


def instrument(telemetry: Telemetry) -> bool:
    invoke = _patches.wrap(_MODULE, "FunctionTool.invoke", functools.partial(_invoke, telemetry))
    span = functools.partial(_function_span, telemetry)
    if invoke and not _patches.wrap(_MODULE, "get_function_span", span):
        _patches.unwrap_all()
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
