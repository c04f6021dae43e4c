"""Haystack (``haystack-ai``): each tool an ``Agent`` (or a ``ToolInvoker``) runs for a model's call.

Choke point: the tool body, ``Tool.invoke`` / ``Tool.invoke_async``, given no call id. Haystack
hands the call on just before it, by release:

- 3.x: ``tool_calling._create_tool_span(tool, tool_call, ...)``, Haystack's own
  ``haystack.agent.step.tool`` span around the body. Where Haystack's tracer is OpenTelemetry's
  (``opentelemetry-haystack``), that span is annotated, never doubled.
- 2.x: ``ToolInvoker._prepare_tool_call_params`` pairs each call with the argument dict the body
  is then called with (``tool.invoke(**final_args)``, in a copy of that context): the body takes
  the call whose arguments are the very objects it was handed. Haystack 2.x makes no span per
  tool: the execution span is the package's.

A strict refusal is raised from the body as Haystack's ``ToolInvocationError``: Haystack reports
it as any failed tool, an error message to the model, or raised with ``raise_on_failure``.
The stream is the chat generator's SDK's (openai, litellm...): nothing here touches it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Span

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls._wiring.patches import Earlier, Patches, Requires, Tested

from .own_spans import annotate_or_refuse

_TOOL = "haystack.tools.tool"
_CALLING = "haystack.components.agents.tool_calling"
_INVOKER = "haystack.components.tools.tool_invoker"
_SPAN = "_create_tool_span"
_BODIES = ((_TOOL, "Tool.invoke"), (_TOOL, "Tool.invoke_async"))
_PREPARE = "ToolInvoker._prepare_tool_call_params"
# 2.21.0 (2025-12-09), the first of the last twelve months. Its tools ran in the ToolInvoker
# component to 2.31 and in components.agents.tool_calling from 3.0 (a span per tool). Lanes
# 2.21.0, 3.4.1.
REQUIRES = Requires(
    sdk="haystack-ai",
    targets=((_CALLING, _SPAN), *_BODIES),
    # Before 3.0 the ToolInvoker component ran the tools, with no span per tool and no async body.
    earlier=(Earlier("3.0.0", ((_INVOKER, _PREPARE), _BODIES[0])),),
    tested=(Tested("haystack-ai", "2.21.0", "3.4.1"),),
)
_patches = Patches()


class _Call:
    """A model's call on its way to the tool body; the first body to claim it runs it."""

    __slots__ = ("_lock", "_taken", "arguments", "call_id", "name", "span")

    def __init__(self, call_id: str, name: Any, span: Span | None = None) -> None:
        self.call_id = call_id
        self.name = name if isinstance(name, str) else None
        self.span = span  # Haystack's own execution span, when its tracer records OpenTelemetry spans
        self.arguments: dict[Any, Any] | None = None  # 2.x: what the body will be handed
        self._lock = threading.Lock()
        self._taken = False

    def handed(self, kwargs: dict[str, Any]) -> bool:
        arguments = self.arguments
        if arguments is None or arguments.keys() != kwargs.keys():
            return False
        # Identity, not equality: never calls a tool argument's __eq__.
        return all(kwargs[key] is value for key, value in arguments.items())

    def claim(self) -> bool:
        # A sync-only tool's invoke_async runs invoke in a thread with this context: one span.
        with self._lock:
            taken, self._taken = self._taken, True
            self.arguments = None  # kept no longer than needed
            return not taken


_current: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "otel_toolcalls_haystack", default=None
)
# 2.x: the calls ToolInvoker prepared for its bodies, in order.
_prepared: contextvars.ContextVar[tuple[_Call, ...]] = contextvars.ContextVar(
    "otel_toolcalls_haystack_prepared", default=()
)


def _call_of(tool_call: Any, span: Span | None = None) -> _Call | None:
    call_id = getattr(tool_call, "id", None)
    if not call_id or not isinstance(call_id, str):
        return None  # not a model's call with an id: no span
    return _Call(call_id, getattr(tool_call, "tool_name", None), span)


def _otel_span(haystack_span: Any) -> Span | None:
    """The OpenTelemetry span behind Haystack's span, when its tracer is OpenTelemetry's."""
    raw_span = getattr(haystack_span, "raw_span", None)
    raw = raw_span() if callable(raw_span) else None
    return raw if isinstance(raw, Span) and raw.is_recording() else None


