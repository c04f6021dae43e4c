"""Ollama's native ``/api/chat`` stream: NDJSON, one JSON object per line, each line its own socket
write (multi-byte lines written in two halves, cut inside a character).

Tool calls arrive whole, arguments parsed, in ``message.tool_calls`` of a chunk of their own
(servers since 0.8 stream each as soon as it is parsed; older servers put them on the last chunk);
the last chunk has ``done: true``, ``done_reason`` and the token counts. Servers since 0.12 add
``id`` and ``function.index`` to each call (the ``ollama`` client drops both). An error after the
stream started is a line ``{"error": "..."}``: the client raises ``ollama.ResponseError`` on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._fragments import split_mid_character
from ._server import Script

MODEL = "qwen3:8b"
CREATED_AT = "2026-12-01T12:00:00.000000Z"
CONTENT_TYPE = "application/x-ndjson"


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    # What servers since 0.12 send; None: an older server's call (name and arguments only).
    id: str | None = "call_ollama_1"


def line(body: dict[str, Any]) -> bytes:
    """One NDJSON line, non-ASCII characters raw, as the Go server writes them."""
    return (json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def chunk(
    *,
    content: str = "",
    tool_calls: Sequence[ToolCall] = (),
    first_index: int = 0,
    model: str = MODEL,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [_call(c, first_index + i) for i, c in enumerate(tool_calls)]
    return {"model": model, "created_at": CREATED_AT, "message": message, "done": False}


def _call(call: ToolCall, index: int) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    wire: dict[str, Any] = {"function": function}
    if call.id is not None:
        wire["id"] = call.id
        function["index"] = index
    return wire


def done(done_reason: str | None = "stop", *, model: str = MODEL, **fields: Any) -> dict[str, Any]:
    """The last chunk: the reason and the counts (``prompt_eval_count`` is input, ``eval_count``
    output tokens)."""
    body: dict[str, Any] = {
        "model": model,
        "created_at": CREATED_AT,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "total_duration": 812_000_000,
        "load_duration": 21_000_000,
        "prompt_eval_count": 41,
        "prompt_eval_duration": 90_000_000,
        "eval_count": 23,
        "eval_duration": 650_000_000,
        **fields,
    }
    if done_reason is not None:
        body["done_reason"] = done_reason
    return body


def error(message: str = "an error was encountered while running the model") -> dict[str, Any]:
    """What the server writes in place of the next chunk when generation fails mid-stream."""
    return {"error": message}


def chunks_for(
    calls: Sequence[ToolCall],
    *,
    text: str | None = "Let me check.",
    done_reason: str | None = "stop",
    on_done: bool = False,
) -> list[dict[str, Any]]:
    """Some text, then each call in a chunk of its own (``on_done``: all of them on the last chunk,
    as servers before 0.8 send them), then the last chunk."""
    out = [chunk(content=text)] if text else []
    last = done(done_reason)
    if on_done and calls:
        last["message"] = chunk(tool_calls=calls)["message"]
    else:
        out += [chunk(tool_calls=[c], first_index=i) for i, c in enumerate(calls)]
    if done_reason is not None or on_done:
        out.append(last)
    return out


def script_for(
    bodies: Sequence[dict[str, Any] | bytes],
    *,
    cut_after: int | None = None,
    cut_inside: bool = True,
    split_characters: bool = True,
    **script: Any,
) -> Script:
    """One line per write. ``cut_after``: the connection drops after that many lines, in the middle
    of the next one when ``cut_inside`` (no newline reaches the client)."""
    writes: list[bytes] = []
    for i, body in enumerate(bodies):
        data = body if isinstance(body, bytes) else line(body)
        if cut_after is not None and i >= cut_after:
            if cut_inside:
                writes.append(data[: len(data) // 2])
            break
        writes.extend(split_mid_character(data) if split_characters else [data])
    end = "cut" if cut_after is not None else "done"
    return Script(writes, content_type=CONTENT_TYPE, end=end, **script)


NOT_FOUND = 'model "qwen3:8b" not found, try pulling it first'


def http_error(status: int = 404, message: str = NOT_FOUND) -> Script:
    """An error status before any stream: the body is one JSON object."""
    return Script([line({"error": message})], status=status, content_type="application/json")


WEATHER = ToolCall("get_weather", {"city": "Zürich", "unit": "celsius", "days": 14}, "call_weather_o1")
CLOCK = ToolCall("get_time", {"timezone": "Europe/Zürich"}, "call_time_o2")

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
