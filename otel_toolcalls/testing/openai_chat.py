"""OpenAI Chat Completions SSE: tool-call streams fragmented, paced, cut and truncated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._fragments import pieces_of, split_mid_character, sse
from ._server import Script

MODEL = "gpt-4o-mini"


@dataclass
class ToolCall:
    name: str
    arguments: str
    id: str | None = "call_1"
    # Explicit fragments; by default the arguments are cut at awkward places.
    fragments: list[str] | None = None
    # Put the first fragment in the block-start delta (as some OpenAI-compatible servers do).
    args_in_start: bool = False

    def pieces(self) -> list[str]:
        return pieces_of(self.arguments, self.fragments)


@dataclass
class Event:
    """One chunk of the stream: a block start, an argument fragment, text, or a finish reason."""

    index: int = 0
    name: str | None = None
    id: str | None = None
    arguments: str | None = None
    content: str | None = None
    finish_reason: str | None = None
    choice: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def chunk(event: Event, *, response_id: str = "chatcmpl-fake", model: str = MODEL) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if event.content is not None:
        delta["content"] = event.content
    if event.name is not None or event.arguments is not None or event.id is not None:
        call: dict[str, Any] = {"index": event.index}
        function: dict[str, Any] = {}
        if event.id is not None:
            call["id"] = event.id
        if event.name is not None:
            call["type"] = "function"
            function["name"] = event.name
        if event.arguments is not None:
            function["arguments"] = event.arguments
        call["function"] = function
        delta["tool_calls"] = [call]
    return {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": 1764500000,
        "model": model,
        "choices": [{"index": event.choice, "delta": delta, "finish_reason": event.finish_reason}],
        **event.extra,
    }


def events_for(
    calls: Sequence[ToolCall], *, text: str | None = None, finish_reason: str | None = "tool_calls"
) -> list[Event]:
    """The calls one after another (OpenAI's order), each start then its fragments."""
    events: list[Event] = []
    if text:
        events.append(Event(content=text))
    for index, call in enumerate(calls):
        pieces = call.pieces()
        first = pieces[0] if call.args_in_start and pieces else ""
        events.append(Event(index=index, id=call.id, name=call.name, arguments=first))
        for piece in pieces[1:] if call.args_in_start else pieces:
            events.append(Event(index=index, arguments=piece))
    if finish_reason is not None:
        events.append(Event(finish_reason=finish_reason))
    return events


USAGE: dict[str, Any] = {
    "prompt_tokens": 19,
    "completion_tokens": 10,
    "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 6, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 4,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}


def usage_chunk(usage: dict[str, Any], *, model: str = MODEL) -> dict[str, Any]:
    """The last chunk of a stream asked with ``stream_options={"include_usage": True}``: no choices."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1764500000,
        "model": model,
        "choices": [],
        "usage": usage,
    }


def azure_first_chunk() -> dict[str, Any]:
    """What Azure OpenAI sends before the first real chunk: the prompt's content-filter results,
    with an empty id and model."""
    severity = {"filtered": False, "severity": "safe"}
    filters = {"hate": severity, "self_harm": severity, "sexual": severity, "violence": severity}
    return {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters}],
    }


def script_for(
    events: Sequence[Event],
    *,
    cut_after: int | None = None,
    done: bool = True,
    pace: float = 0.0,
    model: str = MODEL,
    split_characters: bool = True,
    usage: dict[str, Any] | None = None,
    azure: bool = False,
    **script: Any,
) -> Script:
    """One SSE event per socket write; events holding multi-byte text are written in two halves,
    cut inside a character. ``cut_after``: the connection drops after that many events.
    ``usage``: the stream was asked to include usage (``"usage": null`` on every chunk, then a usage
    chunk); ``azure``: Azure's filter-results chunk comes first."""
    payloads = [chunk(event, model=model) for event in events]
    if usage is not None:
        for payload in payloads:
            payload["usage"] = None
        payloads.append(usage_chunk(usage, model=model))
    if azure:
        payloads.insert(0, azure_first_chunk())
    writes: list[bytes] = []
    for i, payload in enumerate(payloads):
        if cut_after is not None and i >= cut_after:
            break
        data = sse(payload)
        writes.extend(split_mid_character(data) if split_characters else [data])
    if cut_after is None and done:
        writes.append(sse("[DONE]"))
    return Script(writes, pace=pace, end="cut" if cut_after is not None else "done", **script)


def tool_call_script(
    calls: Sequence[ToolCall],
    *,
    finish_reason: str | None = "tool_calls",
    text: str | None = None,
    **options: Any,
) -> Script:
    return script_for(events_for(calls, text=text, finish_reason=finish_reason), **options)


WEATHER = ToolCall(
    name="get_weather",
    id="call_weather_1",
    arguments='{"location": "Zürich, Schweiz", "unit": "celsius", "days": 14, "note": "naïve ☀️ check"}',
)

PARALLEL = [
    ToolCall(name="get_weather", id="call_par_1", arguments='{"city": "Zürich", "days": 3}'),
    ToolCall(name="get_time", id="call_par_2", arguments='{"timezone": "Europe/Zurich", "offset": 120}'),
]

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a location.",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    },
}


def request(**overrides: Any) -> dict[str, Any]:
    """Keyword arguments of a streamed ``chat.completions.create`` call with one tool."""
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Weather in Zürich?"}],
        "tools": [WEATHER_TOOL],
        "stream": True,
        **overrides,
    }


def legacy_error(message: str = "The server had an error", error_type: str = "server_error") -> bytes:
    """The in-stream error payload older OpenAI-compatible servers send instead of a chunk."""
    return sse({"error": {"message": message, "type": error_type, "code": None}})


def raw_script(payloads: Sequence[dict[str, Any] | bytes], *, done: bool = True, **script: Any) -> Script:
    """A stream of hand-made payloads (dicts become SSE data), one write each: for shapes the
    builders above do not make (``"arguments": null``, chunks without ``choices``)."""
    writes = [p if isinstance(p, bytes) else sse(p) for p in payloads]
    if done:
        writes.append(sse("[DONE]"))
    return Script(writes, **script)


def arguments_by_index(chunks: Sequence[Any]) -> dict[tuple[int, int], str]:
    """The argument text the SDK delivered, per (choice, tool-call index): what a consumer joins."""
    joined: dict[tuple[int, int], str] = {}
    for chunk_ in chunks:
        for choice in getattr(chunk_, "choices", None) or ():
            for call in (choice.delta.tool_calls if choice.delta else None) or ():
                key = (choice.index, call.index)
                piece = call.function.arguments if call.function else None
                joined[key] = joined.get(key, "") + (piece or "")
    return joined
