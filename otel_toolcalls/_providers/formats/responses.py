"""Translator for OpenAI Responses stream events: event -> core events.

Events are read by attribute access only and dispatched on ``event.type``. A tool-call block is an
output item (``function_call``, ``custom_tool_call``, ``mcp_call``); its argument deltas carry only
the item's ``item_id``, so the item id is the core key and a fragment is one dict lookup. The
item's own ``response.output_item.done`` completes it; ``response.incomplete`` settles what is open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from otel_toolcalls._core import names as n
from otel_toolcalls._core import replay
from otel_toolcalls._core.sink import Sink, by_type

from .chat_completions import usage_of

# Item type -> gen_ai.tool.type. Custom tools run in the client like functions; MCP calls are run
# by the provider.
_TOOL_TYPES = {
    "function_call": n.TOOL_TYPE_FUNCTION,
    "custom_tool_call": n.TOOL_TYPE_FUNCTION,
    "mcp_call": n.TOOL_TYPE_EXTENSION,
}


def _created(state: Sink, event: Any) -> None:
    # {"type":"response.created","response":{"id":"resp_1","model":"gpt-4.1-2025-04-14",...}}
    _identify(state, event.response)


def _identify(state: Sink, response: Any) -> None:
    # Also called at the end: a resumed stream (retrieve with starting_after) may never show
    # response.created. The SDK accepts a lifecycle event without its response, or one without an id.
    if state.response_id is None:
        state.response_id = getattr(response, "id", None)
        state.response_model = getattr(response, "model", None)


def _item_added(state: Sink, event: Any) -> None:
    # {"type":"response.output_item.added","output_index":1,
    #  "item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}
    item = event.item
    if item is None:
        # {"type":"response.output_item.added","output_index":0,"item":null}: the SDK keeps the
        # index empty until a real item comes; nothing started.
        return
    kind = item.type
    tool_type = _TOOL_TYPES.get(kind)
    if tool_type is None:
        state.other_block_started()
        return
    key = item.id or event.output_index
    # An mcp_call has no call_id: its item id is the only id the provider gives it.
    call_id = item.id if kind == "mcp_call" else getattr(item, "call_id", None)
    free_form = kind == "custom_tool_call"  # its input is free text, not a JSON object
    state.block_started(
        key,
        name=item.name,
        call_id=call_id,
        index=event.output_index,
        tool_type=tool_type,
        free_form=free_form,
    )
    # Counted like any fragment, should a server put the first one in the item itself.
    state.fragment(key, getattr(item, "input" if free_form else "arguments", None))


def _delta(state: Sink, event: Any) -> None:
    # {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"lo"}
    state.fragment(event.item_id or event.output_index, event.delta)


def _item_done(state: Sink, event: Any) -> None:
    # {"type":"response.output_item.done","item":{"type":"function_call","id":"fc_1","status":"completed"}}
    item = event.item
    if item is None or item.type not in _TOOL_TYPES:
        return
    key = item.id or event.output_index
    # custom_tool_call items carry no status: their done event alone completes them.
    status = getattr(item, "status", None)
    if status == "incomplete":
        # The response.incomplete that should follow says why; without one, the limit cut it.
        state.block_stopped(key, unsettled=n.TRUNCATED)
    elif status == "failed":
        # {"type":"mcp_call","status":"failed","error":{"type":"mcp_protocol_error",...}}
        state.block_aborted(key, n.STREAM_ERROR, _error_type(getattr(item, "error", None)) or status)
    else:
        state.block_completed(key)


def _usage(state: Sink, response: Any) -> None:
    # The response object of the final event: {"usage":{"input_tokens":36,"output_tokens":87,...}}
    # {"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,
    #  "output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}
    found = usage_of(getattr(response, "usage", None), "input_tokens", "output_tokens")
    if found is not None:
        state.usage = found


def _error_type(error: Any) -> str | None:
    # openai 3.x parses the error object; 2.x declares it a string and keeps the object as a dict.
    found = error.get("type") if isinstance(error, dict) else getattr(error, "type", None)
    return found if isinstance(found, str) else None


def _completed(state: Sink, event: Any) -> None:
    # {"type":"response.completed","response":{"status":"completed","usage":{...},...}}
    response = event.response
    _identify(state, response)
    _usage(state, response)
    state.settle(getattr(response, "status", None) or "completed")
    state.final_event()


def _incomplete(state: Sink, event: Any) -> None:
    # {"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"},...}}
    response = event.response
    _identify(state, response)
    _usage(state, response)
    reason = getattr(getattr(response, "incomplete_details", None), "reason", None) or "incomplete"
    state.settle(reason)
    # A reason the package does not know still ended the response before these calls completed.
    for key in state.open_keys():
        state.block_aborted(key, n.TRUNCATED)
    state.final_event()


def _failed(state: Sink, event: Any) -> None:
    # {"type":"response.failed","response":{"status":"failed","error":{"code":"server_error",...}}}
    response = event.response
    _identify(state, response)
    _usage(state, response)
    state.error_event(getattr(getattr(response, "error", None), "code", None))


def _error(state: Sink, event: Any) -> None:
    # {"type":"error","code":"server_error","message":"...","param":null}
    state.error_event(event.code)


_HANDLERS: dict[str, Callable[[Sink, Any], None]] = {
    "response.function_call_arguments.delta": _delta,
    "response.custom_tool_call_input.delta": _delta,
    "response.mcp_call_arguments.delta": _delta,
    "response.output_item.added": _item_added,
    "response.output_item.done": _item_done,
    "response.created": _created,
    "response.completed": _completed,
    "response.incomplete": _incomplete,
    "response.failed": _failed,
    "error": _error,
}


translate_event = by_type(_HANDLERS, name="translate_event", module=__name__)


_HISTORY_ITEMS = frozenset(
    {"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"}
)


def history_ids(body: Any) -> Iterator[str]:
    """The call ids of a request's input history (the replayed-aborted-call check, ``_core.replay``)."""
    for item in replay.entries(replay.field(body, "input")):
        # {"type": "function_call", "call_id": "call_1", "name": "...", "arguments": "..."}
        if replay.field(item, "type") in _HISTORY_ITEMS:
            yield replay.field(item, "call_id")
