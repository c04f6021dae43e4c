"""Translator for OpenAI-Chat-shaped chunks (openai, groq, mistral, litellm): chunk -> core events.

A chunk is read by attribute access only: ``choices[].delta.tool_calls[]`` and
``choices[].finish_reason``. There is no per-call completion event: a choice's finish reason is
the completion event of every call open in that choice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from otel_toolcalls._core import replay, usage
from otel_toolcalls._core.sink import Sink

_log = logging.getLogger(__name__)


def _call_id(raw: Any) -> str | None:
    # Mistral sends the string "null" where it has no id; OpenAI-compatible servers send none.
    if not raw or raw == "null":
        return None
    return str(raw)


def _identify(state: Sink, chunk: Any) -> None:
    # Azure's first chunk (prompt_filter_results, no choices) has "id": "" and "model": "": the
    # first non-empty value of each counts.
    # {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[...]}
    if not state.response_id:
        state.response_id = getattr(chunk, "id", None) or None
    if not state.response_model:
        state.response_model = getattr(chunk, "model", None) or None


def _usage(state: Sink, chunk: Any) -> None:
    # stream_options={"include_usage": True}: a last chunk with "choices": [] and the usage; some
    # servers put it on the finish chunk instead, Groq in "x_groq".
    # {"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,...}}
    found = getattr(chunk, "usage", None) or getattr(getattr(chunk, "x_groq", None), "usage", None)
    if found is not None:
        state.usage = usage_of(found)


# The index of a call delta, from the delta and its position in the list (Mistral's may be missing).
IndexOf = Callable[[Any, int], int]


def translate_chunk(state: Sink, chunk: Any, index_of: IndexOf | None = None) -> None:
    """``index_of``: the index of a call delta where it is not ``tool_call.index`` (Mistral)."""
    if not state.response_id or not state.response_model:
        _identify(state, chunk)
    choices = chunk.choices
    if not choices:
        _usage(state, chunk)
        return
    for choice in choices:
        delta = choice.delta
        tool_calls = delta.tool_calls if delta is not None else None
        if tool_calls:
            _tool_call_deltas(state, choice.index or 0, tool_calls, index_of)
        finish_reason = choice.finish_reason
        if finish_reason is not None:
            # {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
            state.settle(finish_reason, choice=choice.index or 0, completes_open=True)
            _usage(state, chunk)
            state.final_event()


def _tool_call_deltas(state: Sink, choice: int, tool_calls: Any, index_of: IndexOf | None) -> None:
    for position, tool_call in enumerate(tool_calls):
        index = tool_call.index if index_of is None else index_of(tool_call, position)
        key = index if choice == 0 else (choice, index)
        function = tool_call.function
        if function is None:
            continue
        # Only a delta that names a tool starts a call (continuations may carry "id": "", or
        # another id: Poolside); on an open index it must also be another call (_new_call). A
        # delta without a name goes to fragment(), which counts it only into an open call.
        name = function.name
        if name and (not state.is_open(key) or _new_call(state, key, tool_call.id, function)):
            # {"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}
            state.block_started(key, name=name, call_id=_call_id(tool_call.id), index=index, choice=choice)
        arguments = function.arguments
        if arguments is None or type(arguments) is str:
            if name and arguments:
                # Text on a delta naming the tool (Mistral names it on every delta): only where the
                # document ends can tell this call's next delta from another call's first, and a
                # "}" inside a string is no end.
                state.follow_strings(key)
            # {"index":0,"function":{"arguments":"{\"loc"}}
            state.fragment(key, arguments)
        elif arguments:
            # Mistral's SDK types arguments as text or an object; an object would have to be
            # serialized to be measured, which the package never does.
            _log.debug("tool-call arguments arrived as an object; not counted")


def _new_call(state: Sink, key: Any, delta_id: Any, function: Any) -> bool:
    """A delta naming a tool on an open index: another call, or the same one repeating its name
    (Mistral repeats name and id on every delta, "id": "null" when it has none)?"""
    open_id = state.call_id_of(key)
    if delta_id and delta_id != "null" and open_id is not None:
        # SGLang, vLLM, Ollama: parallel calls on index 0, told apart by their ids.
        # {"index":0,"id":"1","type":"function","function":{"name":"get_time","arguments":""}}
        return open_id != str(delta_id)
    # No id to tell: a name with no text or a new document ("{") after a whole one cannot continue
    # the same call (Ollama: every call on index 0, ids left out). In valid JSON a "}" followed by
    # a "{" is inside a string, which a call with named deltas follows (_tool_call_deltas).
    arguments = function.arguments
    return (
        not arguments or (type(arguments) is str and arguments.lstrip()[:1] == "{")
    ) and state.arguments_closed(key)


def usage_of(
    found: Any, inputs: str = "prompt_tokens", outputs: str = "completion_tokens"
) -> usage.Usage | None:
    """OpenAI's usage, Chat Completions' names by default (also Mistral's UsageInfo and Groq's
    x_groq.usage); the Responses API names its counts apart but shapes them alike: ``<inputs>`` with
    ``<inputs>_details`` (cached, cache-write), ``<outputs>`` with ``<outputs>_details`` (reasoning)."""
    # {"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,
    #  "prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}
    if found is None:
        return None
    details_in = getattr(found, f"{inputs}_details", None)
    return usage.make(
        input_tokens=getattr(found, inputs, None),
        output_tokens=getattr(found, outputs, None),
        cache_read=getattr(details_in, "cached_tokens", None),
        cache_write=getattr(details_in, "cache_write_tokens", None),
        reasoning=getattr(getattr(found, f"{outputs}_details", None), "reasoning_tokens", None),
    )


def history_ids(body: Any) -> Iterator[str]:
    """The call ids of a request's input history (the replayed-aborted-call check, ``_core.replay``)."""
    for message in replay.entries(replay.field(body, "messages")):
        role = replay.field(message, "role")
        if role == "assistant":
            # {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", ...}]}
            for call in replay.entries(replay.field(message, "tool_calls")):
                yield replay.field(call, "id")
        elif role == "tool":
            # {"role": "tool", "tool_call_id": "call_1", "content": "..."}
            yield replay.field(message, "tool_call_id")
