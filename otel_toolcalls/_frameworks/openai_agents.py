"""OpenAI Agents SDK (``openai-agents``): an ``execute_tool`` span around each function tool the
runner executes.

Choke point: ``_invoke_function_tool_with_metadata`` (the runner's call of ``on_invoke_tool`` with
the ``ToolContext`` that carries ``tool_call_id``). Hosted tools run at the provider, not here.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, run_async
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

_log = logging.getLogger(__name__)

_FUNCTION = "_invoke_function_tool_with_metadata"
# Patched where the runner imported it and in agents.tool (invoke_function_tool, realtime sessions).
_MODULES = ("agents.run_internal.tool_execution", "agents.tool")
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
# Younger than twelve months (0.6.1 was the newest on 2025-12-01), at the release where
# _invoke_function_tool_with_metadata began (0.19). main-frameworks-mid runs 0.20.0 too.
REQUIRES = Requires(
    sdk="openai-agents", targets=tuple((module, _FUNCTION) for module in _MODULES),
    tested=(Tested("openai-agents", "0.19.0", "0.25.0"),),
)
_patches = Patches()


def _invoke(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # Always the package's own span: the SDK's tracing goes to its trace processors, not OpenTelemetry.
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    context = kwargs.get("context")
    tool = kwargs.get("function_tool")
    name = getattr(tool, "name", None) or getattr(context, "tool_name", None)
    execution = Execution(getattr(context, "tool_call_id", None), name, telemetry)
    return run_async(execution, wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_invoke, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
