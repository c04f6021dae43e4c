"""CrewAI: an ``execute_tool`` span around each native (function-calling) tool call an agent runs.

Choke point: ``AgentExecutor._execute_single_native_tool_call(tool_call)``, which parses the model's
call, runs the before/after hooks and the tool. CrewAI's telemetry is not OpenTelemetry spans of the
application's provider: the package makes the execution span.
"""

from __future__ import annotations

import functools
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, run
from otel_toolcalls._wiring.patches import Earlier, Patches, Requires, Tested

_METHOD = "_execute_single_native_tool_call"
# Earlier releases have the executor in crewai.experimental, beside CrewAgentExecutor, whose
# same-named method takes the call already read (call_id=, func_name=, func_args=).
# 1.7.0 is the first of the last twelve months, but native tool calls (with the model's call id)
# began in 1.9, and a per-call choke point, _execute_single_native_tool_call, in 1.10.1 (1.9 runs
# calls inline in _handle_native_tool_calls). Its executors: CrewAgentExecutor and
# crewai.experimental's AgentExecutor to 1.15.28, the latter moved to
# crewai.agents.agent_executor in 1.15.29. Lanes 1.10.1, 1.13.0 (-mid), 1.15.28, 1.15.30.
REQUIRES = Requires(
    sdk="crewai",
    targets=(("crewai.agents.agent_executor", f"AgentExecutor.{_METHOD}"),),
    earlier=(
        Earlier(
            "1.15.29",
            (
                ("crewai.experimental.agent_executor", f"AgentExecutor.{_METHOD}"),
                ("crewai.agents.crew_agent_executor", f"CrewAgentExecutor.{_METHOD}"),
            ),
        ),
    ),
    tested=(Tested("crewai", "1.10.1", "1.15.30"),),
)
_patches = Patches()


def _read(args: Any, kwargs: Any) -> Any:
    """(call id, name, arguments) as CrewAI reads them from the model's call; None for no call."""
    if "call_id" in kwargs:  # CrewAgentExecutor: the call already read
        return kwargs["call_id"], kwargs.get("func_name"), kwargs.get("func_args")
    tool_call = kwargs.get("tool_call", args[0] if args else None)
    if tool_call is None:
        return None
    from crewai.utilities.agent_utils import extract_tool_call_info

    return extract_tool_call_info(tool_call)


def _call_of(args: Any, kwargs: Any) -> tuple[str | None, str | None] | None:
    """(call id, tool name) as CrewAI itself reads them; None for a call CrewAI will not run
    because its arguments do not parse (it answers the model with an error instead)."""
    try:
        from crewai.utilities.agent_utils import parse_tool_call_args

        info = _read(args, kwargs)
        if not info:
            return None
        call_id, name, arguments = info
        if parse_tool_call_args(arguments, name, call_id)[1] is not None:
            return None
    except Exception as exc:
        report("_frameworks.crewai._call_of", exc)
        return None, None
    return (call_id if isinstance(call_id, str) else None), (name if isinstance(name, str) else None)


def _execute(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """A strict refusal raises before the call is parsed or run: calls run one after another let it
    out of ``Crew.kickoff()``; in parallel (CrewAI's thread pool) CrewAI folds it into an "Error
    executing tool" result, as any exception there. A tool's own exception CrewAI turns into a
    result string: the span does not see it."""
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    call = _call_of(args, kwargs)
    if call is None:
        return wrapped(*args, **kwargs)
    call_id, name = call
    return run(Execution(call_id, name, telemetry), wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_execute, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
