"""The calls of one Live session between delivery and answer, and the server's cancellation of them.

A call is complete at delivery (its span ends ``completed``). ``toolCallCancellation`` names calls
the server takes back: one not yet answered is revoked, its outcome becomes ``aborted`` /
``cancelled`` in the call registry, so ``execute_tool`` links it no more and strict mode refuses to
run it. Its span, already ended, stays as it was: the call was emitted whole. A call already
answered ran; its cancellation changes nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from otel_toolcalls._core import names as n
from otel_toolcalls._core.telemetry import Telemetry

_log = logging.getLogger(__name__)

# Calls a session keeps waiting for their answer (an app that never answers does not grow it).
MAX_WAITING = 1024


class Calls:
    __slots__ = ("_lock", "_revoked", "_telemetry", "_waiting")

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = telemetry
        self._waiting: dict[str, None] = {}
        self._revoked: dict[str, None] = {}
        self._lock = threading.Lock()

    def delivered(self, call_id: str) -> None:
        with self._lock:
            _bounded_add(self._waiting, call_id)

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
                self._revoke(call_id)

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
                self._waiting.pop(call_id, None)
                revoked = call_id in self._revoked
            if revoked:
                # Passed on as the app sent it: what the server makes of it is the server's.
                _log.debug("otel_toolcalls: a tool response for call %r, which the server cancelled", call_id)

    def _revoke(self, call_id: str) -> None:
        registry = self._telemetry.registry
        record = registry.get(call_id)
        if record is None or record.outcome != n.COMPLETED:
            return  # evicted, or aborted already: nothing to take back
        registry.put(call_id, record._replace(outcome=n.ABORTED, reason=n.CANCELLED))


def _bounded_add(table: dict[str, None], call_id: str) -> None:
    table[call_id] = None
    if len(table) > MAX_WAITING:
        del table[next(iter(table))]
