"""Replayed aborted calls: a request whose input history carries a call the registry holds as aborted.

The agent persisted or answered a call that never completed: it did not roll back to the last
complete turn. Only the ids of the history are read (never arguments, never content), once per
request, and not at all while the registry remembers no aborted call.

Each wire format's ``history_ids`` (beside its translator, in ``_providers``) takes a request body
(the dict the SDK sends, or the objects the caller passed in it) and yields the call ids of its
history, in order, repeats included; ``field`` and ``entries`` read a body either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.trace import Span

from . import names as n
from .errors import report
from .registry import CallRecord, call_key
from .telemetry import Telemetry

HistoryIds = Callable[[Any], Iterable[str]]
Replayed = list[tuple[str, CallRecord]]


def field(item: Any, key: str) -> Any:
    """A request body's ``key``: bodies hold dicts, but callers also pass the SDK's own message
    objects back in."""
    if isinstance(item, dict):
        return item.get(key)
    return getattr(item, key, None)


def entries(value: Any) -> Iterable[Any]:
    """The entries of a list in a request body (anything else: none)."""
    return value if isinstance(value, (list, tuple)) else ()


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
    except Exception as exc:
        report("_core.replay.scan", exc)
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
    except Exception as exc:
        report("_core.replay.record", exc)
