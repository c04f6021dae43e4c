"""Anthropic Messages SSE: tool-use streams fragmented, paced, cut, truncated, and error events.

``events_for`` lays out a message (text and tool blocks, stop reason); ``script_for`` writes it one
SSE event per socket write, optionally cutting the connection after some events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._fragments import pieces_of, split_mid_character, sse
from ._server import Script

MODEL = "claude-sonnet-4-6"


@dataclass
class ToolUse:
    name: str
    arguments: str
    id: str = "toolu_01"
    # "tool_use", "server_tool_use" or "mcp_tool_use".
    type: str = "tool_use"
    # Explicit fragments; by default the arguments are cut at awkward places.
    fragments: list[str] | None = None
    # Leave out the block's content_block_stop (a stream cut at an event boundary, a truncated block).
    stop: bool = True

    def pieces(self) -> list[str]:
        return pieces_of(self.arguments, self.fragments)


@dataclass
class Text:
    text: str


Block = ToolUse | Text
Event = tuple[str, dict[str, Any]]


# message_start's usage: the input counts (Anthropic's input_tokens excludes the cache reads and
# writes) and a first output count; message_delta's: the cumulative output count.
START_USAGE: dict[str, Any] = {
    "input_tokens": 25,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 1,
    "service_tier": "standard",
}
DELTA_USAGE: dict[str, Any] = {"output_tokens": 42}


def message_start(
    *, message_id: str = "msg_fake_01", model: str = MODEL, usage: dict[str, Any] | None = None
) -> Event:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": START_USAGE if usage is None else usage,
            },
        },
    )


def block_start(index: int, block: Block) -> Event:
    content: dict[str, Any]
    if isinstance(block, Text):
        content = {"type": "text", "text": ""}
    else:
        content = {"type": block.type, "id": block.id, "name": block.name, "input": {}}
        if block.type == "mcp_tool_use":
            content["server_name"] = "fake-mcp"
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": content})


def json_delta(index: int, partial_json: str) -> Event:
    return (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": partial_json},
        },
    )


def text_delta(index: int, text: str) -> Event:
    return (
        "content_block_delta",
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
    )


def block_stop(index: int) -> Event:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str | None, usage: dict[str, Any] | None = None) -> Event:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": DELTA_USAGE if usage is None else usage,
        },
    )


def message_stop() -> Event:
    return ("message_stop", {"type": "message_stop"})


def ping() -> Event:
    return ("ping", {"type": "ping"})


def error(error_type: str = "overloaded_error", message: str = "Overloaded") -> Event:
    return ("error", {"type": "error", "error": {"type": error_type, "message": message}})


def events_for(
    blocks: Sequence[Block],
    *,
    stop_reason: str | None = "tool_use",
    final: bool = True,
    pings: bool = True,
    model: str = MODEL,
    start_usage: dict[str, Any] | None = None,
    delta_usage: dict[str, Any] | None = None,
) -> list[Event]:
    """message_start, each block (start, deltas, stop), message_delta, message_stop.

    ``stop_reason`` None leaves out message_delta; ``final`` False leaves out message_stop (a body
    that ends at an event boundary before the end). The usages default to START_USAGE / DELTA_USAGE."""
    events: list[Event] = [message_start(model=model, usage=start_usage)]
    if pings:
        events.append(ping())
    for index, block in enumerate(blocks):
        events.append(block_start(index, block))
        if isinstance(block, Text):
            events.append(text_delta(index, block.text))
            events.append(block_stop(index))
            continue
        events.extend(json_delta(index, piece) for piece in block.pieces())
        if block.stop:
            events.append(block_stop(index))
    if stop_reason is not None:
        events.append(message_delta(stop_reason, delta_usage))
    if final:
        events.append(message_stop())
    return events


def script_for(
    events: Sequence[Event],
    *,
    cut_after: int | None = None,
    pace: float = 0.0,
    split_characters: bool = True,
    **script: Any,
) -> Script:
    """One SSE event per socket write; events holding multi-byte text are written in two halves,
    cut inside a character. ``cut_after``: the connection drops after that many events."""
    writes: list[bytes] = []
    for i, (name, data) in enumerate(events):
        if cut_after is not None and i >= cut_after:
            break
        raw = sse(data, event=name)
        writes.extend(split_mid_character(raw) if split_characters else [raw])
    return Script(writes, pace=pace, end="cut" if cut_after is not None else "done", **script)


def tool_use_script(
    blocks: Sequence[Block], *, stop_reason: str | None = "tool_use", **options: Any
) -> Script:
    return script_for(events_for(blocks, stop_reason=stop_reason), **options)


WEATHER = ToolUse(
    name="get_weather",
    id="toolu_weather_01",
    arguments='{"location": "Zürich, Schweiz", "unit": "celsius", "days": 14, "note": "naïve ☀️ check"}',
)


def bedrock_script_for(events: Sequence[Event], *, cut_after: int | None = None, **script: Any) -> Script:
    """The same events as Bedrock's InvokeModelWithResponseStream sends them to ``AnthropicBedrock``:
    AWS event-stream ``chunk`` frames whose ``bytes`` are the base64 of each event's JSON, one frame
    per socket write, each frame split in two writes (inside a multi-byte character where it has one)."""
    import base64
    import json

    from .eventstream import event as frame

    writes: list[bytes] = []
    for i, (_, data) in enumerate(events):
        if cut_after is not None and i >= cut_after:
            break
        raw = json.dumps(data, ensure_ascii=False).encode("utf-8")
        encoded = frame("chunk", {"bytes": base64.b64encode(raw).decode("ascii")})
        writes.extend((encoded[: len(encoded) // 2], encoded[len(encoded) // 2 :]))
    return Script(
        writes,
        content_type="application/vnd.amazon.eventstream",
        end="cut" if cut_after is not None else "done",
        **script,
    )
