"""Translator for google-genai ``GenerateContentResponse`` chunks: chunk -> core events.

Read by attribute access only: ``candidates[].content.parts[].function_call`` and
``candidates[].finish_reason``. Arguments arrive parsed, so a whole ``function_call`` part is
never measured (no serialization to count bytes); only Vertex ``partial_args`` entries are
fragments. One call at a time is open per candidate: the block key is the candidate index.
"""

from __future__ import annotations

import logging
from typing import Any

from otel_toolcalls._core import usage
from otel_toolcalls._core.calls import classify
from otel_toolcalls._core.sink import Sink

_log = logging.getLogger(__name__)

# JSON literals of the non-string partial values: their size is the length of this text.
_TRUE, _FALSE, _NULL = "true", "false", "null"


def reason_text(reason: Any) -> str:
    """``FinishReason.MAX_TOKENS`` -> ``"MAX_TOKENS"``; a value the SDK does not know stays a string."""
    return str(getattr(reason, "value", reason))


def translate_chunk(state: Sink, chunk: Any) -> None:
    if state.response_id is None:
        state.response_id = chunk.response_id or ""
        state.response_model = chunk.model_version
    candidates = chunk.candidates
    if not candidates:
        # {"promptFeedback": {"blockReason": "SAFETY"}}: the prompt was blocked, nothing was generated.
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            state.settle(reason_text(feedback.block_reason))
            state.usage = usage_of(chunk.usage_metadata)
            state.final_event()
        return
    finished = False
    for candidate in candidates:
        finished = _candidate(state, candidate) or finished
    if finished:
        # Every chunk may carry usageMetadata, counted so far; the finishing chunk's is the total.
        # {"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":30,"totalTokenCount":42}}
        state.usage = usage_of(chunk.usage_metadata)


def _candidate(state: Sink, candidate: Any) -> bool:
    """Translates one candidate; True when it carried its finish reason."""
    choice = candidate.index or 0
    finish = candidate.finish_reason
    reason = reason_text(finish) if finish is not None else None
    content = candidate.content
    parts = content.parts if content is not None else None
    if parts:
        # A finish reason that aborts (MAX_TOKENS, SAFETY, MALFORMED_FUNCTION_CALL) in the same chunk
        # as a call speaks of that call: it is left open for settle() below to abort.
        aborts = reason is not None and classify(reason) is not None
        for part in parts:
            call = part.function_call
            if call is not None:
                _function_call(state, call, choice=choice, aborts=aborts)
    if reason is None:
        return False
    # {"candidates":[{"content":{...},"finishReason":"MAX_TOKENS"}]}
    state.settle(reason, choice=choice)
    state.final_event()
    return True


def _function_call(state: Sink, call: Any, *, choice: int, aborts: bool) -> None:
    key = choice
    if not state.is_open(key) or call.args is not None or _new_id(state.call_id_of(key), call.id):
        # {"functionCall": {"name": "get_weather", "args": {"city": "Zürich"}, "id": "fc_1"}}  (whole)
        # {"functionCall": {"name": "get_weather", "willContinue": true}}  (Vertex: a run starts)
        name = call.name
        if not name:
            _log.debug("function_call part without a name and no call open for candidate %r", key)
            return
        whole = call.args is not None
        # partial_args fragments are values, not a document's text: no cut can be seen in them.
        state.block_started(
            key,
            name=name,
            call_id=call.id or None,
            index=state.tool_calls,
            choice=choice,
            whole=whole,
            free_form=True,
        )
    partial_args = call.partial_args
    if partial_args:
        # {"functionCall": {"partialArgs": [{"jsonPath": "$.city", "stringValue": "Zü"}]}}
        for arg in partial_args:
            _partial_arg(state, key, arg)
    if call.will_continue or aborts:
        return
    # The whole part, or the last of a run ({"functionCall": {}} / "willContinue": false).
    state.block_completed(key)


def _partial_arg(state: Sink, key: int, arg: Any) -> None:
    text = arg.string_value
    if text is None:
        text = _literal(arg)
    state.fragment(key, text)


def _literal(arg: Any) -> str | None:
    """The JSON text of a number, boolean or null value (sizes them as they were on the wire)."""
    number = arg.number_value
    if number is not None:
        # The SDK hands numbers over as floats: 14 arrived as the two bytes "14", not "14.0".
        if number.is_integer() and abs(number) < 2**53:
            return str(int(number))
        return repr(number)
    flag = arg.bool_value
    if flag is not None:
        return _TRUE if flag else _FALSE
    if arg.null_value is not None:
        return _NULL
    return None


def _new_id(open_id: str | None, part_id: Any) -> bool:
    # A continuation part may repeat name and id; only a different id starts a new call.
    return bool(part_id) and open_id is not None and part_id != open_id


def usage_of(metadata: Any) -> usage.Usage | None:
    # {"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":30,"thoughtsTokenCount":5,
    #  "cachedContentTokenCount":4,"toolUsePromptTokenCount":2,"totalTokenCount":49}}
    if metadata is None:
        return None
    thoughts = usage.count(getattr(metadata, "thoughts_token_count", None))
    prompt = usage.count(getattr(metadata, "prompt_token_count", None))
    candidates = usage.count(getattr(metadata, "candidates_token_count", None))
    return usage.make(
        input_tokens=usage.total(prompt, usage.count(getattr(metadata, "tool_use_prompt_token_count", None))),
        output_tokens=usage.total(candidates, thoughts) if candidates is not None else None,
        cache_read=getattr(metadata, "cached_content_token_count", None),
        reasoning=thoughts,
    )
