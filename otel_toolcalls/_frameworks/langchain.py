"""LangChain and LangGraph: an ``execute_tool`` span around every tool run for a model's call.

Choke point: ``BaseTool.run`` / ``BaseTool.arun``, where ``invoke`` with a ``ToolCall`` dict
(``{"name": ..., "args": ..., "id": "call_1", "type": "tool_call"}``), ``ToolNode`` and
``create_react_agent`` end with ``tool_call_id``. Beside the official GenAI LangChain
instrumentation, whose ``execute_tool`` span starts inside the run, the run's body scope
(``set_config_context``, entered after ``on_tool_start``) is where that span is annotated.
A callback handler also feeds ``_core.peers``.
"""

from __future__ import annotations

import functools
import importlib.metadata
from contextvars import ContextVar
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core import peers
from otel_toolcalls._core.errors import report
from otel_toolcalls._core.scoped import Scoped
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._frameworks.own_spans import instrumentor_active
from otel_toolcalls._linking.runner import Execution, run, run_async
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

_MODULE = "langchain_core.tools.base"
# What the adapter needs of the SDK and patches (the instrumentor waits for and checks it).
# Where BaseTool.run / arun enter the body's context, after on_tool_start (the official GenAI
# LangChain instrumentation's execution span is current there).
_BODY = (_MODULE, "set_config_context")
# langchain-core: the langgraph floor lane resolves it to 0.3.86. LangGraph's floor is older than
# twelve months (1.0.4 was the newest on 2025-12-01); langgraph and langchain-openai are tested
# beside the adapter. The version lane main-frameworks-mid runs langchain-core 1.0.7 too.
REQUIRES = Requires(
    sdk="langchain-core", targets=((_MODULE, "BaseTool.run"), (_MODULE, "BaseTool.arun"), _BODY),
    tested=(
        Tested("langchain-core", "0.3.86", "1.8.3"),
        Tested("langgraph", "0.3.1", "1.2.24"),
        Tested("langchain-openai", "0.3", "1.8.1"),
    ),
)
_patches = Patches()

# The official GenAI LangChain instrumentation (opentelemetry-instrumentation-genai-langchain): its
# execute_tool span is made by its callback handler at on_tool_start, inside the run, and current
# from there to the run's end.
OFFICIAL_LANGCHAIN = "opentelemetry.instrumentation.genai.langchain"


class _Deferred:
    """A run whose execution is left to the body scope, where the official span is current."""

    __slots__ = ("call_id", "name", "taken", "telemetry")

    def __init__(self, call_id: str, name: str | None, telemetry: Telemetry) -> None:
        self.call_id, self.name, self.telemetry = call_id, name, telemetry
        self.taken = False


_deferred: ContextVar[_Deferred | None] = ContextVar("otel_toolcalls_langchain_deferred", default=None)
_body_hooked = False


def _official_span_comes() -> bool:
    """The official LangChain instrumentation is instrumented here, and the body hook is in place."""
    return _body_hooked and instrumentor_active(
        OFFICIAL_LANGCHAIN, "LangChainInstrumentor", "_frameworks.langchain._official_span_comes"
    )


def _deferred_run(deferred: _Deferred, wrapped: Any, args: Any, kwargs: Any) -> Any:
    with Scoped(_deferred, deferred):
        return wrapped(*args, **kwargs)


async def _deferred_arun(deferred: _Deferred, wrapped: Any, args: Any, kwargs: Any) -> Any:
    with Scoped(_deferred, deferred):
        return await wrapped(*args, **kwargs)


class _BodyScope:
    """``set_config_context(config)`` of a deferred run: the execution (the official span, current
    since on_tool_start, annotated; strict refusal raised before the body) around the body."""

    __slots__ = ("_execution", "_inner")

    def __init__(self, inner: Any, execution: Execution) -> None:
        self._inner, self._execution = inner, execution

    def __enter__(self) -> Any:
        # Entered first: a span of the package's own (no official one current) is in the context
        # the body's copy is made from.
        self._execution.__enter__()
        try:
            return self._inner.__enter__()
        except BaseException as exc:
            self._execution.__exit__(type(exc), exc, None)
            raise

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            return self._inner.__exit__(exc_type, exc, tb)
        finally:
            self._execution.__exit__(exc_type, exc, tb)


def _body(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    deferred = _deferred.get()
    if deferred is None or deferred.taken:
        return wrapped(*args, **kwargs)
    deferred.taken = True  # a tool run inside this body, with no call id, is not this execution
    return _BodyScope(
        wrapped(*args, **kwargs), Execution(deferred.call_id, deferred.name, deferred.telemetry)
    )


def _tool_run(telemetry: Telemetry, runner: Any, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # run and arun alike: the runner (sync, or async for arun) is the only difference. No call id
    # (a tool used as a plain runnable): not a model's tool call, no span. LangChain traces through
    # callbacks, not OpenTelemetry: another instrumentation's execution span is annotated instead.
    call_id = kwargs.get("tool_call_id")
    if not call_id or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    name = getattr(instance, "name", None)
    if _official_span_comes():
        deferred = _deferred_arun if runner is run_async else _deferred_run
        return deferred(_Deferred(call_id, name, telemetry), wrapped, args, kwargs)
    return runner(Execution(call_id, name, telemetry), wrapped, args, kwargs)


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
    (_, runs), (_, aruns), _ = REQUIRES.targets
    _patches.wrap(_MODULE, runs, functools.partial(_tool_run, telemetry, run))
    _patches.wrap(_MODULE, aruns, functools.partial(_tool_run, telemetry, run_async))
    global _body_hooked
    _body_hooked = _patches.wrap(*_BODY, _body)
    try:
        _watch_model_runs()
    except Exception as exc:  # LangChain's hook API changed: OpenInference's span stays unknown
        report("_frameworks.langchain.instrument", exc)
    return bool(_patches)


def uninstrument() -> None:
    global _body_hooked
    _body_hooked = False
    _patches.unwrap_all()
    if _model_runs:
        _model_runs[0].active = False
