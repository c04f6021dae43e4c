"""anthropic's beta tool runner: each tool it executes gets its execution span, linked to the call.

Choke point: ``BaseToolRunner._tool_use_span`` (anthropic.lib.tools._beta_runner), the context
manager every tool run of every runner goes through (sync and async, streaming or not, eager or
not, toolset members too). When the SDK traces itself, that context manager makes its own
execution span (``anthropic.custom_tool_use {name}``, ``gen_ai.operation.name = execute_tool``):
the package annotates it (outcome, link) instead of making a second one. Otherwise the package's
``execute_tool`` span wraps the run.

Strict mode refuses an aborted call before the tool runs: ``IncompleteToolCallError`` leaves the
runner's ``with`` block, so it reaches the code driving the runner (``until_done()``, iteration,
``generate_tool_call_response()``); the tool's body never runs.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .. import _names as n
from .. import _spans
from .._linking import IncompleteToolCallError, annotate_execution, execute_tool
from .._registry import call_key
from .._telemetry import Telemetry
from ._patches import Patches, Requires

_log = logging.getLogger(__name__)

_MODULE = "anthropic.lib.tools._beta_runner"
_TARGET = "BaseToolRunner._tool_use_span"
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(sdk="anthropic", targets=((_MODULE, _TARGET),))
_patches = Patches()


def _sdk_execution_span(call_id: str) -> Any:
    """The SDK's execution span for ``call_id`` when it is the current span."""
    span = trace.get_current_span()
    if (
        span.is_recording()
        and _spans.is_execution(span)
        and call_key(str(_spans.call_id_of(span))) == call_key(call_id)
    ):
        return span
    return None


@contextlib.contextmanager
def _traced_run(telemetry: Telemetry, sdk_run: Any, call_id: str, name: str) -> Iterator[Any]:
    own: execute_tool | None = None
    with sdk_run as run:
        try:
            span = _sdk_execution_span(call_id)
            if span is not None:
                annotate_execution(span, call_id, telemetry=telemetry)
            else:
                own = execute_tool(call_id, name=name, telemetry=telemetry)
                own.__enter__()
        except IncompleteToolCallError:
            raise
        except Exception:
            _log.debug("otel_toolcalls: could not trace a tool run", exc_info=True)
            own = None
        try:
            yield run
        except BaseException as exc:
            if own is not None:
                own.__exit__(type(exc), exc, exc.__traceback__)
            raise
        if own is not None:
            _mark_error_result(run)
            own.__exit__(None, None, None)


def _mark_error_result(run: Any) -> None:
    # The runner turns a raising tool into an `is_error` result and raises nothing: the span learns
    # of the failure from the result (the SDK's own span uses the same `tool_error` type).
    result = getattr(run, "result", None)
    if isinstance(result, dict) and result.get("is_error") is True:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute(n.ERROR_TYPE, "tool_error")
            span.set_status(trace.Status(trace.StatusCode.ERROR, "the tool returned an error result"))


def _wrapper(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    sdk_run = wrapped(*args, **kwargs)
    if not is_instrumentation_enabled():
        return sdk_run
    try:
        tool_use = args[2] if len(args) > 2 else kwargs["tool_use"]
        call_id, name = tool_use.id, tool_use.name
    except Exception:
        _log.debug("otel_toolcalls: unexpected tool runner call", exc_info=True)
        return sdk_run
    return _traced_run(telemetry, sdk_run, call_id, name)


def instrument(telemetry: Telemetry) -> bool:
    # The telemetry this instrument() was given, not whichever is active when a tool runs.
    return _patches.wrap(_MODULE, _TARGET, functools.partial(_wrapper, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
