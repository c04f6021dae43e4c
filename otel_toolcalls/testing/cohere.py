"""Cohere v2 chat SSE (``POST /v2/chat`` with ``stream: true``): typed events, one per write.

``message-start``, ``tool-plan-delta``, then per call ``tool-call-start`` (id, name, empty
arguments), ``tool-call-delta`` per argument fragment, ``tool-call-end``; text comes as
``content-start`` / ``content-delta`` / ``content-end``; ``message-end`` carries the finish reason
(``COMPLETE``, ``TOOL_CALL``, ``MAX_TOKENS``, ``ERROR``, ``TIMEOUT``, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._fragments import split_mid_character, sse
from ._server import Script
from .openai_chat import ToolCall

MODEL = "command-a-03-2025"


def event(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def message_start(response_id: str = "c14c80c3-18eb-4519-9460-6c92edd8cfb4") -> bytes:
    delta = {
        "message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    }
    return event("message-start", id=response_id, delta=delta)


def tool_plan_delta(text: str) -> bytes:
    return event("tool-plan-delta", delta={"message": {"tool_plan": text}})


def tool_call_start(index: int, call: ToolCall) -> bytes:
    tool_call = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
    return event("tool-call-start", index=index, delta={"message": {"tool_calls": tool_call}})


def tool_call_delta(index: int, arguments: str) -> bytes:
    tool_calls = {"function": {"arguments": arguments}}
    return event("tool-call-delta", index=index, delta={"message": {"tool_calls": tool_calls}})


def tool_call_end(index: int) -> bytes:
    return event("tool-call-end", index=index)


def text_block(index: int, text: str) -> list[bytes]:
    return [
        event("content-start", index=index, delta={"message": {"content": {"type": "text", "text": ""}}}),
        event("content-delta", index=index, delta={"message": {"content": {"text": text}}}),
        event("content-end", index=index),
    ]


USAGE: dict[str, Any] = {
    "billed_units": {"input_tokens": 12, "output_tokens": 40},
    "tokens": {"input_tokens": 900, "output_tokens": 45},
}


def message_end(finish_reason: str, error: str | None = None, usage: dict[str, Any] | None = None) -> bytes:
    delta: dict[str, Any] = {"finish_reason": finish_reason, "usage": USAGE if usage is None else usage}
    if error is not None:
        delta["error"] = error
    return event("message-end", delta=delta)


def events_for(
    calls: Sequence[ToolCall],
    *,
    finish_reason: str | None = "TOOL_CALL",
    plan: str | None = "I will look that up.",
    end_last: bool = True,
    text_after: str | None = None,
    usage: dict[str, Any] | None = None,
) -> list[bytes]:
    """The calls one after another; ``end_last=False`` leaves the last call without its
    ``tool-call-end`` (the limit hit mid-arguments); ``text_after``: a text block after the calls."""
    out = [message_start()]
    if plan:
        out.append(tool_plan_delta(plan))
    for index, call in enumerate(calls):
        out.append(tool_call_start(index, call))
        out.extend(tool_call_delta(index, piece) for piece in call.pieces())
        if end_last or index < len(calls) - 1:
            out.append(tool_call_end(index))
    if text_after is not None:
        out.extend(text_block(len(calls), text_after))
    if finish_reason is not None:
        out.append(message_end(finish_reason, usage=usage))
    return out


def script_for(
    events: Sequence[bytes], *, cut_after: int | None = None, pace: float = 0.0, **script: Any
) -> Script:
    """One event per socket write, multi-byte text written in two halves cut inside a character;
    ``cut_after``: the connection drops after that many events."""
    writes: list[bytes] = []
    for i, data in enumerate(events):
        if cut_after is not None and i >= cut_after:
            break
        writes.extend(split_mid_character(data))
    return Script(writes, pace=pace, end="cut" if cut_after is not None else "done", **script)


def tool_call_script(calls: Sequence[ToolCall], **options: Any) -> Script:
    keys = ("finish_reason", "plan", "end_last", "text_after", "usage")
    built = {k: options.pop(k) for k in keys if k in options}
    return script_for(events_for(calls, **built), **options)
