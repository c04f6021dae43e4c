"""What is handed back in place of google-genai's bare generators (``_sdks.returned``), and
the requests each has made, so that its ``close()`` ends them ``closed`` and its
collection ``abandoned`` (TELEMETRY.md section 6, "Closed or abandoned").
"""

from __future__ import annotations

import contextvars
import logging
import threading
import weakref
from typing import Any

from otel_toolcalls._core.owners import watch
from otel_toolcalls._core.session import CLOSED, Session
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._sdks.returned import hand_back

_log = logging.getLogger(__name__)


class Requests:
    """The requests one returned generator has made (several: automatic function calling rounds,
    continuation hops), each a stream made where the SDK sends it, held in a ``Session``.

    ``parent``: the requests of the generator being advanced when this one was made (a chat's
    generator makes the models' one): the parent learns of the requests too, so closing the chat's
    generator closes them.
    """

    __slots__ = ("owner", "parent", "streams")

    def __init__(self, parent: Requests | None) -> None:
        self.parent = parent
        self.streams = Session()
        self.owner: weakref.ref[Any] | None = None

    def add(self, state: StreamState) -> None:
        # Bounded by the number of requests of one call (AFC rounds, continuation hops).
        requests: Requests | None = self
        while requests is not None:
            requests.streams.add(state)
            requests = requests.parent
        owner = self.owner() if self.owner is not None else None
        if owner is not None:
            watch(owner, state)

    def closed(self) -> None:
        self.streams.end_all(CLOSED)


class _Local(threading.local):
    session: Requests | None = None


# A request is made while the returned generator is advanced: the sync one publishes its session
# in a thread-local for each step (no allocation per chunk), the async one in a context variable
# (another task may run while it awaits).
_SYNC = _Local()
_ASYNC: contextvars.ContextVar[Requests | None] = contextvars.ContextVar(
    "otel_toolcalls_gemini_session", default=None
)


def sync_session() -> Requests | None:
    return _SYNC.session


def async_session() -> Requests | None:
    return _ASYNC.get()


class _Publish:
    """Publishes one session in the thread-local for the length of each step of its generator."""

    __slots__ = ("previous", "session")

    def __init__(self, session: Requests) -> None:
        self.session = session
        self.previous: Requests | None = None

    def __enter__(self) -> None:
        self.previous, _SYNC.session = _SYNC.session, self.session

    def __exit__(self, *exc_info: Any) -> None:
        _SYNC.session, self.previous = self.previous, None


def hand_back_stream(wrapped: Any, parent: Requests | None) -> Any:
    """The SDK's generator as the user gets it: same chunks, same exceptions, ``close()`` seen."""
    session = Requests(parent)
    returned = hand_back(
        wrapped,
        on_close=session.closed,
        scope=_Publish(session),
        publish=(_ASYNC, session),
    )
    session.owner = weakref.ref(returned)
    return returned
