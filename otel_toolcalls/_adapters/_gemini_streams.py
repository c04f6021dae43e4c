"""The thin proxies handed back in place of google-genai's bare generators, and their sessions.

``generate_content_stream`` (and chats' ``send_message_stream``) return a plain generator that may
make several requests in turn (automatic function calling rounds, continuation hops). Each request
is a ``StreamState`` made where the SDK sends it (``_generate_content_stream``); the proxy only
learns of them through its session, so that a ``close()`` it sees ends them as ``closed`` and its
collection ends them as ``abandoned`` (TELEMETRY.md section 6, "Closed or abandoned").

A request is made while the proxy is being advanced: the sync proxy publishes its session in a
thread-local for the length of each ``next()`` (no allocation per chunk), the async proxy in a
context variable (another task may run while it awaits).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import weakref
from typing import Any

from wrapt import ObjectProxy

from .._core import StreamState
from .._stream import watch

_log = logging.getLogger(__name__)


class Session:
    """The requests one returned generator has made.

    ``parent``: the session being advanced when this generator was made (a chat's generator makes
    the models' one): the parent learns of the requests too, so closing the chat's proxy closes them.
    """

    __slots__ = ("owner", "parent", "states")

    def __init__(self, parent: Session | None) -> None:
        self.parent = parent
        self.states: list[StreamState] = []
        self.owner: weakref.ref[Any] | None = None

    def add(self, state: StreamState) -> None:
        # Bounded by the number of requests of one call (AFC rounds, continuation hops).
        session: Session | None = self
        while session is not None:
            session.states.append(state)
            session = session.parent
        owner = self.owner() if self.owner is not None else None
        if owner is not None:
            watch(owner, state)

    def closed(self) -> None:
        for state in self.states:
            state.closed()


class _Local(threading.local):
    session: Session | None = None


_SYNC = _Local()
_ASYNC: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "otel_toolcalls_gemini_session", default=None
)


def sync_session() -> Session | None:
    return _SYNC.session


def async_session() -> Session | None:
    return _ASYNC.get()


def _own(proxy: Any, parent: Session | None) -> Session:
    session = Session(parent)
    session.owner = weakref.ref(proxy)
    return session


class SyncStream(ObjectProxy):  # type: ignore[misc]
    """Stands for the SDK's generator: same chunks, same exceptions, ``close()`` seen."""

    def __init__(self, wrapped: Any, parent: Session | None) -> None:
        super().__init__(wrapped)
        self._self_session = _own(self, parent)

    def __iter__(self) -> SyncStream:
        return self

    def __next__(self) -> Any:
        local = _SYNC
        previous = local.session
        local.session = self._self_session
        try:
            return next(self.__wrapped__)
        finally:
            local.session = previous

    def send(self, value: Any) -> Any:
        local = _SYNC
        previous = local.session
        local.session = self._self_session
        try:
            return self.__wrapped__.send(value)
        finally:
            local.session = previous

    def close(self) -> None:
        _closed(self._self_session)
        return self.__wrapped__.close()  # type: ignore[no-any-return]


class AsyncStream(ObjectProxy):  # type: ignore[misc]
    def __init__(self, wrapped: Any, parent: Session | None) -> None:
        super().__init__(wrapped)
        self._self_session = _own(self, parent)

    def __aiter__(self) -> AsyncStream:
        return self

    async def __anext__(self) -> Any:
        token = _ASYNC.set(self._self_session)
        try:
            return await self.__wrapped__.__anext__()
        finally:
            _ASYNC.reset(token)

    async def asend(self, value: Any) -> Any:
        token = _ASYNC.set(self._self_session)
        try:
            return await self.__wrapped__.asend(value)
        finally:
            _ASYNC.reset(token)

    async def aclose(self) -> None:
        _closed(self._self_session)
        return await self.__wrapped__.aclose()  # type: ignore[no-any-return]


def _closed(session: Session) -> None:
    try:
        session.closed()
    except Exception:
        _log.debug("otel_toolcalls: failed to record a close", exc_info=True)
