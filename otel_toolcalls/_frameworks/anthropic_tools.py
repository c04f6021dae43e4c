"""anthropic's beta tool runner: each tool it executes gets its execution span, linked to the call.

Choke point: ``BaseToolRunner._tool_use_span``, the context manager every tool run of every runner
goes through (sync and async, streaming or not, eager or not, toolset members too).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls._wiring.patches import Patches, Requires

# What the adapter needs of the SDK and patches (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="anthropic", targets=(("anthropic.lib.tools._beta_runner", "BaseToolRunner._tool_use_span"),)
)
_patches = Patches()


@contextlib.contextmanager
def _traced_run(telemetry: Telemetry, sdk_run: Any, call_id: str, name: str) -> Iterator[Any]:
    # Inside the SDK's own execution span when it traces itself (``anthropic.custom_tool_use
    # {name}``): that span is annotated, not doubled. Otherwise Execution makes the span. A tool_use
    # block always has its id: one never seen came from a request the package did not stream (the
    # runner without stream=True), where `unknown` on the SDK's span would say only that.
    with sdk_run as run, Execution(call_id, name, telemetry, unknown=False) as execution:
        yield run
        execution.returned(run, _error_result)


def _error_result(run: Any) -> str | None:
    # The runner turns a raising tool into an `is_error` result and raises nothing: the execution
    # learns of the failure from the result (the SDK's own span uses the same `tool_error` type).
    result = getattr(run, "result", None)
    return "tool_error" if isinstance(result, dict) and result.get("is_error") is True else None


def _wrapper(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """A strict refusal leaves the runner's ``with`` block before the tool's body runs: it reaches
    the code driving the runner (``until_done()``, iteration, ``generate_tool_call_response()``)."""
    sdk_run = wrapped(*args, **kwargs)
    if not is_instrumentation_enabled():
        return sdk_run
    try:
        tool_use = args[2] if len(args) > 2 else kwargs["tool_use"]
        call_id, name = tool_use.id, tool_use.name
    except Exception as exc:
        report("_frameworks.anthropic_tools._wrapper", exc)
        return sdk_run
    return _traced_run(telemetry, sdk_run, call_id, name)


def instrument(telemetry: Telemetry) -> bool:
    # The telemetry this instrument() was given, not whichever is active when a tool runs.
    return _patches.wrap_all(REQUIRES, functools.partial(_wrapper, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
