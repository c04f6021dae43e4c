"""The openai SDK's Realtime API over WebSocket: ``client.realtime.connect(model=...)``, its async
twin, and ``client.beta.realtime`` (the same connection code, where the SDK still has it).

One connection carries many responses: each ``response.created`` opens a stream of its own (a
``StreamState``: one inference span, its tool-call spans under it), which ``response.done`` ends.
Events are routed to their response by ``response_id``; a call's fragments to its call by
``item_id``. Choke points, and why:
- ``Realtime.connect``: the model asked for and the client (its server); kept for the manager it
  returns. The manager's ``__enter__`` / ``enter`` (``__aenter__``) hands them to the connection.
- the connection's ``recv``: every way to read parsed events (``for event in connection``,
  ``dispatch_events``, ``recv()``) goes through it; what it raises is the socket's end.
- the connection's ``close``: the user's close, and the manager's exit.
Events read unparsed (``recv_bytes``) are not seen.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .._core import StreamState
from .._internal import report
from .._request import Request, keep, kept, model_of
from .._stream import watch
from .._telemetry import Telemetry
from ._patches import Patches, Requires
from ._realtime_events import RESPONSE_EVENTS, response_done
from ._shared import guarded, server_of
from .openai import _provider_of

_log = logging.getLogger(__name__)

PROVIDER = "openai"
# The GA surface (openai >= 1.103) and the beta one (1.58 on); an SDK release may have neither.
MODULES = ("openai.resources.realtime.realtime", "openai.resources.beta.realtime.realtime")
_CLASSES = {
    "Realtime.connect": "connect",
    "AsyncRealtime.connect": "connect",
    "RealtimeConnectionManager.__enter__": "enter",
    "RealtimeConnectionManager.enter": "enter",
    "AsyncRealtimeConnectionManager.__aenter__": "aenter",
    "AsyncRealtimeConnectionManager.enter": "aenter",
    "RealtimeConnection.recv": "recv",
    "AsyncRealtimeConnection.recv": "arecv",
    "RealtimeConnection.close": "close",
    "AsyncRealtimeConnection.close": "aclose",
}
# What the adapter needs of the SDK (the instrumentor waits for and checks it). A release from
# before a surface lacks its module: not in this version, not a missing target.
REQUIRES = Requires(
    sdk="openai",
    targets=tuple((module, attr) for module in MODULES for attr in _CLASSES),
    provider=PROVIDER,
    optional_modules=MODULES,
)
_patches = Patches()
# The telemetry of the instrument() in force (one at a time), for the sessions made from now on.
_TELEMETRY: list[Telemetry] = []


class Session:
    """One connection: what its responses share, and the responses still open (by id). Never
    references the connection it is kept for."""

    def __init__(self, telemetry: Telemetry, provider: str, model: str | None, server: Any) -> None:
        self.telemetry = telemetry
        self.provider = provider
        self.model = model
        self.server = server
        self.response_model: str | None = None
        self.responses: dict[str, StreamState] = {}
        self.ended = False
        self._lock = threading.Lock()

    def open(self, response_id: str, owner: object) -> StreamState | None:
        # The context current when the response starts: the consumer's span (an agent turn).
        request = Request(self.telemetry, self.provider, self.model, server=self.server,
                          start_ns=time.time_ns(), parent=otel_context.get_current())  # fmt: skip
        with self._lock:
            if self.ended:
                return None
            state = self.responses[response_id] = request.stream()
        state.response_id = response_id
        state.response_model = self.response_model
        watch(owner, state)
        return state

    def done(self, response_id: str | None) -> StreamState | None:
        with self._lock:
            return self.responses.pop(response_id, None) if response_id is not None else None

    def end(self, finish: Callable[[StreamState], None], *, final: bool = False) -> None:
        """Ends every response still open with ``finish``; ``final``: the connection is over."""
        with self._lock:
            states = list(self.responses.values())
            self.responses.clear()
            self.ended = self.ended or final
        for state in states:
            finish(state)


def process_event(session: Session, event: Any, connection: object) -> None:
    kind = event.type
    handler = RESPONSE_EVENTS.get(kind)
    if handler is not None:
        state = session.responses.get(event.response_id)
        if state is not None:
            if state.first_chunk_ns is None:
                state.first_chunk()
            handler(state, event)
    elif kind == "response.created":
        session.open(event.response.id, connection)
    elif kind == "response.done":
        state = session.done(event.response.id)
        if state is not None:
            response_done(state, event.response)
    elif kind in ("session.created", "session.updated"):
        session.response_model = model_of(getattr(event.session, "model", None)) or session.response_model


# -- the connection: events in, its end -------------------------------------------------------------------


def _session_of(connection: Any) -> Session | None:
    session = kept(connection)
    if session is None and is_instrumentation_enabled():
        # A connection made by hand, or by a manager entered before instrument(): no model known.
        session = _new_session(None, None)
        if session is not None:
            keep(connection, session)
    return session if isinstance(session, Session) else None


def _new_session(client: Any, model: Any) -> Session | None:
    telemetry = _TELEMETRY[0] if _TELEMETRY else None
    if telemetry is None:
        return None

    url = None if client is None else (client.websocket_base_url or client.base_url)
    provider = (_provider_of(client) if client is not None else None) or PROVIDER
    return Session(telemetry, provider, model_of(model), server_of(url))


def _received(connection: Any, event: Any) -> None:
    session = _session_of(connection)
    if session is not None:
        process_event(session, event, connection)


def _failed(connection: Any, exc: BaseException) -> None:
    session = kept(connection)
    if not isinstance(session, Session) or not session.responses:
        return
    from websockets.exceptions import ConnectionClosedOK

    if isinstance(exc, ConnectionClosedOK):
        # The server closed the socket cleanly mid-response: it ended without its response.done.
        session.end(StreamState.ended)
    else:
        session.end(lambda state: state.failed(exc))


def _closing(connection: Any) -> None:
    session = kept(connection)
    if isinstance(session, Session):
        session.end(StreamState.closed, final=True)


def _recv(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    try:
        event = wrapped(*args, **kwargs)
    except Exception as exc:
        guarded(_failed, instance, exc)
        raise
    guarded(_received, instance, event)
    return event


async def _arecv(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # A cancelled recv() ends nothing: the SDK says cancelling it is safe, the connection goes on
    # (asyncio.wait_for(connection.recv(), ...) is a common loop).
    try:
        event = await wrapped(*args, **kwargs)
    except Exception as exc:
        guarded(_failed, instance, exc)
        raise
    guarded(_received, instance, event)
    return event


def _close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    guarded(_closing, instance)
    return wrapped(*args, **kwargs)


async def _aclose(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    guarded(_closing, instance)
    return await wrapped(*args, **kwargs)


# -- the manager: the model and the server, to the connection it opens ---------------------------------


def _connect(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    manager = wrapped(*args, **kwargs)
    if is_instrumentation_enabled():
        try:
            session = _new_session(getattr(instance, "_client", None), kwargs.get("model"))
            if session is not None:
                keep(manager, session)
        except Exception as exc:
            report(f"{__name__}.connect", exc)
    return manager


def _link(manager: Any, connection: Any) -> None:
    session = kept(manager)
    if isinstance(session, Session) and kept(connection) is None:
        keep(connection, session)


def _enter(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    connection = wrapped(*args, **kwargs)
    guarded(_link, instance, connection)
    return connection


async def _aenter(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    connection = await wrapped(*args, **kwargs)
    guarded(_link, instance, connection)
    return connection


_WRAPPERS: dict[str, Callable[..., Any]] = {
    "connect": _connect,
    "enter": _enter,
    "aenter": _aenter,
    "recv": _recv,
    "arecv": _arecv,
    "close": _close,
    "aclose": _aclose,
}


def instrument(telemetry: Telemetry) -> bool:
    _TELEMETRY[:] = [telemetry]
    applied = False
    for module in MODULES:
        try:
            __import__(module)
        except ImportError:
            continue  # a release from before this surface
        for attr, wrapper in _CLASSES.items():
            applied = _patches.wrap(module, attr, _WRAPPERS[wrapper]) or applied
    return applied


def uninstrument() -> None:
    _patches.unwrap_all()
    _TELEMETRY.clear()
