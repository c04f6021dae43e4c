"""Translator for OpenAI Realtime server events: one response's events -> core events.

A response's events carry its ``response_id`` (the adapter routes them to the response's stream) and
a call's fragments its ``item_id`` (the core key: one dict lookup per fragment). Read by attribute
access only. ``response.done``'s status settles what is still open (TELEMETRY §6, Realtime).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_toolcalls._core import names as n
from otel_toolcalls._core import usage
from otel_toolcalls._core.sink import Sink

_TOOL_TYPES = {"function_call": n.TOOL_TYPE_FUNCTION, "mcp_call": n.TOOL_TYPE_EXTENSION}


def _item_added(state: Sink, event: Any) -> None:
    # {"type":"response.output_item.added","response_id":"resp_1","output_index":0,
    #  "item":{"id":"item_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":""}}
    item = event.item
    if item is None:
        return
    tool_type = _TOOL_TYPES.get(item.type)
    if tool_type is None:
        state.other_block_started()
        return
    # An mcp_call has no call_id: its item id is the only id the provider gives it.
    call_id = item.id if item.type == "mcp_call" else getattr(item, "call_id", None)
    index = event.output_index
    state.block_started(item.id, name=item.name, call_id=call_id, index=index, tool_type=tool_type)
    state.fragment(item.id, getattr(item, "arguments", None))


def _delta(state: Sink, event: Any) -> None:
    # {"type":"response.function_call_arguments.delta","response_id":"resp_1","item_id":"item_1",
    #  "output_index":0,"call_id":"call_1","delta":"{\"lo"}
    state.fragment(event.item_id, event.delta)


def _item_done(state: Sink, event: Any) -> None:
    # {"type":"response.output_item.done","item":{"id":"item_1","type":"function_call","status":"completed"}}
    # An item done "incomplete" stays open: the response.done that follows says why it was cut.
    item = event.item
    if item is not None and item.type in _TOOL_TYPES and getattr(item, "status", None) in (None, "completed"):
        state.block_completed(item.id)


RESPONSE_EVENTS: dict[str, Callable[[Sink, Any], None]] = {
    "response.output_item.added": _item_added,
    "response.function_call_arguments.delta": _delta,
    "response.mcp_call_arguments.delta": _delta,
    "response.output_item.done": _item_done,
}


def response_done(state: Sink, response: Any) -> bool:
    """Settles the response's calls; True when it was cancelled (the adapter then ends the stream
    cancelled, else ended: the translator reads, the adapter owns the stream's end)."""
    # {"type":"response.done","response":{"id":"resp_1","status":"incomplete",
    #  "status_details":{"type":"incomplete","reason":"max_output_tokens"},"usage":{...}}}
    state.usage = _usage(getattr(response, "usage", None))
    status = response.status or "completed"
    details = response.status_details
    if status == "cancelled":
        # The client's response.cancel, or the user speaking over it (turn_detected): TELEMETRY §6.
        state.settle(status)
        return True
    if status == "failed":
        error = getattr(details, "error", None)
        state.error_event(getattr(error, "code", None) or getattr(error, "type", None))
    elif status == "incomplete":
        reason = getattr(details, "reason", None) or status
        state.settle(reason)
        for key in state.open_keys():
            state.block_aborted(key, n.TRUNCATED)
    else:
        state.settle(status)
    state.final_event()
    return False


def _usage(found: Any) -> usage.Usage | None:
    # {"input_tokens":120,"output_tokens":40,"input_token_details":{"cached_tokens":64,...},...}
    if found is None:
        return None
    return usage.make(
        input_tokens=getattr(found, "input_tokens", None),
        output_tokens=getattr(found, "output_tokens", None),
        cache_read=getattr(getattr(found, "input_token_details", None), "cached_tokens", None),
    )
