"""MCP client: an ``execute_tool`` span around ``ClientSession.call_tool``.

No call id crosses this API. The id comes from ``otel_toolcalls.tool_call_context(call_id)``, set
by the caller around the call, or by the framework adapters around every tool they execute (a
LangChain, pydantic-ai or openai-agents tool that calls an MCP server). Without an id, the span
says ``toolcall.outcome = unknown`` and carries no link.

Inside an execution span already open for this execution (a framework's, or the package's for the
framework tool that calls MCP), the MCP call is part of that execution: no second span.
The SDK's own ``MCP send tools/call`` CLIENT span (mcp 2.x) is the RPC, not the execution: it becomes
a child of the execution span.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .._execution import Execution, current_tool_call_id, execution_in_progress, run_async
from .._telemetry import Telemetry
from ._patches import Patches, Requires

_log = logging.getLogger(__name__)

# What the adapter needs of the SDK and patches (the instrumentor waits for and checks it).
REQUIRES = Requires(sdk="mcp", targets=(("mcp.client.session", "ClientSession.call_tool"),))
_patches = Patches()


def _call_tool(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled() or execution_in_progress() is not None:
        return wrapped(*args, **kwargs)
    name = kwargs.get("name", args[0] if args else None)
    execution = Execution(current_tool_call_id(), name if isinstance(name, str) else None, telemetry)
    return run_async(execution, wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_call_tool, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
