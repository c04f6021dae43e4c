"""The calls of one Live session between delivery and answer, and the server's cancellation of them.

A call is complete at delivery, and revocable (``_core.revocation``) until the app answers it or
the session ends: the core holds its span and its count till then. ``toolCallCancellation`` names
calls the server takes back: one not yet answered is revoked, ``aborted`` / ``cancelled`` on its
span, in ``toolcall.calls`` and in the registry, so ``execute_tool`` links it no more and strict
mode refuses to run it. An answer, or the session's end, seals the calls it concerns ``completed``:
a call already answered ran, its cancellation changes nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from otel_toolcalls._core import names as n
from otel_toolcalls._core.revocation import revoke, seal

_log = logging.getLogger(__name__)

# Calls a session keeps waiting for their answer (an app that never answers does not grow it).
MAX_WAITING = 1024


class Calls:
    __slots__ = ("_lock", "_revoked", "_waiting")

    def __init__(self) -> None:
        self._waiting: dict[str, None] = {}
        self._revoked: dict[str, None] = {}
        self._lock = threading.Lock()

    def delivered(self, call_id: str) -> None:
        with self._lock:
            dropped = _bounded_add(self._waiting, call_id)
        if dropped is not None:
            seal((dropped,))

    def cancelled(self, ids: Iterable[Any]) -> None:
        # {"toolCallCancellation": {"ids": ["fc_1", "fc_2"]}}
        for call_id in ids:
            if not isinstance(call_id, str):
                continue
            with self._lock:
                waiting = call_id in self._waiting
                if waiting:
                    del self._waiting[call_id]
                    _bounded_add(self._revoked, call_id)
            if waiting:
                revoke(call_id, n.CANCELLED)

    def answered(self, responses: Any) -> None:
        """``send_tool_response(function_responses=...)``: one ``FunctionResponse`` or dict, or a list."""
        if responses is None:
            return
        if not isinstance(responses, (list, tuple)):
            responses = [responses]
        for response in responses:
            call_id = response.get("id") if isinstance(response, dict) else getattr(response, "id", None)
            if not isinstance(call_id, str):
                continue
            with self._lock:
                waiting = call_id in self._waiting
                self._waiting.pop(call_id, None)
                revoked = call_id in self._revoked
            if waiting:
                seal((call_id,))
            if revoked:
                # Passed on as the app sent it: what the server makes of it is the server's.
                _log.debug("otel_toolcalls: a tool response for call %r, which the server cancelled", call_id)

    def ended(self) -> None:
        """The session is over: no cancellation can come for the calls still unanswered."""
        with self._lock:
            waiting, self._waiting = list(self._waiting), {}
        seal(waiting)


def _bounded_add(table: dict[str, None], call_id: str) -> str | None:
    """Adds ``call_id``; the oldest entry dropped past the bound, or None."""
    table[call_id] = None
    if len(table) > MAX_WAITING:
        oldest = next(iter(table))
        del table[oldest]
        return oldest
    return None
