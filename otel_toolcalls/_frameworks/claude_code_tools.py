"""Claude Code's own tools (Bash, Read, Edit, ...): their execution spans, from the Claude Agent
SDK's ``PreToolUse`` hook (the ``claude_code_tools`` setting, off by default).

The CLI runs these tools in its own process. Before each, it sends the SDK a ``hook_callback``
control request naming the call (``tool_use_id``) and waits for the answer: one round trip over
its stdio per call, which is why the hook is a setting. The span opens in the hook (strict mode:
the hook denies an aborted call, and the CLI never runs it) and ends at the call's ``tool_result``,
which the stream's reader sees on the CLI's stdout (the same line tells whether the tool failed),
or when that stdout ends. The package's hook is added beside the user's (``Query.__init__``'s
``hooks``), never in their place, for every tool but those of SDK MCP servers: those run in this
process, where their execution span is made (the ``claude_agent_sdk`` and ``mcp`` adapters).
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Iterable
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls._wiring.patches import Patches

QUERY_INIT = ("claude_agent_sdk._internal.query", "Query.__init__")
_patches = Patches()
_EVENT = "PreToolUse"


class _Running:
    """Executions the CLI runs now, by call id. Each is entered in a context of its own, kept with
    it, so that it is left in the same context from the reader's task."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, tuple[Execution, contextvars.Context]] = {}

    def start(self, call_id: str, execution: Execution) -> IncompleteToolCallError | None:
        context = contextvars.copy_context()
        try:
            context.run(execution.__enter__)
        except IncompleteToolCallError as error:
            return error
        with self._lock:
            self._by_id[call_id] = (execution, context)
        return None

    def end(self, call_id: str, error_type: str | None) -> None:
        with self._lock:
            entry = self._by_id.pop(call_id, None)
        if entry is not None:
            execution, context = entry
            execution.returned(error_type, _as_error)
            context.run(execution.__exit__, None, None, None)


def _as_error(error_type: str | None) -> str | None:
    return error_type


running = _Running()


def ended(call_id: str, error_type: str | None) -> None:
    """The CLI's ``tool_result`` for the call (``error_type``: it failed), or its stdout's end."""
    running.end(call_id, error_type)


def ended_all(call_ids: Iterable[str]) -> None:
    for call_id in call_ids:
        running.end(call_id, None)


def _denial(error: IncompleteToolCallError) -> dict[str, Any]:
    # The CLI hands the reason to the model as the tool's error result; the tool never runs.
    return {
        "hookSpecificOutput": {
            "hookEventName": _EVENT,
            "permissionDecision": "deny",
            "permissionDecisionReason": str(error),
        }
    }


def _start(telemetry: Telemetry, skipped: tuple[str, ...], input_data: Any, call_id: Any) -> dict[str, Any]:
    # {"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{...},"tool_use_id":"toolu_01",...}
    name = input_data.get("tool_name") if isinstance(input_data, dict) else None
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
        return {}
    if name.startswith(skipped) or not is_instrumentation_enabled():
        return {}
    error = running.start(call_id, Execution(call_id, name, telemetry))
    return _denial(error) if error is not None else {}


async def _pre_tool_use(
    telemetry: Telemetry, skipped: tuple[str, ...], input_data: Any, call_id: Any, context: Any
) -> dict[str, Any]:
    try:
        return _start(telemetry, skipped, input_data, call_id)
    except Exception as exc:
        report("_frameworks.claude_code_tools._pre_tool_use", exc)
        return {}


def _with_hook(telemetry: Telemetry, kwargs: dict[str, Any]) -> None:
    """The user's hooks (the SDK's internal form), and ours after them; the user's lists untouched."""
    servers = kwargs.get("sdk_mcp_servers") or {}
    skipped = tuple(f"mcp__{name}__" for name in servers)
    hook = functools.partial(_pre_tool_use, telemetry, skipped)
    hooks = dict(kwargs.get("hooks") or {})
    hooks[_EVENT] = [*hooks.get(_EVENT, ()), {"matcher": None, "hooks": [hook]}]
    kwargs["hooks"] = hooks


def _query_init(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # A non-streaming query (0.1.x with a string prompt) sends the CLI no hooks: none to add.
    if is_instrumentation_enabled() and kwargs.get("is_streaming_mode", True) and not args:
        try:
            _with_hook(telemetry, kwargs)
        except Exception as exc:
            report("_frameworks.claude_code_tools._query_init", exc)
    return wrapped(*args, **kwargs)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap(*QUERY_INIT, functools.partial(_query_init, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
