"""agno: each tool an agent runs for a model's call, and the streams of a cancelled run.

Choke point: ``FunctionCall.execute`` / ``aexecute``, which every tool execution of an agno run goes
through (``Model.run_function_call`` / ``arun_function_call``), with the call id on the
``FunctionCall``: before agno's authorization, hooks, cache and the tool body. A strict refusal
is delivered the way agno delivers a tool that raised: a failed ``FunctionExecutionResult`` whose
error the model reads (``ToolCallCompletedEvent`` with ``tool_call_error``); the run goes on.

agno checks its run's cancellation between run events and then builds a ``RunCancelledEvent``;
where that cut the model's stream short, the stream's open calls end ``cancelled`` at that event.
The streams of each run are those started by the first step of ``Model.process_response_stream``
/ ``aprocess_response_stream`` (``Births``), kept by run id while open. The stream itself is
traced by the adapter of the SDK the model class streams through (``OpenAIChat``: openai), once.
agno makes no OpenTelemetry spans itself (``agno.tracing`` loads OpenInference's separate
instrumentation).

Beside OpenInference's agno instrumentation (``openinference-instrumentation-agno``), whose TOOL
span wraps the same ``execute`` / ``aexecute``, in either order of the two wrappers: that span is
the execution's, annotated (outcome, call id, link) where it is current, at the call's
``_build_entrypoint_args``, before agno's hooks, cache and the tool body; a strict refusal raises
there and comes back as agno's failed result, as without it.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import AsyncGenerator, Generator, Iterator
from contextvars import ContextVar
from typing import Any, cast

from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.session import CANCELLED, Session
from otel_toolcalls._core.state import Births, StreamState
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._frameworks.own_spans import instrumentor_active
from otel_toolcalls._linking.execute import IncompleteToolCallError, annotate_execution
from otel_toolcalls._linking.runner import Execution, run, run_async
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

_FUNCTION = "agno.tools.function"
_MODEL = "agno.models.base"
# 2.3.5 (2025-12-03), the first of the last twelve months; FunctionCall.execute / aexecute,
# Model.process_response_stream / aprocess_response_stream and RunCancelledEvent (agent and team)
# are where the adapter hooks from 2.3.5 to 3.1.10. Lanes 2.3.5, 3.1.10.
REQUIRES = Requires(
    sdk="agno",
    targets=(
        (_FUNCTION, "FunctionCall.execute"),
        (_FUNCTION, "FunctionCall.aexecute"),
        # A class keeps an inherited ``__init__``: a release is missing these by losing the class.
        ("agno.run.agent", "RunCancelledEvent.__init__"),
        ("agno.run.team", "RunCancelledEvent.__init__"),
        (_MODEL, "Model.process_response_stream"),
        (_MODEL, "Model.aprocess_response_stream"),
        # Where OpenInference's TOOL span, when instrumented, is annotated.
        (_FUNCTION, "FunctionCall._build_entrypoint_args"),
    ),
    tested=(Tested("agno", "2.3.5", "3.1.10"),),
)
_patches = Patches()
# Where the call's arguments are built, inside ``execute`` / ``aexecute`` and so inside
# OpenInference's TOOL span whichever wrapper is outer; before agno's hooks and the body.
_ARGS = (_FUNCTION, "FunctionCall._build_entrypoint_args")
# OpenInference's agno instrumentation (its module is never imported by the package: loaded, it
# was imported by its instrumentor).
OPENINFERENCE_AGNO = "openinference.instrumentation.agno"
_args_hooked = False


def _their_span_comes() -> bool:
    """OpenInference's agno instrumentation is instrumented here, and the arguments hook is in place."""
    return _args_hooked and instrumentor_active(
        OPENINFERENCE_AGNO, "AgnoInstrumentor", "_frameworks.agno._their_span_comes"
    )


class _Deferred:
    """A call whose execution span is OpenInference's, annotated at the call's arguments hook."""

    __slots__ = ("call_id", "function_call", "telemetry")

    def __init__(self, call_id: str, function_call: Any, telemetry: Telemetry) -> None:
        self.call_id, self.function_call, self.telemetry = call_id, function_call, telemetry


_deferred: ContextVar[_Deferred | None] = ContextVar("otel_toolcalls_agno_deferred", default=None)


