"""OpenAI Responses SSE: tool-call output items fragmented, paced, cut, truncated and failed.

``events_for`` builds the event payloads in the order the API sends them; ``script_for`` writes one
``event:`` / ``data:`` SSE event per socket write (events holding multi-byte text in two writes, cut
inside a character), optionally cutting the connection after some number of events.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._fragments import pieces_of, split_mid_character, sse
from ._server import Script

MODEL = "gpt-4.1-mini"
RESPONSE_ID = "resp_fake_1"

# A ResponseUsage as the API writes it on the final response object.
USAGE: dict[str, Any] = {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 12},
    "output_tokens": 87,
    "output_tokens_details": {"reasoning_tokens": 64},
    "total_tokens": 123,
}

# Item type -> (delta event, done event, field holding the arguments).
_KINDS = {
    "function_call": (
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "arguments",
    ),
    "custom_tool_call": (
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "input",
    ),
    "mcp_call": ("response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "arguments"),
}


@dataclass
class ToolCall:
    name: str
    arguments: str
    call_id: str | None = "call_1"
    item_id: str | None = None  # default: derived from the output index
    kind: str = "function_call"  # | "custom_tool_call" | "mcp_call"
    # Explicit fragments; by default the arguments are cut at awkward places.
    fragments: list[str] | None = None
    # Status on response.output_item.done: "completed", "incomplete", "failed"; None sends no done.
    status: str | None = "completed"

    def pieces(self) -> list[str]:
        return pieces_of(self.arguments, self.fragments)


def _item(call: ToolCall, output_index: int, *, done: bool) -> dict[str, Any]:
    _, _, field = _KINDS[call.kind]
    prefix = {"function_call": "fc", "custom_tool_call": "ctc", "mcp_call": "mcp"}[call.kind]
    item: dict[str, Any] = {
        "id": call.item_id or f"{prefix}_{output_index}",
        "type": call.kind,
        "name": call.name,
        field: call.arguments if done else "",
    }
    if call.kind != "mcp_call":
        item["call_id"] = call.call_id
    else:
        item["server_label"] = "fake_mcp"
    if call.kind != "custom_tool_call":
        item["status"] = (call.status or "in_progress") if done else "in_progress"
    if done and call.status == "failed":
        item["error"] = {"type": "mcp_protocol_error", "code": -32603, "message": "server went away"}
    return item


def response_object(
    status: str, output: Sequence[dict[str, Any]] = (), *, model: str = MODEL, **fields: Any
) -> dict[str, Any]:
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1764500000,
        "status": status,
        "model": model,
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        **fields,
    }


def _text_events(text: str, output_index: int) -> list[dict[str, Any]]:
    item_id = f"msg_{output_index}"
    part = {"type": "output_text", "text": "", "annotations": []}
    done_part = {**part, "text": text}
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    where = {"item_id": item_id, "output_index": output_index, "content_index": 0}
    return [
        {"type": "response.output_item.added", "output_index": output_index, "item": item},
        {"type": "response.content_part.added", **where, "part": part},
        {"type": "response.output_text.delta", **where, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": done_part},
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {**item, "status": "completed", "content": [done_part]},
        },
    ]


def _call_events(call: ToolCall, output_index: int) -> list[dict[str, Any]]:
    delta_type, done_type, field = _KINDS[call.kind]
    started = _item(call, output_index, done=False)
    where = {"item_id": started["id"], "output_index": output_index}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": output_index, "item": started}
    ]
    events += [{"type": delta_type, **where, "delta": piece} for piece in call.pieces()]
    if call.status is None:
        return events
    if call.status != "incomplete":
        events.append({"type": done_type, **where, field: call.arguments})
    events.append(
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": _item(call, output_index, done=True),
        }
    )
    return events


def events_for(
    calls: Sequence[ToolCall],
    *,
    text: str | None = None,
    text_after: str | None = None,
    end: str | None = "completed",
    reason: str | None = "max_output_tokens",
    error_code: str | None = "server_error",
    model: str = MODEL,
    usage: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The whole stream: created, in_progress, an optional text item, the calls one after another,
    an optional text item after them, and the end: ``completed``, ``incomplete`` (with ``reason``),
    ``failed`` or ``error`` (with ``error_code``), or None for a body that just stops. ``usage``:
    the final response object's ``usage`` (``USAGE`` is one), null when None."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_object("in_progress", model=model)},
        {"type": "response.in_progress", "response": response_object("in_progress", model=model)},
    ]
    done_items: list[dict[str, Any]] = []
    blocks = ([text] if text else []) + list(calls) + ([text_after] if text_after else [])
    for index, block in enumerate(blocks):
        block_events = _text_events(block, index) if isinstance(block, str) else _call_events(block, index)
        events += block_events
        if block_events[-1]["type"] == "response.output_item.done":
            done_items.append(block_events[-1]["item"])
    if end == "completed":
        response = response_object("completed", done_items, model=model, usage=usage)
        events.append({"type": "response.completed", "response": response})
    elif end == "incomplete":
        details = {"reason": reason} if reason else None
        response = response_object(
            "incomplete", done_items, model=model, incomplete_details=details, usage=usage
        )
        events.append({"type": "response.incomplete", "response": response})
    elif end == "failed":
        error = {"code": error_code, "message": "The model failed to generate a response."}
        events.append(
            {"type": "response.failed", "response": response_object("failed", model=model, error=error)}
        )
    elif end == "error":
        events.append({"type": "error", "code": error_code, "message": "An error occurred.", "param": None})
    for number, event in enumerate(events, start=1):
        event["sequence_number"] = number
    return copy.deepcopy(events)


def script_for(
    events: Sequence[dict[str, Any]],
    *,
    cut_after: int | None = None,
    starting_after: int | None = None,
    pace: float = 0.0,
    split_characters: bool = True,
    **script: Any,
) -> Script:
    """One SSE event per socket write. ``cut_after``: the connection drops after that many events;
    ``starting_after``: only the events after that sequence number (a resumed stream)."""
    writes: list[bytes] = []
    for i, event in enumerate(events):
        if cut_after is not None and i >= cut_after:
            break
        if starting_after is not None and event["sequence_number"] <= starting_after:
            continue
        data = sse(event, event=event["type"])
        writes.extend(split_mid_character(data) if split_characters else [data])
    return Script(writes, pace=pace, end="cut" if cut_after is not None else "done", **script)


def tool_call_script(calls: Sequence[ToolCall], **options: Any) -> Script:
    keys = ("text", "text_after", "end", "reason", "error_code", "model", "usage")
    return script_for(events_for(calls, **{k: options.pop(k) for k in keys if k in options}), **options)


WEATHER = ToolCall(
    name="get_weather",
    call_id="call_weather_1",
    arguments='{"location": "Zürich, Schweiz", "unit": "celsius", "days": 14, "note": "naïve ☀️ check"}',
)
