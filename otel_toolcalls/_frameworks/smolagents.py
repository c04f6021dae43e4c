"""smolagents: each tool a ``ToolCallingAgent`` runs for a model's call.

Choke point: ``ToolCallingAgent.execute_tool_call(tool_name, arguments)``, which every call's
execution goes through (one call inline, several in smolagents' thread pool), given no call id.
The ids are in the ``ChatMessage`` handed to ``process_tool_calls`` just before: while that
generator runs, the adapter keeps the message's calls per agent, and each execution takes the call
whose arguments object it was handed (smolagents passes it on unchanged), else the first of that
name not yet taken. smolagents makes no OpenTelemetry spans: the execution span is the package's.

The stream itself is traced by the adapter of the SDK the model class streams through
(``OpenAIServerModel``: openai; ``LiteLLMModel``: litellm; ``InferenceClientModel``: huggingface):
nothing here touches it, so it is traced once.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Generator
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls._linking.runner import Execution, run
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

_log = logging.getLogger(__name__)

_MODULE = "smolagents.agents"
_PROCESS = "ToolCallingAgent.process_tool_calls"
_EXECUTE = "ToolCallingAgent.execute_tool_call"
# 1.24.0 (2025-12-22), the first of the last twelve months; ToolCallingAgent's
# process_tool_calls / execute_tool_call and the streamed step are the same to 1.26.0.
REQUIRES = Requires(
    sdk="smolagents", targets=((_MODULE, _PROCESS), (_MODULE, _EXECUTE)),
    tested=(Tested("smolagents", "1.24.0", "1.26.0"),),
)
_patches = Patches()


class _Call:
    """One call of the model's message, until an execution takes it."""

    __slots__ = ("arguments", "call_id", "name")

    def __init__(self, call_id: str, name: Any, arguments: Any) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments = arguments

    def handed(self, arguments: Any) -> bool:
        # smolagents hands ``arguments or {}``: an empty call's object is a new one.
        return self.arguments is arguments or (not self.arguments and not arguments)


class _Issued:
    """The calls each agent is executing, by agent (weakly: an agent's table goes with it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_agent: weakref.WeakKeyDictionary[Any, list[_Call]] = weakref.WeakKeyDictionary()

    def _calls(self, agent: Any) -> list[_Call]:
        try:
            return self._by_agent.get(agent, [])
        except TypeError:  # not weakly referenceable: add() kept nothing for it
            return []

    def add(self, agent: Any, calls: list[_Call]) -> None:
        with self._lock:
            self._by_agent.setdefault(agent, []).extend(calls)

    def drop(self, agent: Any, calls: list[_Call]) -> None:
        with self._lock:
            kept = self._calls(agent)
            if not kept:
                return
            left = [call for call in kept if all(call is not c for c in calls)]
            if left:
                self._by_agent[agent] = left
            else:
                self._by_agent.pop(agent, None)

    def take(self, agent: Any, name: Any, arguments: Any) -> str | None:
        with self._lock:
            calls = self._calls(agent)
            named = [call for call in calls if call.name == name]
            call = next((c for c in named if c.handed(arguments)), named[0] if named else None)
            if call is None:
                return None
            calls.remove(call)
            return call.call_id


_issued = _Issued()


def _calls_of(message: Any) -> list[_Call]:
    calls = []
    for tool_call in getattr(message, "tool_calls", None) or ():
        function = getattr(tool_call, "function", None)
        call_id = getattr(tool_call, "id", None)
        if call_id and isinstance(call_id, str):
            calls.append(
                _Call(call_id, getattr(function, "name", None), getattr(function, "arguments", None))
            )
    return calls


def _tracking(agent: Any, calls: list[_Call], steps: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """``process_tool_calls``' generator, unchanged, with its calls known while it runs."""
    try:
        _issued.add(agent, calls)
    except TypeError:  # an agent that cannot be weakly referenced: its executions get no id
        _log.debug("otel_toolcalls: cannot keep a smolagents agent's calls", exc_info=True)
    try:
        return (yield from steps)
    finally:
        _issued.drop(agent, calls)


def _process_tool_calls(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    steps = wrapped(*args, **kwargs)
    if not is_instrumentation_enabled():
        return steps
    calls = _calls_of(kwargs.get("chat_message", args[0] if args else None))
    if not calls or not isinstance(steps, Generator):
        return steps
    return _tracking(instance, calls, steps)


def _refusal(agent: Any, refused: IncompleteToolCallError) -> Exception:
    """The refusal as smolagents' own error for a call it cannot run (bad arguments): the step
    records it and the model sees it, as for any call smolagents rejects; the run goes on."""
    try:
        from smolagents.utils import AgentToolCallError

        return AgentToolCallError(str(refused), agent.logger)
    except Exception as exc:
        report("_frameworks.smolagents._refusal", exc)
        return refused


def _execute_tool_call(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    name = kwargs.get("tool_name", args[0] if args else None)
    arguments = kwargs.get("arguments", args[1] if len(args) > 1 else None)
    call_id = _issued.take(instance, name, arguments)
    if call_id is None:  # not a model's call (called directly): no span
        return wrapped(*args, **kwargs)
    execution = Execution(call_id, name if isinstance(name, str) else None, telemetry)
    try:
        return run(execution, wrapped, args, kwargs)
    except IncompleteToolCallError as refused:
        raise _refusal(instance, refused) from refused


def instrument(telemetry: Telemetry) -> bool:
    # Both or neither: executions given no ids would be spans of calls never seen.
    if _patches.wrap(_MODULE, _PROCESS, functools.partial(_process_tool_calls, telemetry)):
        _patches.wrap(_MODULE, _EXECUTE, functools.partial(_execute_tool_call, telemetry))
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
