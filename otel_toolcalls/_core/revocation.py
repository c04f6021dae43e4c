"""Calls a server may take back after their block ended (Gemini Live's ``toolCallCancellation``).

The adapter marks such a call ``revocable`` at its block start. When it completes, the registry
says ``completed`` at once (``execute_tool`` links it, strict mode runs it), but its span and its
metrics are held here until its fate is known, then recorded once, ended at the block's end:
``revoke`` makes it ``aborted`` with the reason everywhere (registry, span, ``toolcall.calls``);
``seal`` (answered, session over, process exit, too many held) keeps it ``completed``. A call is
counted once, under the outcome its span shows (TELEMETRY.md section 6, "Revoked after completion").
These are the adapters' functions, not public API: a user cannot mark a call revocable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from . import names as n
from . import process
from .calls import Call, end_call
from .errors import report
from .registry import CallRecord, call_key
from .telemetry import Telemetry

# Calls held process-wide: past it the oldest is sealed (counted completed, no longer revocable).
MAX_HELD = 4096


class Held(NamedTuple):
    telemetry: Telemetry
    labels: tuple[str, str | None]
    call: Call
    end_ns: int


_HELD: dict[str, Held] = process.HELD


def end(
    t: Telemetry,
    labels: tuple[str, str | None],
    call: Call,
    reason: str | None,
    error_type: str | None,
    end_ns: int,
) -> None:
    """A call's end (``calls.end_call``), held when it completes and its server may revoke it."""
    if reason is not None or not call.revocable or not call.call_id or call.cut():
        end_call(t, labels, call, reason, error_type, end_ns)
        return
    try:
        _hold(Held(t, labels, call, end_ns))
    except Exception as exc:
        report(f"{__name__}.hold", exc)
        end_call(t, labels, call, None, None, end_ns)


def _hold(held: Held) -> None:
    call = held.call
    assert call.call_id is not None
    key = call_key(call.call_id)
    record = CallRecord(n.COMPLETED, None, call.name, call.tool_type, call.span.get_span_context())
    held.telemetry.registry.put(key, record)
    # The flag is read under the lock revoke() sets it under: a revocation is seen here or finds
    # the call held, never neither.
    with process.LOCKS.held:
        revoked = call.revoked
        if revoked is None:
            sealed = [_HELD.pop(key, None)]  # an earlier call with the same id: its fate is known
            _HELD[key] = held
            if len(_HELD) > MAX_HELD:
                sealed.append(_HELD.pop(next(iter(_HELD))))
    if revoked is not None:
        _finish(held, revoked)
        return
    for earlier in sealed:
        if earlier is not None:
            _finish(earlier, None)


def revoke(call_id: str, reason: str = n.CANCELLED) -> bool:
    """The server took the call back: a held call ends ``aborted`` with ``reason``; a call still
    streaming ends so when its block ends (unless it aborts otherwise first). A call already sealed
    or aborted, or an id never seen, is left as it is. True when the call was revoked by this call.
    From any thread; never raises."""
    try:
        if not isinstance(call_id, str) or not call_id:
            return False
        key = call_key(call_id)
        with process.LOCKS.held:
            held = _HELD.pop(key, None)
            marked = _mark_unended(key, reason) if held is None else False
        if held is not None:
            _finish(held, reason)
            return True
        return marked
    except Exception as exc:
        report(f"{__name__}.revoke", exc)
        return False


def _mark_unended(key: str, reason: str) -> bool:
    marked = False
    for state in list(process.LIVE.values()):
        for call in state.unended_calls():
            if call.revoked is None and call.call_id and call_key(call.call_id) == key:
                call.revoked = reason
                marked = True
    return marked


def seal(call_ids: Iterable[str]) -> None:
    """These calls can no longer be revoked: the held ones end ``completed``. Never raises."""
    try:
        with process.LOCKS.held:
            sealed = [_HELD.pop(call_key(i), None) for i in call_ids if isinstance(i, str)]
        for held in sealed:
            if held is not None:
                _finish(held, None)
    except Exception as exc:
        report(f"{__name__}.seal", exc)


def seal_all() -> None:
    """Every held call ends ``completed`` (interpreter exit: no revocation can come any more)."""
    seal(list(_HELD))


def _finish(held: Held, reason: str | None) -> None:
    # A sealed call's record says completed since its hold (and a newer call may hold its id now).
    end_call(held.telemetry, held.labels, held.call, reason, None, held.end_ns, remember=reason is not None)
