"""Claude Agent SDK (``claude-agent-sdk``): the Claude Code CLI's streams and the tools it runs here.

The model is called by the CLI (a separate program), not by the anthropic SDK in this process: with
``include_partial_messages=True`` the CLI writes each raw Anthropic stream event to stdout as a
``stream_event`` line. Choke point for the stream: the generator of those lines that
``SubprocessCLITransport.read_messages`` returns (``_read_messages_impl``), read as
``Query._read_messages`` routes them, in the order the CLI wrote them and before any control request
they precede is handled. Each Anthropic message (``message_start`` .. ``message_stop``) of each
thread (``parent_tool_use_id``: the main one, or a subagent's) is one streamed request, read by
the anthropic Messages translator.

The CLI runs every tool block it has whole, whatever the stop reason after it, so a block is
settled at its own end (its ``content_block_stop``, or the response's ``assistant`` line naming it,
which newer CLIs write first), by its arguments, for every tool alike.

Tools: the CLI runs its own (their executions: ``claude_code_tools``, a setting); those of an SDK
MCP server (``@tool``) run here, asked for by a ``tools/call`` control request naming the call in
``params._meta["claudecode/toolUseId"]`` (``Query._handle_sdk_mcp_request``). From 0.2.140 that
request reaches a real MCP server (the mcp adapter's server span is the execution, and finds the
id there); before, the SDK calls the tool itself and the execution span is made here.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Hashable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core import names as n
from otel_toolcalls._core.errors import guarded
from otel_toolcalls._core.request import Request
from otel_toolcalls._core.session import CANCELLED, CLOSED, ENDED, Ending, Session, failed, stream_error
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls._providers.formats.anthropic_messages import TOOL_TYPES, translate_event
from otel_toolcalls._sdks.fields import Fields
from otel_toolcalls._wiring.patches import Patches, Requires, Tested, resolve

from . import claude_code_tools
from .claude_code_tools import ended, ended_all

_log = logging.getLogger(__name__)

# read_messages hands out this generator (the public name is also the abstract Transport's).
_TRANSPORT = (
    "claude_agent_sdk._internal.transport.subprocess_cli",
    "SubprocessCLITransport._read_messages_impl",
)
_MCP_REQUEST = ("claude_agent_sdk._internal.query", "Query._handle_sdk_mcp_request")
# 0.1.19 (January 2026, Claude Code 2.1.1), the first of the last twelve months; read_messages and
# Query._handle_sdk_mcp_request are in every release since. Before 0.2.140 the SDK calls its MCP
# tools itself; from it a real mcp server runs them. Lanes 0.1.19 (with mcp 1.x), 0.2.189
# (Claude Code 2.1.332).
REQUIRES = Requires(
    sdk="claude-agent-sdk", targets=(_TRANSPORT, _MCP_REQUEST), provider="anthropic",
    tested=(Tested("claude-agent-sdk", "0.1.19", "0.2.189"),),
)
_patches = Patches()

# The key the CLI names the call of an MCP tools/call with.
TOOL_USE_ID = "claudecode/toolUseId"
_PROVIDER = "anthropic"

# ResultMessage.terminal_reason -> the abort reason of a message still open when the run ended.
# The user's interrupt() ends the turn: cancelled; the CLI's own failures: stream_error.
_CANCELLING = frozenset({"aborted_streaming", "aborted_tools"})
_FAILING = frozenset(
    {
        "api_error",
        "model_error",
        "blocking_limit",
        "rapid_refill_breaker",
        "prompt_too_long",
        "image_error",
        "error_during_execution",
    }
)
# AssistantMessage.error values (the CLI's synthetic message after a failed request).
_ERRORS = frozenset(
    {"authentication_failed", "billing_error", "rate_limit", "invalid_request", "server_error", "unknown"}
)



class _Turn:
    """One message of one thread: its stream state and the ids of its tool blocks by index."""

    __slots__ = ("ids", "state", "waiting")

    def __init__(self, state: StreamState) -> None:
        self.state = state
        self.ids: dict[Hashable, str] = {}
        # message_stop came with a call still open: the line telling why it ended comes next.
        self.waiting = False

    def announced(self, message: dict[str, Any]) -> None:
        """The CLI's assistant line of this response names the tool blocks it has whole (it writes
        it before their content_block_stop, and runs them next): each is settled now."""
        body = message.get("message")
        if not isinstance(body, dict) or body.get("id") != self.state.response_id:
            return
        named = {block.get("id") for block in _blocks(message, "tool_use")}
        for key, call_id in self.ids.items():
            if call_id in named and self.state.call_id_of(key) is not None:
                self.state.block_stopped(key)
                self.state.other_block_started()


class _Reader:
    """What one CLI process's stdout has open: a message per thread, its stream in ``streams``.
    Never references the SDK's objects; lives in the read generator's frame."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry
        self.model: str | None = None
        self.turns: dict[str | None, _Turn] = {}
        self.streams = Session()
        # Calls streamed and not answered yet by their tool_result (the CLI's tools' executions).
        self.unanswered: set[str] = set()

    def line(self, message: Any) -> None:
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "stream_event":
            self._event(message.get("parent_tool_use_id"), message.get("event"))
            return
        if kind == "result":
            self._result(message)
            return
        if kind == "assistant":
            self._assistant(message)
        elif kind == "user":
            self._results(message)
        thread = message.get("parent_tool_use_id") if kind in ("assistant", "user") else None
        turn = self.turns.get(thread)
        if turn is not None and (turn.waiting or _another_message(turn, message)):
            # The message stopped with a call open and no error said why, or the CLI went on to
            # another response (its non-streaming fallback): the call never completed.
            self.end(thread, ENDED)
        if kind == "system" and message.get("subtype") == "init":
            # {"type":"system","subtype":"init","model":"claude-sonnet-4-6",...}
            model = message.get("model")
            self.model = model if isinstance(model, str) else None

    def _results(self, message: dict[str, Any]) -> None:
        # {"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_01",
        #  "content":"...","is_error":false}]},"parent_tool_use_id":null}
        for block in _blocks(message, "tool_result"):
            call_id = block.get("tool_use_id")
            if isinstance(call_id, str):
                self.unanswered.discard(call_id)
                ended(call_id, "tool_error" if block.get("is_error") is True else None)

    def _event(self, thread: Any, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "content_block_delta":
            # Nearly every line: read as the translator reads a delta, without an attribute view.
            # {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}
            delta, turn = event.get("delta"), self.turns.get(thread)
            if turn is not None and isinstance(delta, dict) and delta.get("type") == "input_json_delta":
                turn.state.fragment(event.get("index"), delta.get("partial_json"))
            return
        if kind == "message_start":
            self.end(thread, ENDED)
            state = self._open(thread)
            if state is not None:
                self.turns[thread] = _Turn(state)
        turn = self.turns.get(thread)
        if turn is None:
            return  # a message that began before instrument(): not seen whole
        if kind == "message_stop" and turn.state.open_keys():
            # The CLI's own stop after a broken stream (no response stops with a block open): not
            # the response's end; the line telling why it ended comes next.
            turn.waiting = True
            return
        translate_event(turn.state, Fields(event))
        self._track(turn, kind, event)
        if kind == "message_stop":
            self.end(thread, ENDED)

    def _track(self, turn: _Turn, kind: Any, event: dict[str, Any]) -> None:
        if kind == "content_block_stop":
            # The CLI runs every tool block it has whole, whatever the stop reason that follows:
            # the block's own stop settles it, by its arguments (a cut one ends unterminated).
            turn.state.other_block_started()
        elif kind == "content_block_start":
            block = event.get("content_block")
            call_id = block.get("id") if isinstance(block, dict) and block.get("type") in TOOL_TYPES else None
            if isinstance(call_id, str):
                turn.ids[event.get("index")] = call_id
                self.unanswered.add(call_id)

    def _open(self, thread: Any) -> StreamState | None:
        # The parent: the context the SDK's reader task was started in (the caller's, at connect).
        request = Request(self.telemetry, _PROVIDER, self.model, "chat", start_ns=time.time_ns(),
                          parent=otel_context.get_current())  # fmt: skip
        state = self.streams.open(thread, request)
        if state is not None:
            state.first_chunk()
        return state

    def _assistant(self, message: dict[str, Any]) -> None:
        # The CLI's synthetic message after a failed request (a dropped connection, an API error):
        # {"type":"assistant","message":{"model":"<synthetic>",...},"error":"server_error"}
        # Also where no stream is seen: the tools the CLI runs end with the session at the latest.
        self.unanswered.update(b["id"] for b in _blocks(message, "tool_use") if isinstance(b.get("id"), str))
        error = message.get("error")
        turn = self.turns.get(message.get("parent_tool_use_id"))
        if turn is None:
            return
        if error is None:
            turn.announced(message)
            return
        turn.state.error_event(error if error in _ERRORS else n.OTHER)
        if turn.waiting:
            self.end(message.get("parent_tool_use_id"), ENDED)

    def _result(self, message: dict[str, Any]) -> None:
        # {"type":"result","subtype":"success","terminal_reason":"aborted_streaming",...}: the run's
        # turn is over. CLIs before terminal_reason say "error_during_execution" for a failed request.
        reason = message.get("terminal_reason")
        if reason is None and message.get("subtype") == "error_during_execution":
            reason = "error_during_execution"
        for thread in list(self.turns):
            if reason in _CANCELLING:
                self.end(thread, CANCELLED)
            elif reason in _FAILING:
                self.end(thread, stream_error(reason))
            else:
                self.end(thread, ENDED)

    def end(self, thread: Any, how: Ending) -> None:
        turn = self.turns.pop(thread, None)
        if turn is not None:
            self.streams.end(thread, how)

    def end_all(self, how: Ending) -> None:
        """The CLI's stdout ended: so did every message, and every execution it ran."""
        for thread in list(self.turns):
            self.end(thread, how)
        ended_all(self.unanswered)
        self.unanswered.clear()


def _blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The content blocks of one type of an assistant or user line."""
    body = message.get("message")
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict) and block.get("type") == kind]


def _another_message(turn: _Turn, message: dict[str, Any]) -> bool:
    """An assistant line of a response other than the one the turn streams."""
    body = message.get("message")
    other = body.get("id") if isinstance(body, dict) else None
    return message.get("type") == "assistant" and bool(other) and other != turn.state.response_id


async def _reading(session: _Reader, lines: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The transport's lines, unchanged, each read before the SDK routes it."""
    try:
        async for message in lines:
            guarded(session.line, message)
            yield message
    except GeneratorExit:
        session.end_all(CLOSED)
        # Closed now, as it would have been without this wrapper (the SDK's returns at once).
        close = getattr(lines, "aclose", None)
        if close is not None:
            await close()
        raise
    except BaseException as exc:
        # A cancelled read task (the SDK's close()) is not an Exception: cancelled, else the CLI's end.
        if isinstance(exc, Exception):
            session.end_all(failed(exc))
        else:
            session.end_all(CANCELLED)
        raise
    session.end_all(ENDED)


def _read_messages(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    lines = wrapped(*args, **kwargs)
    if not is_instrumentation_enabled() or not hasattr(lines, "__anext__"):
        return lines
    return _reading(_Reader(telemetry), lines)


# -- the tools this process runs for the CLI (SDK MCP servers) -------------------------------------


def call_of(message: Any) -> tuple[str | None, str | None]:
    """(call id, tool name) of a ``tools/call`` JSON-RPC request from the CLI:
    {"method":"tools/call","params":{"name":"get_weather","arguments":{...},
     "_meta":{"claudecode/toolUseId":"toolu_01"}},"jsonrpc":"2.0","id":2}"""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None, None
    params = message.get("params")
    if not isinstance(params, dict):
        return None, None
    meta = params.get("_meta")
    call_id = meta.get(TOOL_USE_ID) if isinstance(meta, dict) else None
    name = params.get("name")
    return (call_id if isinstance(call_id, str) and call_id else None), (
        name if isinstance(name, str) else None
    )


def _refused(message: dict[str, Any], error: IncompleteToolCallError) -> dict[str, Any]:
    """The tool error result the CLI hands the model, as for any tool that failed."""
    result = {"content": [{"type": "text", "text": str(error)}], "isError": True}
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": result}


def _tool_error(response: Any) -> str | None:
    result = response.get("result") if isinstance(response, dict) else None
    if isinstance(response, dict) and "error" in response:
        return "jsonrpc_error"
    if isinstance(result, dict) and (result.get("isError") is True or result.get("is_error") is True):
        return "tool_error"
    return None


@functools.cache
def _bridged() -> bool:
    # 0.2.140+: the request goes on to a real MCP server, run by mcp, whose adapter makes the span.
    return resolve("claude_agent_sdk._internal.sdk_mcp_bridge", "SdkMcpBridge") is not None


async def _mcp_request(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    message = kwargs.get("message", args[1] if len(args) > 1 else None)
    call_id, name = call_of(message)
    if call_id is None or not is_instrumentation_enabled():
        return await wrapped(*args, **kwargs)
    if _bridged():
        return await wrapped(*args, **kwargs)
    execution = Execution(call_id, name, telemetry)
    started = False
    try:
        with execution:
            started = True
            return execution.returned(await wrapped(*args, **kwargs), _tool_error)
    except IncompleteToolCallError as error:
        if started:  # the tool's own: not ours to answer
            raise
        return _refused(message, error)


def instrument(telemetry: Telemetry) -> bool:
    if _patches.wrap(*_TRANSPORT, functools.partial(_read_messages, telemetry)):
        _patches.wrap(*_MCP_REQUEST, functools.partial(_mcp_request, telemetry))
        if telemetry.settings.claude_code_tools:
            claude_code_tools.instrument(telemetry)
    return bool(_patches)


def uninstrument() -> None:
    claude_code_tools.uninstrument()
    _patches.unwrap_all()
