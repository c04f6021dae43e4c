"""Replayed aborted calls: a request whose input history carries a call the registry holds as aborted.

The agent persisted or answered a call that never completed: it did not roll back to the last
complete turn. Only the ids of the history are read (never arguments, never content), once per
request, and not at all while the registry remembers no aborted call.

Each ``*_ids`` function takes a request body (the dict the SDK sends, or the objects the caller
passed in it) and yields the call ids of its history, in order, repeats included.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from opentelemetry.trace import Span

from . import names as n
from .registry import CallRecord, call_key
from .telemetry import Telemetry

_log = logging.getLogger(__name__)

HistoryIds = Callable[[Any], Iterable[str]]
Replayed = list[tuple[str, CallRecord]]


def _get(item: Any, key: str) -> Any:
    # Bodies hold dicts, but callers also pass the SDK's own message objects back in.
    if isinstance(item, dict):
        return item.get(key)
    return getattr(item, key, None)


def _list(value: Any) -> Iterable[Any]:
    return value if isinstance(value, (list, tuple)) else ()


def openai_chat_ids(body: Any) -> Iterator[str]:
    for message in _list(_get(body, "messages")):
        role = _get(message, "role")
        if role == "assistant":
            # {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", ...}]}
            for call in _list(_get(message, "tool_calls")):
                yield _get(call, "id")
        elif role == "tool":
            # {"role": "tool", "tool_call_id": "call_1", "content": "..."}
            yield _get(message, "tool_call_id")


_RESPONSES_ITEMS = frozenset(
    {"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"}
)


def openai_responses_ids(body: Any) -> Iterator[str]:
    for item in _list(_get(body, "input")):
        # {"type": "function_call", "call_id": "call_1", "name": "...", "arguments": "..."}
        if _get(item, "type") in _RESPONSES_ITEMS:
            yield _get(item, "call_id")


_ANTHROPIC_USES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def anthropic_ids(body: Any) -> Iterator[str]:
    for message in _list(_get(body, "messages")):
        for block in _list(_get(message, "content")):
            kind = _get(block, "type")
            if kind in _ANTHROPIC_USES:
                # {"type": "tool_use", "id": "toolu_1", "name": "...", "input": {...}}
                yield _get(block, "id")
            elif kind == "tool_result":
                # {"type": "tool_result", "tool_use_id": "toolu_1", "content": "..."}
                yield _get(block, "tool_use_id")


def bedrock_ids(body: Any) -> Iterator[str]:
    for message in _list(_get(body, "messages")):
        for block in _list(_get(message, "content")):
            # {"toolUse": {"toolUseId": "tooluse_1", ...}} / {"toolResult": {"toolUseId": ...}}
            for key in ("toolUse", "toolResult"):
                inner = _get(block, key)
                if inner is not None:
                    yield _get(inner, "toolUseId")


def scan(telemetry: Telemetry, history_ids: HistoryIds | None, body: Any) -> Replayed | None:
    """The distinct aborted calls a request's history carries, or None; one pass over the ids."""
    registry = telemetry.registry
    if history_ids is None or registry.aborted_count <= 0 or body is None:
        return None
    try:
        found: dict[str, CallRecord] = {}
        seen: set[str] = set()
        for raw in history_ids(body):
            if not isinstance(raw, str) or not raw:
                continue
            call_id = call_key(raw)
            if call_id in seen:
                continue
            seen.add(call_id)
            record = registry.get(call_id)
            if record is not None and record.outcome != n.COMPLETED:
                found[call_id] = record
        return list(found.items()) or None
    except Exception:
        _log.debug("otel_toolcalls: could not read a request's history", exc_info=True)
        return None


def record(
    telemetry: Telemetry, replayed: Replayed | None, span: Span, provider: str, model: str | None
) -> None:
    """Event and attribute on the request's inference span (a no-op on a span that does not record);
    the counter counts whether or not a span records."""
    if not replayed:
        return
    try:
        for _, call in replayed:
            telemetry.metrics.call_replayed(provider, model, call.name)
        if not span.is_recording():
            return
        for call_id, call in replayed:
            span.add_event(
                n.EVENT_REPLAYED_ABORTED,
                {
                    n.GEN_AI_TOOL_CALL_ID: call_id,
                    n.GEN_AI_TOOL_NAME: call.name,
                    n.TOOLCALL_ABORT_REASON: call.reason or n.OTHER,
                },
            )
        span.set_attribute(n.TOOLCALL_REPLAYED_ABORTED, len(replayed))
    except Exception:
        _log.debug("otel_toolcalls: could not record replayed aborted calls", exc_info=True)
