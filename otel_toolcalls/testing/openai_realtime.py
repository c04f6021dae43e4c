"""OpenAI Realtime over WebSocket: function calls fragmented, paced, dropped, cancelled, truncated,
failed, several responses on one connection.

``response_events`` builds one response's server events in the order the API sends them;
``turn`` makes them a script step list that waits for the client's ``response.create`` first
(optionally cut: the socket drops after some number of them, or it waits for the client's
``response.cancel`` mid-arguments); ``frames`` puts ``session.created`` and the turns together as
the ``Frames`` one connection plays (``fake.websocket.enqueue(...)``).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._fragments import pieces_of
from ._websocket import Await, Close, Drop, Frames, Step

__all__ = [
    "MODEL", "USAGE", "WEATHER", "Await", "Close", "Drop", "Frames", "ToolCall", "error_event",
    "frames", "response_events", "session_created", "turn",
]  # fmt: skip

MODEL = "gpt-realtime"

USAGE: dict[str, Any] = {
    "total_tokens": 160,
    "input_tokens": 120,
    "output_tokens": 40,
    "input_token_details": {"text_tokens": 100, "audio_tokens": 20, "cached_tokens": 64},
    "output_token_details": {"text_tokens": 40, "audio_tokens": 0},
}

_ids = itertools.count(1)


def _event_id() -> str:
    return f"event_{next(_ids)}"


@dataclass
class ToolCall:
    name: str
    arguments: str
    call_id: str | None = "call_1"
    item_id: str | None = None  # default: derived from the response and output index
    kind: str = "function_call"  # | "mcp_call"
    fragments: list[str] | None = None  # default: the arguments cut at awkward places
    # Status of its response.output_item.done: "completed", "incomplete"; None: no done events.
    status: str | None = "completed"

    def pieces(self) -> list[str]:
        return pieces_of(self.arguments, self.fragments)


def session_created(model: str = MODEL) -> dict[str, Any]:
    session = {"type": "realtime", "object": "realtime.session", "id": "sess_fake_1", "model": model,
               "output_modalities": ["audio"], "tools": []}  # fmt: skip
    return {"type": "session.created", "event_id": _event_id(), "session": session}


def _response(response_id: str, status: str, output: Sequence[Any] = (), **fields: Any) -> dict[str, Any]:
    return {"id": response_id, "object": "realtime.response", "conversation_id": "conv_fake_1",
            "status": status, "status_details": None, "output": list(output), "usage": None,
            "output_modalities": ["audio"], **fields}  # fmt: skip


def _item(call: ToolCall, item_id: str, *, done: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"id": item_id, "object": "realtime.item", "type": call.kind, "name": call.name,
                            "arguments": call.arguments if done else ""}  # fmt: skip
    if call.kind == "function_call":
        item["call_id"] = call.call_id
        item["status"] = (call.status or "in_progress") if done else "in_progress"
    else:
        item["server_label"] = "fake_mcp"
    return item


def _call_events(call: ToolCall, response_id: str, index: int) -> list[dict[str, Any]]:
    item_id = call.item_id or f"item_{response_id}_{index}"
    where = {"response_id": response_id, "item_id": item_id, "output_index": index}
    delta = f"response.{'function_call' if call.kind == 'function_call' else 'mcp_call'}_arguments"
    head = {"response_id": response_id, "output_index": index}
    events = [{"type": "response.output_item.added", **head, "item": _item(call, item_id, done=False)}]
    extra = {"call_id": call.call_id} if call.kind == "function_call" else {}
    events += [{"type": f"{delta}.delta", **where, **extra, "delta": piece} for piece in call.pieces()]
    if call.status is None:
        return events
    if call.status == "completed":
        events.append({"type": f"{delta}.done", **where, **extra, "arguments": call.arguments})
    events.append({"type": "response.output_item.done", **head, "item": _item(call, item_id, done=True)})
    return events


def _text_events(text: str, response_id: str, index: int) -> list[dict[str, Any]]:
    item = {"id": f"msg_{response_id}_{index}", "object": "realtime.item", "type": "message",
            "role": "assistant", "status": "in_progress", "content": []}  # fmt: skip
    where = {"response_id": response_id, "item_id": item["id"], "output_index": index, "content_index": 0}
    head = {"response_id": response_id, "output_index": index}
    done = {**item, "status": "completed", "content": [{"type": "output_text", "text": text}]}
    return [
        {"type": "response.output_item.added", **head, "item": item},
        {"type": "response.output_text.delta", **where, "delta": text},
        {"type": "response.output_text.done", **where, "text": text},
        {"type": "response.output_item.done", **head, "item": done},
    ]


def response_events(
    calls: Sequence[ToolCall],
    *,
    response_id: str = "resp_fake_1",
    text: str | None = None,
    end: str | None = "completed",
    reason: str | None = None,
    error_code: str = "server_error",
    usage: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One response: created, an optional text item, the calls, and ``response.done`` with status
    ``end`` (``completed``, ``incomplete`` / ``cancelled`` with ``reason``, ``failed`` with
    ``error_code``), or None for no ``response.done``."""
    events = [{"type": "response.created", "response": _response(response_id, "in_progress")}]
    blocks: list[Any] = ([text] if text else []) + list(calls)
    for index, block in enumerate(blocks):
        if isinstance(block, str):
            events += _text_events(block, response_id, index)
        else:
            events += _call_events(block, response_id, index)
    if end is not None:
        output = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        details: dict[str, Any] | None = None
        if end in ("incomplete", "cancelled"):
            details = {"type": end, "reason": reason}
        elif end == "failed":
            details = {"type": "failed", "error": {"type": "server_error", "code": error_code}}
        done = _response(response_id, end, output, status_details=details, usage=usage)
        events.append({"type": "response.done", "response": done})
    for event in events:
        event["event_id"] = _event_id()
    return copy.deepcopy(events)


def error_event(code: str = "invalid_value", kind: str = "invalid_request_error") -> dict[str, Any]:
    error = {"type": kind, "code": code, "message": "Invalid value.", "param": None, "event_id": None}
    return {"type": "error", "event_id": _event_id(), "error": error}


def turn(
    events: Sequence[dict[str, Any]],
    *,
    cut_after: int | None = None,
    cancel_after: int | None = None,
    close_after: int | None = None,
) -> list[Step]:
    """The server's side of one response: wait for ``response.create``, then its events. With
    ``cut_after`` the socket drops after that many of them; with ``close_after`` the server closes
    cleanly; with ``cancel_after`` the server waits for ``response.cancel`` there, then sends what
    a cancelled response still sends: the rest without the argument events."""
    steps: list[Step] = [Await("response.create")]
    for i, event in enumerate(events):
        if i == cut_after:
            return [*steps, Drop()]
        if i == close_after:
            return [*steps, Close()]
        if i == cancel_after:
            steps.append(Await("response.cancel"))
        if cancel_after is None or i < cancel_after or "_arguments." not in event["type"]:
            steps.append(event)
    return steps


def frames(*turns: Sequence[Step], model: str = MODEL, session: bool = True, **options: Any) -> Frames:
    """One connection: ``session.created`` (``session``: the Responses WebSocket sends none), then
    each turn's steps."""
    steps: list[Step] = [session_created(model)] if session else []
    for one in turns:
        steps += list(one)
    return Frames(steps, **options)


WEATHER = ToolCall(
    name="get_weather",
    call_id="call_weather_1",
    arguments='{"location": "Zürich, Schweiz", "unit": "celsius", "days": 14, "note": "naïve ☀️ check"}',
)
