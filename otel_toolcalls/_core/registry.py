"""The bounded, thread-safe memory of streamed calls behind ``tool_call_outcome`` and linking."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

from opentelemetry.trace import SpanContext

from .names import MAX_NAME_LENGTH


def call_key(call_id: str) -> str:
    """The one form of a call id that is stored, exported and looked up: cut to 256 characters
    (TELEMETRY.md section 1). Every place that records or looks up an id goes through it, so an id
    cut where it was recorded is found from the whole id where it is looked up, and the reverse."""
    return call_id[:MAX_NAME_LENGTH]


class CallRecord(NamedTuple):
    outcome: str  # "completed" or "aborted"
    reason: str | None
    name: str
    tool_type: str
    span_context: SpanContext | None


class CallRegistry:
    """Newest first, least recently recorded evicted first; aborted calls are kept like completed ones."""

    def __init__(self, maxsize: int) -> None:
        self._maxsize = max(0, maxsize)
        self._records: OrderedDict[str, CallRecord] = OrderedDict()
        self._lock = threading.Lock()
        # Lets the replay check skip its scan when nothing aborted is remembered.
        self.aborted_count = 0

    def put(self, call_id: str, record: CallRecord) -> None:
        if self._maxsize == 0:
            return
        call_id = call_key(call_id)
        with self._lock:
            old = self._records.pop(call_id, None)
            if old is not None and old.outcome != "completed":
                self.aborted_count -= 1
            self._records[call_id] = record
            if record.outcome != "completed":
                self.aborted_count += 1
            while len(self._records) > self._maxsize:
                _, evicted = self._records.popitem(last=False)
                if evicted.outcome != "completed":
                    self.aborted_count -= 1

    def get(self, call_id: str) -> CallRecord | None:
        call_id = call_key(call_id)
        with self._lock:
            return self._records.get(call_id)

    def resize(self, maxsize: int) -> None:
        with self._lock:
            self._maxsize = max(0, maxsize)
            while len(self._records) > self._maxsize:
                _, evicted = self._records.popitem(last=False)
                if evicted.outcome != "completed":
                    self.aborted_count -= 1

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self.aborted_count = 0

    def after_fork_in_child(self) -> None:
        # The records stay (facts about calls, true in the child too); the lock is new, as a thread
        # of the parent may have held it at the fork.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._records)
