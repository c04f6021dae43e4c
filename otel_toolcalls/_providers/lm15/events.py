"""Translator for lm15's canonical stream events: event -> core events.

Every provider lm15 speaks (OpenAI Chat and Responses, Anthropic, Gemini, the OpenAI-compatible
servers) reaches its user as the same events, read by attribute access only: ``StreamStartEvent``,
``StreamDeltaEvent`` whose ``delta`` is a ``ToolCallDelta``, one merged ``StreamEndEvent`` and
``StreamErrorEvent``. lm15 keeps no per-call end event: the end's finish reason completes (or cuts)
every call still open.
"""

from __future__ import annotations

from typing import Any

from otel_toolcalls._core import usage
from otel_toolcalls._core.sink import Sink


def translate_event(state: Sink, event: Any) -> None:
    _read(state, event, whole=False)


def translate_whole_event(state: Sink, event: Any) -> None:
    """Gemini through lm15: each call arrives whole, its parsed arguments re-serialized by lm15."""
    _read(state, event, whole=True)


def _read(state: Sink, event: Any, *, whole: bool) -> None:
    kind = event.type
    if kind == "delta":
        delta = event.delta
        if delta.type == "tool_call":
            _tool_call(state, delta, whole)
    elif kind == "start":
        # StreamStartEvent(id=None, model='gpt-4o-mini', adaptations=())
        state.response_id = state.response_id or event.id or None
        state.response_model = state.response_model or event.model or None
    elif kind == "end":
        _end(state, event)
    elif kind == "error":
        # StreamErrorEvent(error=ErrorDetail(code='server', message='...', provider_code='server_error'))
        detail = event.error
        state.error_event(detail.provider_code or detail.code)


def _tool_call(state: Sink, delta: Any, whole: bool) -> None:
    key = delta.part_index
    name = delta.name
    if name and (not state.is_open(key) or _another_call(state, key, delta)):
        # ToolCallDelta(input='', part_index=0, id='call_1', name='get_weather')
        state.block_started(key, name=name, call_id=delta.id or None, index=key, whole=whole)
        if whole:
            # Whole: no fragment counted (section 6), and a later finish reason does not cut it.
            state.block_completed(key)
            return
    text = delta.input
    if name and text:
        # Text on a delta naming the tool: only where the document ends tells this call's next
        # delta from another's first, and a "}" inside a string is no end.
        state.follow_strings(key)
    # ToolCallDelta(input='{"loc', part_index=0, id=None, name=None)
    state.fragment(key, text)


def _another_call(state: Sink, key: Any, delta: Any) -> bool:
    """A delta naming a tool on an open index: another call, or the same one naming itself again?"""
    open_id = state.call_id_of(key)
    if delta.id and open_id is not None:
        return bool(open_id != delta.id)
    text = delta.input
    return (not text or text.lstrip()[:1] == "{") and state.arguments_closed(key)


def _end(state: Sink, event: Any) -> None:
    # StreamEndEvent(finish_reason='tool_call', usage=Usage(input_tokens=19, output_tokens=10))
    found = event.usage
    if found is not None:
        state.usage = usage_of(found)
    reason = event.finish_reason
    if reason is None:
        # lm15 merges the end frames; one without a finish reason ([DONE] alone) settles nothing.
        return
    state.settle(reason, completes_open=True)
    state.final_event()


def usage_of(found: Any) -> usage.Usage | None:
    # Usage(input_tokens=19, output_tokens=10, cache_read_tokens=6, reasoning_tokens=4)
    return usage.make(
        input_tokens=found.input_tokens,
        output_tokens=found.output_tokens,
        cache_read=found.cache_read_tokens,
        cache_write=found.cache_write_tokens,
        reasoning=found.reasoning_tokens,
    )
