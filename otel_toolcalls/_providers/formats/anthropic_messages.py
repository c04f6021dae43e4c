"""Translator for Anthropic Messages stream events (stable and beta): event -> core events.

An event is read by attribute access only, dispatched on ``event.type`` like the SDK's own
``lib/streaming/_messages.py``. The block key is the content block index; the call id the block id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from otel_toolcalls._core import names as n
from otel_toolcalls._core import replay, usage
from otel_toolcalls._core.sink import Sink, by_type

_log = logging.getLogger(__name__)

TOOL_TYPES = {
    "tool_use": n.TOOL_TYPE_FUNCTION,
    # Run by Anthropic itself (web search, code execution) or by a remote MCP server.
    "server_tool_use": n.TOOL_TYPE_EXTENSION,
    "mcp_tool_use": n.TOOL_TYPE_EXTENSION,
}


def _message_start(state: Sink, event: Any) -> None:
    # {"type":"message_start","message":{"id":"msg_01","model":"claude-sonnet-4-5",...}}
    message = event.message
    state.response_id = getattr(message, "id", None)
    state.response_model = getattr(message, "model", None)
    # The input counts; message_delta completes them (a stream cut before it reports no usage).
    state.pending_usage = getattr(message, "usage", None)


def _block_start(state: Sink, event: Any) -> None:
    # {"type":"content_block_start","index":1,
    #  "content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}
    block = event.content_block
    tool_type = TOOL_TYPES.get(getattr(block, "type", None) or "")
    if tool_type is None:
        # A text / thinking block: a stopped tool block before it was not the one a limit cut.
        state.other_block_started()
        return
    name = getattr(block, "name", None)
    if not name:
        _log.debug("tool block without a name at index %r", event.index)
        state.other_block_started()
        return
    state.block_started(
        event.index, name=name, call_id=getattr(block, "id", None), index=event.index, tool_type=tool_type
    )


def _block_stop(state: Sink, event: Any) -> None:
    # {"type":"content_block_stop","index":1}: the block stays pending, as the stop reason that
    # follows may still overturn it (max_tokens cut the last block) until message_delta or the
    # next block settles it.
    state.block_stopped(event.index)


def _message_delta(state: Sink, event: Any) -> None:
    # {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},
    #  "usage":{"output_tokens":42}}: cumulative counts, the message's final usage.
    state.settle(getattr(event.delta, "stop_reason", None))
    state.usage = usage_of(state.pending_usage, getattr(event, "usage", None))


def _message_stop(state: Sink, event: Any) -> None:
    # {"type":"message_stop"}
    state.final_event()


_HANDLERS: dict[str, Callable[[Sink, Any], None]] = {
    "message_start": _message_start,
    "content_block_start": _block_start,
    "content_block_stop": _block_stop,
    "message_delta": _message_delta,
    "message_stop": _message_stop,
}


_others = by_type(_HANDLERS, name="translate_event", module=__name__)


def translate_event(state: Sink, event: Any) -> None:
    # Nearly every event of a tool-call stream is a delta: it skips the table's lookup and call.
    # {"type":"content_block_delta","index":1,
    #  "delta":{"type":"input_json_delta","partial_json":"{\"lo"}} (text and thinking deltas count nowhere)
    if event.type == "content_block_delta":
        delta = event.delta
        if delta.type == "input_json_delta":
            state.fragment(event.index, delta.partial_json)
        return
    _others(state, event)


def usage_of(start: Any, delta: Any) -> usage.Usage | None:
    """``message_start``'s usage completed by ``message_delta``'s (cumulative; any field it carries
    wins). Anthropic's ``input_tokens`` excludes cache reads and writes: the total adds them."""

    def latest(name: str) -> Any:
        value = getattr(delta, name, None)
        return value if value is not None else getattr(start, name, None)

    uncached = usage.count(latest("input_tokens"))
    cache_read = usage.count(latest("cache_read_input_tokens"))
    cache_write = usage.count(latest("cache_creation_input_tokens"))
    return usage.make(
        input_tokens=usage.total(uncached, cache_read, cache_write),
        output_tokens=latest("output_tokens"),
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=getattr(latest("output_tokens_details"), "thinking_tokens", None),
    )


_HISTORY_USES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def history_ids(body: Any) -> Iterator[str]:
    """The call ids of a request's input history (the replayed-aborted-call check, ``_core.replay``)."""
    for message in replay.entries(replay.field(body, "messages")):
        for block in replay.entries(replay.field(message, "content")):
            kind = replay.field(block, "type")
            if kind in _HISTORY_USES:
                # {"type": "tool_use", "id": "toolu_1", "name": "...", "input": {...}}
                yield replay.field(block, "id")
            elif kind == "tool_result":
                # {"type": "tool_result", "tool_use_id": "toolu_1", "content": "..."}
                yield replay.field(block, "tool_use_id")
