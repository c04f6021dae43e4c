"""The session path: streams the package does not iterate but is handed the events of.

A WebSocket connection, Gemini Live, the Claude CLI's reader, a returned generator that made
several requests, a framework's run: each carries streams that open, take events and end on a
signal of the session (its socket closed or failed, the consumer's close, a run cancelled), not at
the end of an iterator the package wraps (``stream.wrap_sync`` / ``wrap_async``, the other path).

A ``Session`` holds its open streams by a key the adapter chooses (a response id, a lane, a
thread, one turn) and ends them as the wrapped path's ``_Ending`` does, once: each stream leaves
the session under its lock, so exactly one ender ends it, from whichever thread; the ending runs
after the lock is released (an exporter never runs under it), each stream's alone (one failing
leaves none of the others open). A session ended ``final`` opens no stream afterwards.

Held weakly: an open stream is held by the core's table of live ones until it ends, so a session
keeps nothing alive (a framework's run table, a long connection).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable

from . import names as n
from .errors import guarded
from .request import Request
from .state import LIVE, StreamState

# How a stream of a session ends: one of StreamState's terminal events.
Ending = Callable[[StreamState], None]
# The source ended without the stream's final event (a clean close mid-response, the turn's end).
ENDED: Ending = StreamState.ended
# The consumer closed what it holds (a connection, a generator, the CLI's reader).
CLOSED: Ending = StreamState.closed
CANCELLED: Ending = StreamState.cancelled
# What the session belonged to was collected.
ABANDONED: Ending = StreamState.abandoned


def failed(exc: BaseException) -> Ending:
    """The source raised ``exc`` (the socket failed)."""

    def ending(state: StreamState) -> None:
        state.failed(exc)

    return ending


def stream_error(error_type: str) -> Ending:
    """The source said the request failed, and why, without raising (the CLI's terminal reason)."""

    def ending(state: StreamState) -> None:
        state.finalize(n.STREAM_ERROR, error_type)

    return ending


class Session:
    """The streams one session has open, by key."""

    __slots__ = ("_lock", "_streams", "over")

    def __init__(self) -> None:
        self._streams: dict[Hashable, weakref.ref[StreamState]] = {}
        self._lock = threading.Lock()
        # Ended ``final``: the session opens no stream any more.
        self.over = False

    def open(self, key: Hashable, request: Request) -> StreamState | None:
        """A new stream of ``request`` under ``key`` (replacing the one held there), or None once
        the session is over."""
        with self._lock:
            if self.over:
                return None
            state = request.stream()
            self._streams[key] = weakref.ref(state)
        return state

    def add(self, state: StreamState, key: Hashable = None) -> None:
        """A stream opened elsewhere (a wrapped iterator's) that this session's signals end too."""
        with self._lock:
            self._streams[id(state) if key is None else key] = weakref.ref(state)

    def get(self, key: Hashable) -> StreamState | None:
        ref = self._streams.get(key)
        return ref() if ref is not None else None

    def take(self, key: Hashable) -> StreamState | None:
        """The stream under ``key``, out of the session and not ended: the caller ends it."""
        with self._lock:
            ref = self._streams.pop(key, None)
        return ref() if ref is not None else None

    def end(self, key: Hashable, how: Ending) -> None:
        state = self.take(key)
        if state is not None:
            guarded(how, state)

    def end_all(self, how: Ending, *, final: bool = False) -> None:
        """Ends every stream still held with ``how``; ``final``: the session is over."""
        with self._lock:
            refs = list(self._streams.values())
            self._streams.clear()
            self.over = self.over or final
        for ref in refs:
            state = ref()
            if state is not None:
                guarded(how, state)

    def live(self) -> list[StreamState]:
        """The streams held that have not ended (here or elsewhere); the ended ones leave."""
        with self._lock:
            held = [(key, ref()) for key, ref in self._streams.items()]
            for key, state in held:
                if state is None or id(state) not in LIVE:
                    del self._streams[key]
        return [state for _, state in held if state is not None and id(state) in LIVE]

    def holds(self) -> bool:
        """Whether any stream is held (ended elsewhere or not)."""
        return bool(self._streams)
