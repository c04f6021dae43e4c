"""What the openai SDK's WebSocket connections share (Realtime, and the Responses API's transport):
one ``Connection`` per connection, its open responses a ``_core.session.Session``, and the
wrappers that feed it.
"""

from __future__ import annotations

import contextvars
import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import guarded, report, warn_once
from otel_toolcalls._core.owners import keep, kept
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.session import ABANDONED, CLOSED, ENDED, Session, failed
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.servers import server_of

from .adapter import provider_of

PROVIDER = "openai"

# Set while the SDK's recv() runs: the recv_bytes() it calls is not the user's.
_RECEIVING: contextvars.ContextVar[bool] = contextvars.ContextVar("otel_toolcalls_ws_recv", default=False)


class Connection:
    """One connection: what its responses share, and the responses still open (by a key the
    adapter chooses: the response id, or the lane). Never references the connection it is kept for."""

    def __init__(self, telemetry: Telemetry, provider: str, model: str | None, server: Any) -> None:
        self.telemetry = telemetry
        self.provider = provider
        self.model = model
        self.server = server
        self.response_model: str | None = None
        self.responses = Session()
        # Lane -> the models of the response.create events sent on it, oldest first (Responses).
        self.asked: dict[Hashable, list[str | None]] = {}

    def open(self, key: Hashable, model: str | None = None) -> StreamState | None:
        # The context current when the response starts: the consumer's span (an agent turn).
        request = Request(self.telemetry, self.provider, model or self.model, server=self.server,
                          start_ns=time.time_ns(), parent=otel_context.get_current())  # fmt: skip
        state = self.responses.open(key, request)
        if state is not None:
            state.response_model = self.response_model
        return state


# A translator of one connection's events: routes each to its response's stream (a Sink) and reads it.
SessionTranslator = Callable[[Connection, Any, object], None]


def connection_classes(resource: str, *, sends: bool = False) -> dict[str, str]:
    """The ``"Class.method"`` -> wrapper name table of one WebSocket surface, whose classes are named
    after ``resource`` (``Realtime``: ``Realtime``, ``RealtimeConnectionManager``,
    ``RealtimeConnection``, and their ``Async`` twins)."""
    manager, connection = f"{resource}ConnectionManager", f"{resource}Connection"
    classes = {
        f"{resource}.connect": "connect",
        f"Async{resource}.connect": "connect",
        f"{manager}.__enter__": "enter",
        f"{manager}.enter": "enter",
        f"Async{manager}.__aenter__": "aenter",
        f"Async{manager}.enter": "aenter",
    }
    for method in ("recv", "close", "recv_bytes", "send") if sends else ("recv", "close", "recv_bytes"):
        classes[f"{connection}.{method}"] = method
        classes[f"Async{connection}.{method}"] = f"a{method}"
    return classes


