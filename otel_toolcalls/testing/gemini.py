"""Gemini ``:streamGenerateContent?alt=sse`` (Developer API and Vertex AI): SSE events, each one
``GenerateContentResponse`` chunk, written one per socket write.

Function calls come whole (``functionCall {name, args, id}``) or, on Vertex with
``stream_function_call_arguments``, as a run: a part with the name and ``willContinue: true``,
parts holding ``partialArgs`` entries (string values cut at awkward places, numbers, booleans,
nulls), and a last part without ``willContinue``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._fragments import awkward_split, split_mid_character, sse
from ._server import Script

MODEL = "gemini-2.5-flash"
RESPONSE_ID = "resp-gemini-fake"


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def whole_call(name: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


@dataclass
class Partial:
    """One ``partialArgs`` entry: ``value`` is a str, int/float, bool or None (null)."""

    path: str
    value: Any
    will_continue: bool = False

    def wire(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"jsonPath": self.path}
        value = self.value
        if isinstance(value, bool):
            entry["boolValue"] = value
        elif value is None:
            entry["nullValue"] = "NULL_VALUE"
        elif isinstance(value, (int, float)):
            entry["numberValue"] = value
        else:
            entry["stringValue"] = value
        if self.will_continue:
            entry["willContinue"] = True
        return entry

    def size(self) -> int:
        """The UTF-8 length the package must report for this fragment."""
        if isinstance(self.value, str):
            return len(self.value.encode("utf-8"))
        return len(json.dumps(self.value))


def partials_for(arguments: dict[str, Any]) -> list[Partial]:
    """Each top-level value as fragments: strings cut at awkward places, other values whole."""
    out: list[Partial] = []
    for key, value in arguments.items():
        if isinstance(value, str):
            pieces = awkward_split(value) or [value]
            out.extend(Partial(f"$.{key}", p, i < len(pieces) - 1) for i, p in enumerate(pieces))
        else:
            out.append(Partial(f"$.{key}", value))
    return out


def streamed_call(name: str, partials: Sequence[Partial], call_id: str | None = None) -> list[dict[str, Any]]:
    """A Vertex run of parts, one chunk each: start, one per fragment, end."""
    start: dict[str, Any] = {"name": name, "willContinue": True}
    if call_id is not None:
        start["id"] = call_id
    parts = [{"functionCall": start}]
    parts += [{"functionCall": {"partialArgs": [p.wire()], "willContinue": True}} for p in partials]
    parts.append({"functionCall": {}})
    return parts


def chunk(
    parts: Sequence[dict[str, Any]] = (),
    *,
    finish_reason: str | None = None,
    index: int = 0,
    usage: dict[str, int] | None = None,
    model: str = MODEL,
    response_id: str = RESPONSE_ID,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": index}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": response_id}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


USAGE: dict[str, int] = {"promptTokenCount": 12, "candidatesTokenCount": 30, "totalTokenCount": 42}


def one_part_each(
    parts: Sequence[dict[str, Any]],
    *,
    finish_reason: str | None = "STOP",
    usage: dict[str, int] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """One chunk per part; the finish reason (and the usage, ``USAGE`` by default: a
    ``usageMetadata`` with ``thoughtsTokenCount`` / ``cachedContentTokenCount`` where the model
    thought or a cache served the prompt) rides on the last one, as Gemini sends it."""
    chunks = [chunk([p], **options) for p in parts]
    if finish_reason is not None:
        usage = USAGE if usage is None else usage
        if chunks:
            last = chunks[-1]["candidates"][0]
            last["finishReason"] = finish_reason
            chunks[-1]["usageMetadata"] = usage
        else:
            chunks.append(chunk(finish_reason=finish_reason, usage=usage, **options))
    return chunks


def script_for(
    chunks: Sequence[dict[str, Any]],
    *,
    cut_after: int | None = None,
    cut_inside: bool = True,
    split_characters: bool = True,
    **script: Any,
) -> Script:
    """One SSE event per write, multi-byte events written in two halves cut inside a character.
    ``cut_after``: the connection drops after that many chunks, in the middle of the next one's
    JSON when ``cut_inside``."""
    writes: list[bytes] = []
    for i, body in enumerate(chunks):
        data = sse(body)
        if cut_after is not None and i >= cut_after:
            if cut_inside:
                writes.append(data[: len(data) // 2])
            break
        writes.extend(split_mid_character(data) if split_characters else [data])
    return Script(writes, end="cut" if cut_after is not None else "done", **script)


def error_event(code: int = 500, status: str = "INTERNAL", message: str = "internal error") -> dict[str, Any]:
    """An error object the server writes into the stream after it has started."""
    return {"error": {"code": code, "message": message, "status": status}}
