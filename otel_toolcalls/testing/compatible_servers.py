"""What OpenAI-compatible servers send on the Chat Completions wire where it differs from OpenAI.

Each builder returns the chunks (dicts) of one streamed response, laid out as the issue it cites
reports that server's stream; ``script`` writes them as SSE, one socket write per chunk, those
holding multi-byte text cut inside a character. Replay them against your own consumer:

    fake.enqueue(script(sglang_shared_index([call_a, call_b])))
    client.chat.completions.create(..., stream=True)

Arguments are cut at awkward places (``ToolCall.pieces``) unless the call gives its fragments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._fragments import split_mid_character, sse
from ._server import Script
from .openai_chat import MODEL, ToolCall


def chunk(
    tool_calls: Sequence[dict[str, Any]] = (),
    *,
    finish_reason: str | None = None,
    model: str = MODEL,
    response_id: str = "chatcmpl-compatible",
) -> dict[str, Any]:
    """One chunk whose delta holds ``tool_calls`` (entries as the server writes them)."""
    delta: dict[str, Any] = {"role": "assistant", "content": None}
    if tool_calls:
        delta["tool_calls"] = list(tool_calls)
    return {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": 1764500000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def entry(
    index: int | None,
    *,
    id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
    type: str | None = None,
) -> dict[str, Any]:
    """One ``tool_calls`` entry; a field given as None is left out of it (``id=""`` is written)."""
    out: dict[str, Any] = {}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
    if type is not None or name is not None:
        out["type"] = type or "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    out["function"] = function
    return out


def _finished(chunks: list[dict[str, Any]], finish_reason: str | None) -> list[dict[str, Any]]:
    """The response's chunks, then (unless None) the chunk with its finish reason."""
    return chunks if finish_reason is None else [*chunks, chunk(finish_reason=finish_reason)]


