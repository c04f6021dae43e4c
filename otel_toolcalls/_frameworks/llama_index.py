"""LlamaIndex agents (``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``, ``AgentWorkflow``): an
``execute_tool`` span around each tool call the agent workflow runs.

Choke point: the ``call_tool`` step, whose ``ToolCall`` event carries ``tool_id`` (the model's call
id, for function-calling LLMs). LlamaIndex's own dispatcher is not OpenTelemetry: no span to annotate.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.context import Execution, run_async
from otel_toolcalls._wiring.patches import Patches, Requires

_log = logging.getLogger(__name__)

# The call_tool step of the single-agent base class and of the multi-agent workflow.
REQUIRES = Requires(
    sdk="llama-index-core",
    targets=(
        ("llama_index.core.agent.workflow.base_agent", "BaseWorkflowAgent.call_tool"),
        ("llama_index.core.agent.workflow.multi_agent_workflow", "AgentWorkflow.call_tool"),
    ),
)
_patches = Patches()


def _tool_error(result: Any) -> BaseException | str | None:
    """The exception the step caught from the tool body and kept in its ``is_error`` output
    (``ToolCallResult.tool_output``), the execution's error; where the output keeps none (0.13),
    only that it failed."""
    output = getattr(result, "tool_output", None)
    if not getattr(output, "is_error", False):
        return None
    exception = getattr(output, "exception", None)
    return exception if isinstance(exception, BaseException) else "tool_error"


def _call_tool(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # call_tool(self, ctx, ev): the bound method gets (ctx, ev).
    # A strict refusal raises before the step runs: out of the workflow, to ``await handler``.
    # ReActAgent makes its ids up (the model writes text): its executions are ``unknown``.
    event = kwargs.get("ev", args[1] if len(args) > 1 else None)
    if event is None or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    execution = Execution(getattr(event, "tool_id", None), getattr(event, "tool_name", None), telemetry)
    return run_async(execution, wrapped, args, kwargs, _tool_error)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_call_tool, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
