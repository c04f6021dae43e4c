"""LangChain and LangGraph: an ``execute_tool`` span around every tool run for a model's call.

Choke point: ``BaseTool.run`` / ``BaseTool.arun``, where ``invoke`` with a ``ToolCall`` dict
(``{"name": ..., "args": ..., "id": "call_1", "type": "tool_call"}``), ``ToolNode`` and
``create_react_agent`` end with ``tool_call_id``. A callback handler also feeds ``_core.peers``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
from contextvars import ContextVar
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core import peers
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.context import Execution, run, run_async
from otel_toolcalls._wiring.patches import Patches, Requires

_log = logging.getLogger(__name__)

_MODULE = "langchain_core.tools.base"
# What the adapter needs of the SDK and patches (the instrumentor waits for and checks it).
REQUIRES = Requires(sdk="langchain-core", targets=((_MODULE, "BaseTool.run"), (_MODULE, "BaseTool.arun")))
_patches = Patches()


def _tool_run(telemetry: Telemetry, runner: Any, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # run and arun alike: the runner (sync, or async for arun) is the only difference. No call id
    # (a tool used as a plain runnable): not a model's tool call, no span. LangChain traces through
    # callbacks, not OpenTelemetry: another instrumentation's execution span is annotated instead.
    call_id = kwargs.get("tool_call_id")
    if not call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    return runner(Execution(call_id, getattr(instance, "name", None), telemetry), wrapped, args, kwargs)


# The handler LangChain's configure hook adds to every callback manager, once made (LangChain has
# no way to remove a hook: uninstrumented, it does nothing).
_model_runs: list[Any] = []


def _make_model_runs() -> Any:
    from langchain_core.callbacks import BaseCallbackHandler

    class ModelRuns(BaseCallbackHandler):  # type: ignore[misc]
        """Tells ``_core.peers`` which model run is in progress, in the caller's context, so that
        OpenInference's LLM span (never current) is the request's inference span (TELEMETRY.md
        section 6)."""

        run_inline = True  # an async manager calls it in the task that makes the request
        active = True

        def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any) -> None:
            if self.active:
                peers.langchain_run_started(run_id)

        def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: Any, **kwargs: Any) -> None:
            if self.active:
                peers.langchain_run_started(run_id)

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            peers.langchain_run_ended()

        def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
            peers.langchain_run_ended()

    return ModelRuns()


def _watch_model_runs() -> None:
    """The handler, registered once, where OpenInference's LangChain instrumentation is installed
    (its distribution's metadata: nothing of it is imported)."""
    if _model_runs:
        _model_runs[0].active = True
        return
    try:
        importlib.metadata.distribution("openinference-instrumentation-langchain")
    except importlib.metadata.PackageNotFoundError:
        return
    from langchain_core.tracers.context import register_configure_hook

    _model_runs.append(_make_model_runs())
    register_configure_hook(ContextVar("otel_toolcalls_model_runs", default=_model_runs[0]), True)


def instrument(telemetry: Telemetry) -> bool:
    (_, runs), (_, aruns) = REQUIRES.targets
    _patches.wrap(_MODULE, runs, functools.partial(_tool_run, telemetry, run))
    _patches.wrap(_MODULE, aruns, functools.partial(_tool_run, telemetry, run_async))
    try:
        _watch_model_runs()
    except Exception as exc:  # LangChain's hook API changed: OpenInference's span stays unknown
        _log.debug("otel_toolcalls: LangChain model runs not watched: %r", exc)
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
    if _model_runs:
        _model_runs[0].active = False
