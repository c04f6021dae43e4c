"""AutoGen (``autogen-agentchat`` on ``autogen-core``): each tool call an ``AssistantAgent`` runs.

Choke point: ``trace_tool_span`` as ``BaseTool.run_json`` / ``BaseStreamTool.run_json_stream`` use
it, with the model's ``tool_call_id``: AutoGen's own ``execute_tool {name}`` span gets the outcome
and the link, never a second span.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

from .own_spans import annotated_or_own

_log = logging.getLogger(__name__)

# autogen-core's tools, as autogen-agentchat's AssistantAgent runs them.
# No release in the last twelve months (0.7.5 is of September 2025): the oldest is 0.6.2, the
# first whose trace_tool_span carries the model's call id (before it, BaseTool.run_json is given
# none: 0.5 and 0.6.0/0.6.1 are not covered). Lanes 0.6.2, 0.7.1 (-mid), 0.7.5.
REQUIRES = Requires(
    sdk="autogen-core", targets=(("autogen_core.tools._base", "trace_tool_span"),),
    tested=(Tested("autogen-core", "0.6.2", "0.7.5"),),
)
_patches = Patches()


def _trace_tool_span(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    call_id = kwargs.get("tool_call_id")
    if not call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    name = kwargs.get("tool_name", args[0] if args else None)
    # A strict refusal raises inside AutoGen's span: AutoGen records it (ERROR) and its workbench
    # makes it an error ToolResult for the model, as for any tool that raised; the run goes on.
    return annotated_or_own(telemetry, wrapped(*args, **kwargs), call_id, name)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_trace_tool_span, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
