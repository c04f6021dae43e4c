"""Mistral chat SSE: the OpenAI chat shape, with Mistral's habits.

Every tool-call delta repeats the function name; the first carries the call id, the later ones the
string ``"null"``. ``whole=True`` writes each call whole in one delta, all of them side by side in
one chunk without an index, as Mistral has done for parallel calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._fragments import split_mid_character, sse
from ._server import Script
from .openai_chat import ToolCall

MODEL = "mistral-large-latest"


# Mistral writes the usage on the finish chunk.
USAGE: dict[str, int] = {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}


def _chunk(delta: dict[str, Any], finish_reason: str | None = None, model: str = MODEL) -> dict[str, Any]:
    return {
        "id": "cmpl-fake-mistral",
        "object": "chat.completion.chunk",
        "created": 1764500000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def chunks_for(
    calls: Sequence[ToolCall],
    *,
    finish_reason: str | None = "tool_calls",
    whole: bool = False,
    text: str | None = None,
    model: str = MODEL,
    usage: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    out = [_chunk({"role": "assistant", "content": text or ""}, model=model)]
    if whole:
        tool_calls = [
            {"id": call.id or "null", "function": {"name": call.name, "arguments": call.arguments}}
            for call in calls
        ]
        out.append(_chunk({"content": "", "tool_calls": tool_calls}, model=model))
    else:
        for index, call in enumerate(calls):
            for n, piece in enumerate(["", *call.pieces()]):
                tool_call = {
                    "id": (call.id or "null") if n == 0 else "null",
                    "function": {"name": call.name, "arguments": piece},
                    "index": index,
                }
                out.append(_chunk({"content": "", "tool_calls": [tool_call]}, model=model))
    if finish_reason is not None:
        out.append(_chunk({"content": ""}, finish_reason, model=model))
        if usage is not None:
            out[-1]["usage"] = usage
    return out


def tool_call_script(
    calls: Sequence[ToolCall],
    *,
    finish_reason: str | None = "tool_calls",
    whole: bool = False,
    cut_after: int | None = None,
    pace: float = 0.0,
    usage: dict[str, Any] | None = None,
    **script: Any,
) -> Script:
    """One SSE event per socket write, multi-byte text written in two halves cut inside a character;
    ``cut_after``: the connection drops after that many events; ``usage`` rides on the finish chunk."""
    chunks = chunks_for(calls, finish_reason=finish_reason, whole=whole, usage=usage)
    writes: list[bytes] = []
    for i, chunk in enumerate(chunks):
        if cut_after is not None and i >= cut_after:
            break
        writes.extend(split_mid_character(sse(chunk)))
    if cut_after is None:
        writes.append(sse("[DONE]"))
    return Script(writes, pace=pace, end="cut" if cut_after is not None else "done", **script)