@contextlib.contextmanager
def _announcing(haystack_cm: Any, tool_call: Any) -> Iterator[Any]:
    """Haystack's tool span, unchanged, with the call it runs known to the body inside it."""
    with haystack_cm as haystack_span:
        call = None
        try:
            call = _call_of(tool_call, _otel_span(haystack_span))
        except Exception as exc:
            report("_frameworks.haystack._announcing", exc)
        token = _current.set(call) if call is not None else None
        try:
            yield haystack_span
        finally:
            if token is not None:
                _current.reset(token)


def _create_tool_span(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    haystack_cm = wrapped(*args, **kwargs)
    if not is_instrumentation_enabled():
        return haystack_cm
    return _announcing(haystack_cm, kwargs.get("tool_call", args[1] if len(args) > 1 else None))


def _prepare_tool_call_params(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    prepared = wrapped(*args, **kwargs)
    if is_instrumentation_enabled():
        try:
            tool_calls, params, _ = prepared
            calls = []
            for tool_call, param in zip(tool_calls, params, strict=False):
                call = _call_of(tool_call)
                if call is not None and isinstance(param.get("final_args"), dict):
                    call.arguments = param["final_args"]
                    calls.append(call)
            _prepared.set(tuple(calls))
        except Exception as exc:
            report("_frameworks.haystack._prepare_tool_call_params", exc)
    return prepared


def _call_here(kwargs: dict[str, Any]) -> _Call | None:
    """The call this body runs: the one announced (3.x), else the prepared one handed these very
    arguments (2.x; two calls handed the same objects are alike: the first not yet taken)."""
    call = _current.get()
    if call is not None:
        return call if call.claim() else None
    for call in _prepared.get():
        if call.handed(kwargs) and call.claim():
            return call
    return None


def _refuse(tool: Any, refused: IncompleteToolCallError) -> NoReturn:
    """Raises the refusal as the error Haystack's tools raise: Haystack reports it as a failed tool."""
    try:
        from haystack.tools.errors import ToolInvocationError

        name = getattr(tool, "name", None) or refused.tool_name or ""
        error = ToolInvocationError(str(refused), tool_name=name)
    except Exception as exc:
        report("_frameworks.haystack._refuse", exc)
        raise refused from None
    raise error from refused


def _execution(
    telemetry: Telemetry, tool: Any, kwargs: dict[str, Any]
) -> contextlib.AbstractContextManager[Any]:
    """What the body runs in: nothing for no model's call; Haystack's span annotated; else the
    package's. Raises the refusal, before the body, in strict mode."""
    call = _call_here(kwargs)
    if call is None:
        return contextlib.nullcontext()
    if call.span is not None:
        refused = annotate_or_refuse(telemetry, call.span, call.call_id)
        if refused is not None:
            _refuse(tool, refused)
    execution = Execution(call.call_id, call.name, telemetry)
    try:
        execution.__enter__()
    except IncompleteToolCallError as refused:
        _refuse(tool, refused)
    return _Entered(execution)


class _Entered(contextlib.AbstractContextManager[Any]):
    """An ``Execution`` already entered (its refusal read before the body): only its exit is left."""

    def __init__(self, execution: Execution) -> None:
        self._execution = execution

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._execution.__exit__(exc_type, exc, tb)


def _invoke(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    with _execution(telemetry, instance, kwargs):
        return wrapped(*args, **kwargs)


async def _invoke_async(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled():
        return await wrapped(*args, **kwargs)
    with _execution(telemetry, instance, kwargs):
        return await wrapped(*args, **kwargs)


def instrument(telemetry: Telemetry) -> bool:
    wrappers: dict[str, Callable[..., Any]] = {
        _SPAN: _create_tool_span,
        _PREPARE: _prepare_tool_call_params,
        "Tool.invoke": functools.partial(_invoke, telemetry),
        "Tool.invoke_async": functools.partial(_invoke_async, telemetry),
    }
    targets = REQUIRES.installed_targets()
    # The bodies only when what hands them the call was wrapped: else their spans would be unlinked.
    handing = [(module, attr) for module, attr in targets if (module, attr) not in _BODIES]
    if all([_patches.wrap(module, attr, wrappers[attr]) for module, attr in handing]):
        for module, attr in targets:
            if (module, attr) in _BODIES:
                _patches.wrap(module, attr, wrappers[attr])
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