def _one_after_another(
    calls: Sequence[ToolCall],
    *,
    index_of: Any,
    start_id: Any,
    next_id: Any,
    finish_reason: str | None,
    names_repeated: bool = False,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for position, call in enumerate(calls):
        index = index_of(position, call)
        out.append(chunk([entry(index, id=start_id(position, call), name=call.name, arguments="")]))
        name = call.name if names_repeated else None
        for piece in call.pieces():
            out.append(chunk([entry(index, id=next_id(position, call), name=name, arguments=piece)]))
    return _finished(out, finish_reason)


def sglang_shared_index(
    calls: Sequence[ToolCall], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """SGLang: every call on index 0, told apart only by ids ``'0'``, ``'1'``... repeated on each
    of its deltas (the shape recorded in InternLM/lmdeploy #3412; sgl-project/sglang #7048, #6310)."""
    return _one_after_another(
        calls,
        index_of=lambda position, call: 0,
        start_id=lambda position, call: str(position),
        next_id=lambda position, call: str(position),
        finish_reason=finish_reason,
    )


def sglang_ids_only_on_index_0(
    calls: Sequence[ToolCall], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """SGLang: the call on index 0 has its id, the calls on index 1 and later none
    (sgl-project/sglang #7048, "Missing tool call id if tool call index > 0")."""
    return _one_after_another(
        calls,
        index_of=lambda position, call: position,
        start_id=lambda position, call: call.id if position == 0 else None,
        next_id=lambda position, call: None,
        finish_reason=finish_reason,
    )


def vllm_empty_continuation_ids(
    calls: Sequence[ToolCall], *, shared_index: bool = False, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """vLLM (and DashScope): continuation deltas carry ``"id": ""`` and ``"type": "function"``;
    ``shared_index``: parallel calls all on index 0, as vLLM has streamed them (InternLM/lmdeploy
    #3412; symfony/ai #2220 and anomalyco/opencode #40969 for the empty id)."""
    out: list[dict[str, Any]] = []
    for position, call in enumerate(calls):
        index = 0 if shared_index else position
        out.append(chunk([entry(index, id=call.id, name=call.name, arguments="", type="function")]))
        for piece in call.pieces():
            out.append(chunk([entry(index, id="", arguments=piece, type="function")]))
    return _finished(out, finish_reason)


def glm_id_in_first_chunk_only(
    calls: Sequence[ToolCall], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """GLM (z-ai, also relayed by Mistral and OpenRouter): id, type and name in a call's first delta
    only, its argument deltas bare (sigoden/aichat #1495, anomalyco/opencode #49692)."""
    return _one_after_another(
        calls,
        index_of=lambda position, call: position,
        start_id=lambda position, call: call.id,
        next_id=lambda position, call: None,
        finish_reason=finish_reason,
    )


def gemma_tool_position_index(
    calls: Sequence[ToolCall], tools: Sequence[str], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """SGLang's Gemma 4 parser: a call's index is its tool's position in the request's ``tools``
    (names here), not its place among the calls; two calls of one tool share an index, told apart
    by their ids (sgl-project/sglang #25073)."""
    return _one_after_another(
        calls,
        index_of=lambda position, call: list(tools).index(call.name),
        start_id=lambda position, call: call.id,
        next_id=lambda position, call: None,
        finish_reason=finish_reason,
    )


def ollama_shared_index_whole(
    calls: Sequence[ToolCall], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """Ollama's ``/v1``: each call whole in one delta, every one of them on index 0, each with its
    own id (ollama/ollama #15457)."""
    out = [chunk([entry(0, id=call.id, name=call.name, arguments=call.arguments)]) for call in calls]
    return _finished(out, finish_reason)


def interleaved(
    calls: Sequence[ToolCall], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """Parallel calls whose fragments alternate between their indexes, one entry per chunk
    (every call started first, then a fragment of each in turn)."""
    out = [chunk([entry(i, id=call.id, name=call.name, arguments="")]) for i, call in enumerate(calls)]
    pieces = [call.pieces() for call in calls]
    for step in range(max((len(p) for p in pieces), default=0)):
        for i, own in enumerate(pieces):
            if step < len(own):
                out.append(chunk([entry(i, arguments=own[step])]))
    return _finished(out, finish_reason)


def side_by_side(
    calls: Sequence[ToolCall], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """Several calls in one delta: the first chunk starts them all, each later chunk holds the next
    fragment of every call still going."""
    out = [chunk([entry(i, id=call.id, name=call.name, arguments="") for i, call in enumerate(calls)])]
    pieces = [call.pieces() for call in calls]
    for step in range(max((len(p) for p in pieces), default=0)):
        out.append(chunk([entry(i, arguments=own[step]) for i, own in enumerate(pieces) if step < len(own)]))
    return _finished(out, finish_reason)


def no_ids(
    calls: Sequence[ToolCall],
    *,
    shared_index: bool = False,
    names_repeated: bool = False,
    finish_reason: str | None = "tool_calls",
) -> list[dict[str, Any]]:
    """A server that sends no call id at all (continuedev/continue #13225 shows Ollama deltas with
    an index and no id); ``shared_index``: every call on index 0 as well (ollama/ollama #15457), so
    that nothing but the argument text tells the calls apart; ``names_repeated``: every delta names
    the tool, as Mistral's do."""
    return _one_after_another(
        calls,
        index_of=lambda position, call: 0 if shared_index else position,
        start_id=lambda position, call: None,
        next_id=lambda position, call: None,
        finish_reason=finish_reason,
        names_repeated=names_repeated,
    )


def poolside_changing_ids(
    calls: Sequence[ToolCall], *, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """Poolside: a call's first delta carries one id and its name, its argument deltas another id
    and no name (poolsideai/pool #9)."""
    return _one_after_another(
        calls,
        index_of=lambda position, call: position,
        start_id=lambda position, call: call.id,
        next_id=lambda position, call: f"{call.id}_continued",
        finish_reason=finish_reason,
    )


def cut_but_labelled(call: ToolCall, keep: int, *, finish_reason: str = "tool_calls") -> list[dict[str, Any]]:
    """A call whose arguments stop after ``keep`` characters, then a finish reason that calls it
    complete: vLLM's ``tool_calls`` on a ``max_tokens`` cut (vllm-project/vllm #53269); Gemini's
    OpenAI-compatible endpoint says ``stop`` (googleapis/python-genai #2868)."""
    cut = ToolCall(name=call.name, id=call.id, arguments=call.arguments[:keep])
    if call.fragments is not None:
        # The given fragments, up to the cut.
        pieces, total = [], 0
        for piece in call.fragments:
            if total >= keep:
                break
            pieces.append(piece[: keep - total])
            total += len(pieces[-1])
        cut.fragments = pieces
    return glm_id_in_first_chunk_only([cut], finish_reason=finish_reason)


def script(chunks: Sequence[dict[str, Any]], *, done: bool = True, **options: Any) -> Script:
    """The chunks as SSE, one write each (cut inside its first multi-byte character, if any);
    ``done``: ``data: [DONE]`` last (some servers end without it)."""
    writes: list[bytes] = []
    for payload in chunks:
        writes.extend(split_mid_character(sse(payload)))
    if done:
        writes.append(sse("[DONE]"))
    return Script(writes, **options)