def _build_args(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    deferred = _deferred.get()
    if deferred is not None and deferred.function_call is instance:
        _deferred.set(None)  # once: a nested call of another tool is not this execution
        # OpenInference's span, current since its wrapper ran: the execution's. A strict
        # refusal raises here (their span records it), before the hooks and the body.
        annotate_execution(trace.get_current_span(), deferred.call_id, telemetry=deferred.telemetry)
    return wrapped(*args, **kwargs)


def _call_id(function_call: Any) -> str | None:
    call_id = getattr(function_call, "call_id", None)
    return call_id if isinstance(call_id, str) and call_id else None


def _execution(function_call: Any, telemetry: Telemetry) -> Execution | None:
    call_id = getattr(function_call, "call_id", None)
    if not call_id or not isinstance(call_id, str):
        return None  # not a model's call (run directly, agno's code mode): no span
    name = getattr(getattr(function_call, "function", None), "name", None)
    return Execution(call_id, name if isinstance(name, str) else None, telemetry)


def _tool_error(result: Any) -> str | None:
    """agno catches a tool's exception and keeps only its message: the type is not known."""
    return "tool_error" if getattr(result, "status", None) == "failure" else None


def _refused(function_call: Any, refused: IncompleteToolCallError) -> Any:
    """The refusal as agno's result of a tool that raised: the model reads the error."""
    try:
        from agno.tools.function import FunctionExecutionResult

        function_call.error = str(refused)
        return FunctionExecutionResult(status="failure", error=str(refused))
    except Exception as exc:
        report("_frameworks.agno._refused", exc)
        raise refused from None


def _deferring(instance: Any, telemetry: Telemetry) -> Any:
    """The token of the call handed to the arguments hook, where OpenInference's span comes."""
    call_id = _call_id(instance)
    if call_id is None or not is_instrumentation_enabled() or not _their_span_comes():
        return None
    return _deferred.set(_Deferred(call_id, instance, telemetry))


def _execute(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    deferring = _deferring(instance, telemetry)
    execution = _execution(instance, telemetry) if is_instrumentation_enabled() and not deferring else None
    try:
        if execution is not None:
            return run(execution, wrapped, args, kwargs, _tool_error)
        return wrapped(*args, **kwargs)
    except IncompleteToolCallError as refused:  # raised before the tool (agno catches the tool's)
        return _refused(instance, refused)
    finally:
        if deferring is not None:
            _deferred.reset(deferring)


async def _aexecute(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    deferring = _deferring(instance, telemetry)
    execution = _execution(instance, telemetry) if is_instrumentation_enabled() and not deferring else None
    try:
        if execution is not None:
            return await run_async(execution, wrapped, args, kwargs, _tool_error)
        return await wrapped(*args, **kwargs)
    except IncompleteToolCallError as refused:
        return _refused(instance, refused)
    finally:
        if deferring is not None:
            _deferred.reset(deferring)


class _Runs:
    """The streams each run's model requests started, a ``Session`` by run id, until they end:
    what its ``RunCancelledEvent`` ends ``cancelled``. Never the SDK's objects' attributes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._born: dict[str, Session] = {}

    def add(self, run_id: str, born: list[weakref.ref[StreamState]]) -> None:
        with self._lock:
            # Runs whose streams all ended leave: the table holds only runs with a stream open.
            for ended in [key for key, session in self._born.items() if not session.live()]:
                del self._born[ended]
            session = self._born.setdefault(run_id, Session())
            for ref in born:
                state = ref()
                if state is not None:
                    session.add(state)

    def cancelled(self, run_id: Any) -> None:
        with self._lock:
            session = self._born.pop(run_id, None) if isinstance(run_id, str) else None
        if session is not None:
            session.end_all(CANCELLED)


_runs = _Runs()


class _FirstStep:
    """The first step of the model's response generator (it sends the request and starts the
    stream, a retry inside it too), the streams it starts told to ``_runs``; then it stops and
    ``_watched`` delegates the rest straight to the generator (a context variable per chunk would
    cost more than the chunk). ``throw`` and ``close`` go to the generator, as ``yield from``'s."""

    __slots__ = ("_run_id", "_steps", "finished", "taken")

    def __init__(self, run_id: str, steps: Any) -> None:
        self._run_id = run_id
        self._steps = steps
        self.taken = self.finished = False

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self.taken:
            raise StopIteration
        self.taken = True
        born: list[weakref.ref[StreamState]] = []
        try:
            with Births(born):
                return next(self._steps)
        except StopIteration:
            self.finished = True
            raise
        finally:
            if born:
                _runs.add(self._run_id, born)

    def throw(self, *exc_info: Any) -> Any:
        return self._steps.throw(*exc_info)

    def close(self) -> None:
        self._steps.close()


def _watched(run_id: str, steps: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
    first = _FirstStep(run_id, steps)
    # Its StopIteration carries the generator's return value when the first step was the last.
    done = yield from cast("Generator[Any, Any, Any]", first)
    if first.finished:
        return done
    return (yield from steps)


async def _awatched(run_id: str, steps: AsyncGenerator[Any, Any]) -> AsyncGenerator[Any, Any]:
    born: list[weakref.ref[StreamState]] = []
    try:
        with Births(born):
            first = await steps.__anext__()
    except StopAsyncIteration:
        return
    finally:
        if born:
            _runs.add(run_id, born)
    yield first
    async for step in steps:
        yield step


def _response_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    steps = wrapped(*args, **kwargs)
    run_id = getattr(kwargs.get("run_response"), "run_id", None)
    if not isinstance(run_id, str) or not is_instrumentation_enabled():
        return steps
    if isinstance(steps, Generator):
        return _watched(run_id, steps)
    if isinstance(steps, AsyncGenerator):
        return _awatched(run_id, steps)
    return steps


def _run_cancelled_event(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """agno's own signal: the run was cancelled; a call still open in its stream never completes."""
    result = wrapped(*args, **kwargs)
    try:
        _runs.cancelled(getattr(instance, "run_id", None))
    except Exception as exc:
        report("_frameworks.agno._run_cancelled_event", exc)
    return result


def instrument(telemetry: Telemetry) -> bool:
    global _args_hooked
    _args_hooked = _patches.wrap(*_ARGS, _build_args)
    _patches.wrap(_FUNCTION, "FunctionCall.execute", functools.partial(_execute, telemetry))
    _patches.wrap(_FUNCTION, "FunctionCall.aexecute", functools.partial(_aexecute, telemetry))
    _patches.wrap("agno.run.agent", "RunCancelledEvent.__init__", _run_cancelled_event)
    _patches.wrap("agno.run.team", "RunCancelledEvent.__init__", _run_cancelled_event)
    _patches.wrap(_MODEL, "Model.process_response_stream", _response_stream)
    _patches.wrap(_MODEL, "Model.aprocess_response_stream", _response_stream)
    return bool(_patches)


def uninstrument() -> None:
    global _args_hooked
    _args_hooked = False
    _patches.unwrap_all()