@dataclass
class Wiring:
    """One adapter's event translator and its wrappers, bound to the telemetry in force.

    The choke points: the resource's ``connect`` (the model asked for, the client's server), kept
    weakly for the manager it returns, whose ``__enter__`` / ``enter`` / ``__aenter__`` hands them to
    the connection it opens (nothing stored on SDK objects); the connection's ``recv``, which every
    way to read parsed events goes through (what it raises is the socket's end); its ``close`` (the
    user's, and the manager's exit); its ``send`` (what the client asks for). Events read unparsed
    (``recv_bytes`` by the user) would have to be parsed: not traced, said once at WARNING."""

    translate: SessionTranslator
    on_send: Callable[[Connection, Any], None] | None = None
    telemetry: list[Telemetry] = field(default_factory=list)

    def session_of(self, connection: Any) -> Connection | None:
        session = kept(connection)
        if session is None and is_instrumentation_enabled():
            # A connection made by hand, or by a manager entered before instrument(): no model known.
            session = self.new_session(None, None)
            if session is not None:
                _own(connection, session)
        return session if isinstance(session, Connection) else None

    def new_session(self, client: Any, model: Any) -> Connection | None:
        if not self.telemetry:
            return None
        url = None if client is None else (client.websocket_base_url or client.base_url)
        provider = (provider_of(client) if client is not None else None) or PROVIDER
        return Connection(self.telemetry[0], provider, model_of(model), server_of(url))

    def received(self, connection: Any, event: Any) -> None:
        session = self.session_of(connection)
        if session is not None:
            self.translate(session, event, connection)

    def sent(self, connection: Any, event: Any) -> None:
        session = self.session_of(connection)
        if session is not None and self.on_send is not None:
            self.on_send(session, event)

    def install(self, patches: Any, modules: Any, classes: dict[str, str], telemetry: Telemetry) -> bool:
        """Patches ``classes`` (``"Class.method"`` -> wrapper name) in every module of ``modules``
        this SDK release has: a release may predate one."""
        self.telemetry[:] = [telemetry]
        wrappers = self.wrappers()
        applied = False
        for module in modules:
            try:
                __import__(module)
            except ImportError:
                continue
            for attr, wrapper in classes.items():
                applied = patches.wrap(module, attr, wrappers[wrapper]) or applied
        return applied

    def wrappers(self) -> dict[str, Callable[..., Any]]:
        return {"connect": self._connect, "enter": _enter, "aenter": _aenter, "recv": self._recv,
                "arecv": self._arecv, "close": _close, "aclose": _aclose, "send": self._send,
                "asend": self._asend, "recv_bytes": _recv_bytes, "arecv_bytes": _arecv_bytes}  # fmt: skip

    def _connect(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        manager = wrapped(*args, **kwargs)
        if is_instrumentation_enabled():
            try:
                session = self.new_session(getattr(instance, "_client", None), kwargs.get("model"))
                if session is not None:
                    keep(manager, session)
            except Exception as exc:
                report(f"{__name__}.connect", exc)
        return manager

    def _recv(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        with _Receiving(instance):
            event = wrapped(*args, **kwargs)
        guarded(self.received, instance, event)
        return event

    async def _arecv(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        with _Receiving(instance):
            event = await wrapped(*args, **kwargs)
        guarded(self.received, instance, event)
        return event

    def _send(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        guarded(self.sent, instance, args[0] if args else kwargs.get("event"))
        return wrapped(*args, **kwargs)

    async def _asend(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        guarded(self.sent, instance, args[0] if args else kwargs.get("event"))
        return await wrapped(*args, **kwargs)


def _unseen(instance: Any) -> None:
    if not _RECEIVING.get():
        name = type(instance).__name__
        message = f"events read with {name}.recv_bytes() are not traced (it reads parsed events only)"
        warn_once(f"{__name__}.recv_bytes", message + ": read them with recv() or by iterating")


class _Receiving:
    """Around the SDK's recv(), sync or async: marks the recv_bytes() it calls as its own, and
    ends the connection's open responses when recv() fails. A cancelled recv() ends nothing (not an
    Exception): the SDK says cancelling it is safe, the connection goes on
    (``asyncio.wait_for(connection.recv(), ...)`` is a common loop)."""

    __slots__ = ("connection", "token")

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def __enter__(self) -> None:
        self.token = _RECEIVING.set(True)

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> Literal[False]:
        _RECEIVING.reset(self.token)
        if isinstance(exc, Exception):
            guarded(_failed, self.connection, exc)
        return False  # what recv() raised goes on to the caller untouched


def _failed(connection: Any, exc: BaseException) -> None:
    session = kept(connection)
    if not isinstance(session, Connection) or not session.responses.holds():
        return
    from websockets.exceptions import ConnectionClosedOK

    # ConnectionClosedOK: the server closed the socket cleanly mid-response, before its final event.
    session.responses.end_all(ENDED if isinstance(exc, ConnectionClosedOK) else failed(exc))


def _closing(connection: Any) -> None:
    session = kept(connection)
    if isinstance(session, Connection):
        session.responses.end_all(CLOSED, final=True)


def _before(step: Callable[[Any], None]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The sync and async wrappers of a connection method that run ``step`` on the connection
    (its failure reported, not raised), then the SDK's method."""

    def sync(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        guarded(step, instance)
        return wrapped(*args, **kwargs)

    async def async_(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        guarded(step, instance)
        return await wrapped(*args, **kwargs)

    return sync, async_


_close, _aclose = _before(_closing)
_recv_bytes, _arecv_bytes = _before(_unseen)


def _own(connection: Any, session: Connection) -> None:
    """``session`` is ``connection``'s: a connection garbage-collected with responses open abandons
    them (one finalizer per connection, however many responses it carries)."""
    keep(connection, session)
    finalizer = weakref.finalize(connection, session.responses.end_all, ABANDONED, final=True)
    # Interpreter exit ends the open streams through the core's table of live ones, before the
    # tracer provider shuts down; this finalizer's own atexit run could come after it.
    finalizer.atexit = False


def _link(manager: Any, connection: Any) -> None:
    session = kept(manager)
    if isinstance(session, Connection) and kept(connection) is None:
        _own(connection, session)


def _enter(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    connection = wrapped(*args, **kwargs)
    guarded(_link, instance, connection)
    return connection


async def _aenter(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    connection = await wrapped(*args, **kwargs)
    guarded(_link, instance, connection)
    return connection
