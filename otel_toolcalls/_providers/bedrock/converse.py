"""Translator for Bedrock ConverseStream events (botocore's parsed dicts) -> core events.

Each parsed event is a one-key dict named after its ``:event-type``. Only the keys that decide a
call's state are read; the argument fragment is counted, never parsed or joined. Keys are the
``contentBlockIndex``: it is unique per block within one response.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from otel_toolcalls._core import names as n
from otel_toolcalls._core import replay, usage
from otel_toolcalls._core.sink import Sink

_log = logging.getLogger(__name__)


def _block_delta(state: Sink, *, body: Any) -> None:
    # botocore parses what arrives, a required member missing included: such an event says nothing.
    delta = body.get("delta")
    if not delta:
        return
    tool_use = delta.get("toolUse")
    if tool_use is not None:
        # {"contentBlockDelta":{"delta":{"toolUse":{"input":"{\"loc"}},"contentBlockIndex":0}}
        state.fragment(body.get("contentBlockIndex"), tool_use.get("input"))
        return
    # {"contentBlockDelta":{"delta":{"text":"Let me"},"contentBlockIndex":1}}: text and reasoning
    # blocks open with their first delta; a block starting after a stopped tool block means the
    # token limit did not cut that one.
    state.other_block_started()


def _block_start(state: Sink, *, body: Any) -> None:
    start = body.get("start")
    if not start:
        return
    tool_use = start.get("toolUse")
    if tool_use is None:
        # {"contentBlockStart":{"start":{"image":{...}},"contentBlockIndex":2}}
        state.other_block_started()
        return
    # {"contentBlockStart":{"start":{"toolUse":{"toolUseId":"t_1","name":"f"}},"contentBlockIndex":0}}
    index = body.get("contentBlockIndex")
    name = tool_use.get("name")
    if not name:
        _log.debug("Bedrock toolUse block without a name at index %r: no span", index)
        return
    state.block_started(
        index,
        name=name,
        call_id=tool_use.get("toolUseId") or None,
        index=index,
        tool_type=n.TOOL_TYPE_EXTENSION
        if tool_use.get("type") == "server_tool_use"
        else n.TOOL_TYPE_FUNCTION,
    )


def _block_stop(state: Sink, *, body: Any) -> None:
    # {"contentBlockStop":{"contentBlockIndex":0}}
    state.block_stopped(body.get("contentBlockIndex"))


def _metadata(state: Sink, *, body: Any) -> None:
    # After messageStop: {"metadata":{"usage":{"inputTokens":12,"outputTokens":34,...},...}}
    state.usage = usage_of(body)


def _message_stop(state: Sink, *, body: Any) -> None:
    # {"messageStop":{"stopReason":"max_tokens"}}: max_tokens / model_context_window_exceeded
    # truncate, guardrail_intervened / content_filtered filter, malformed_* are malformed.
    state.settle(body.get("stopReason"))
    state.final_event()


_HANDLERS: dict[str, Callable[..., None]] = {
    "contentBlockDelta": _block_delta,
    "contentBlockStart": _block_start,
    "contentBlockStop": _block_stop,
    "messageStop": _message_stop,
    "metadata": _metadata,
}


def translate_event(state: Sink, event: Any) -> None:
    # A parsed event is one key, its type: {"contentBlockDelta": {...}}.
    for kind, body in event.items():
        handler = _HANDLERS.get(kind)
        if handler is not None and body is not None:
            handler(state, body=body)
            return


def usage_of(metadata: Any) -> usage.Usage | None:
    # {"metadata":{"usage":{"inputTokens":12,"outputTokens":34,"totalTokens":46,
    #  "cacheReadInputTokens":0,"cacheWriteInputTokens":0},"metrics":{"latencyMs":321}}}
    found = metadata.get("usage") if isinstance(metadata, dict) else None
    if not isinstance(found, dict):
        return None
    cache_read = usage.count(found.get("cacheReadInputTokens"))
    cache_write = usage.count(found.get("cacheWriteInputTokens"))
    return usage.make(
        input_tokens=usage.total(usage.count(found.get("inputTokens")), cache_read, cache_write),
        output_tokens=found.get("outputTokens"),
        cache_read=cache_read,
        cache_write=cache_write,
    )


def history_ids(body: Any) -> Iterator[str]:
    """The call ids of a Converse request's messages (the replayed-aborted-call check, ``_core.replay``)."""
    for message in replay.entries(replay.field(body, "messages")):
        for block in replay.entries(replay.field(message, "content")):
            # {"toolUse": {"toolUseId": "tooluse_1", ...}} / {"toolResult": {"toolUseId": ...}}
            for key in ("toolUse", "toolResult"):
                inner = replay.field(block, key)
                if inner is not None:
                    yield replay.field(inner, "toolUseId")
