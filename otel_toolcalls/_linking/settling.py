"""Calls a framework may start before their block ends, and the wait for that end.

Strands' ``BidiAgent`` starts a Nova Sonic tool at its ``toolUse`` event, while the block is still
open (its ``contentEnd``, or a barge-in, decides the outcome). The provider adapter marks such a
call ``unsettled`` at its block start and ``settled`` at its end, whatever the end; the
framework's execution ``await``s ``settled_by`` first, so the link and strict mode see the
outcome, not an open call. A call never marked is settled at once.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.registry import call_key

# Calls waited for at most, process-wide: past it the oldest is settled (its wait ends).
MAX_UNSETTLED = 1024
# A safety bound on one wait: every end of the stream settles its calls, so only a stream nobody
# reads any more reaches it; the execution then goes on with what the registry says.
WAIT_CAP_S = 60.0

_lock = threading.Lock()
# call key -> the futures waiting for it (each on its own loop).
_unsettled: dict[str, list[asyncio.Future[None]]] = {}


def unsettled(call_id: str) -> None:
    key = call_key(call_id)
    with _lock:
        _unsettled.setdefault(key, [])
        dropped = next(iter(_unsettled)) if len(_unsettled) > MAX_UNSETTLED else None
    if dropped is not None:
        settled(dropped)


def settled(call_id: str) -> None:
    with _lock:
        waiters = _unsettled.pop(call_key(call_id), [])
    for future in waiters:
        try:
            future.get_loop().call_soon_threadsafe(_wake, future)
        except RuntimeError as exc:  # its loop is closed: nobody waits any more
            report(f"{__name__}.settled", exc)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def settled_by(call_id: Any) -> None:
    """Returns once the call's block has ended (at once for a call never marked unsettled)."""
    if not isinstance(call_id, str):
        return
    key = call_key(call_id)
    with _lock:
        waiters = _unsettled.get(key)
        if waiters is None:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(future)
    try:
        await asyncio.wait_for(future, WAIT_CAP_S)
    except asyncio.TimeoutError as exc:  # the builtin TimeoutError only from Python 3.11
        report(f"{__name__}.settled_by", exc)
