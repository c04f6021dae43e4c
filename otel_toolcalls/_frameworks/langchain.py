"""LangChain and LangGraph: an ``execute_tool`` span around every tool run for a model's call.

Choke point: ``BaseTool.run`` / ``BaseTool.arun``. ``invoke`` / ``ainvoke`` with a ``ToolCall`` dict
(``{"name": ..., "args": ..., "id": "call_1", "type": "tool_call"}``), LangGraph's ``ToolNode`` and
``create_react_agent`` all end there with ``tool_call_id``. A tool run without a call id (a tool used
as a plain runnable) is not a model's tool call: it gets no span.

LangChain traces through callbacks, not OpenTelemetry; if another instrumentation already made an
execution span for the call, that span is annotated instead (``_linking.context.Execution``).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.context import Execution, run, run_async
from otel_toolcalls._wiring.patches import Patches, Requires

_log = logging.getLogger(__name__)

_MODULE = "langchain_core.tools.base"
# What the adapter needs of the SDK and patches (the instrumentor waits for and checks it).
REQUIRES = Requires(sdk="langchain-core", targets=((_MODULE, "BaseTool.run"), (_MODULE, "BaseTool.arun")))
_patches = Patches()


def _tool_run(telemetry: Telemetry, runner: Any, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # run and arun alike: the runner (sync, or async for arun) is the only difference.
    call_id = kwargs.get("tool_call_id")
    if not call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    return runner(Execution(call_id, getattr(instance, "name", None), telemetry), wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    (_, runs), (_, aruns) = REQUIRES.targets
    _patches.wrap(_MODULE, runs, functools.partial(_tool_run, telemetry, run))
    _patches.wrap(_MODULE, aruns, functools.partial(_tool_run, telemetry, run_async))
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
