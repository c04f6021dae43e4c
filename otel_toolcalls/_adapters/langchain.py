"""LangChain and LangGraph: an ``execute_tool`` span around every tool run for a model's call.

Choke point: ``BaseTool.run`` / ``BaseTool.arun``. ``invoke`` / ``ainvoke`` with a ``ToolCall`` dict
(``{"name": ..., "args": ..., "id": "call_1", "type": "tool_call"}``), LangGraph's ``ToolNode`` and
``create_react_agent`` all end there with ``tool_call_id``. A tool run without a call id (a tool used
as a plain runnable) is not a model's tool call: it gets no span.

LangChain traces through callbacks, not OpenTelemetry; if another instrumentation already made an
execution span for the call, that span is annotated instead (see ``_execution``).
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .._execution import run_async, run_sync
from .._telemetry import Telemetry
from ._patches import Patches, Requires

_log = logging.getLogger(__name__)

_MODULE = "langchain_core.tools.base"
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(sdk="langchain-core", targets=((_MODULE, "BaseTool.run"), (_MODULE, "BaseTool.arun")))
_patches = Patches()


def _run(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    call_id = kwargs.get("tool_call_id")
    if not call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    return run_sync(call_id, getattr(instance, "name", None), wrapped, *args, **kwargs)


def _arun(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    call_id = kwargs.get("tool_call_id")
    if not call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    return run_async(call_id, getattr(instance, "name", None), wrapped, *args, **kwargs)


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_MODULE)
    except ImportError:
        return False
    _patches.wrap(_MODULE, "BaseTool.run", _run)
    _patches.wrap(_MODULE, "BaseTool.arun", _arun)
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
