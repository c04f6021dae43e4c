"""LlamaIndex agents (``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``, ``AgentWorkflow``): an
``execute_tool`` span around each tool call the agent workflow runs.

Choke point: the ``call_tool`` step, whose ``ToolCall`` event carries ``tool_id`` (the model's call
id, for function-calling LLMs). LlamaIndex's own dispatcher is not OpenTelemetry: no span to annotate.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, run_async
from otel_toolcalls._wiring.patches import Earlier, Patches, Requires, Tested

_log = logging.getLogger(__name__)

# The call_tool step of the single-agent base class and of the multi-agent workflow.
_STEPS = (
    ("llama_index.core.agent.workflow.base_agent", "BaseWorkflowAgent.call_tool"),
    ("llama_index.core.agent.workflow.multi_agent_workflow", "AgentWorkflow.call_tool"),
)
# Before 0.14.22 FunctionTool ran a sync tool in an executor thread without the caller's context
# (its body saw no execution span): there the adapter also wraps what builds that runner.
_SYNC_TO_ASYNC = ("llama_index.core.tools.function_tool", "sync_to_async")
# 0.14.9 is the first of the last twelve months; 0.13.0, where the workflow agents' call_tool
# step took its present form, is covered too. Lanes 0.13.0, 0.13.6 (-mid) and 0.14.25 (the step
# is the same in all).
REQUIRES = Requires(
    sdk="llama-index-core", targets=_STEPS, earlier=(Earlier("0.14.22", (*_STEPS, _SYNC_TO_ASYNC)),),
    tested=(Tested("llama-index-core", "0.13.0", "0.14.25"),),
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


def _sync_to_async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """The async runner of a sync tool, its body run in the context of the task that awaits it
    (as 0.14.22 does): inside the execution span, with the call id current."""
    fn = args[0] if args else kwargs.get("fn")
    if not callable(fn):
        return wrapped(*args, **kwargs)

    async def in_callers_context(*call_args: Any, **call_kwargs: Any) -> Any:
        runner = wrapped(functools.partial(contextvars.copy_context().run, fn))
        return await runner(*call_args, **call_kwargs)

    return in_callers_context


def instrument(telemetry: Telemetry) -> bool:
    step = functools.partial(_call_tool, telemetry)
    for module, attr in REQUIRES.installed_targets():
        _patches.wrap(module, attr, _sync_to_async if (module, attr) == _SYNC_TO_ASYNC else step)
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
