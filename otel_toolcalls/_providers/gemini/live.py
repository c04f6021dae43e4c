"""google-genai's Live API over WebSocket: ``client.aio.live.connect(model=...)`` and its ``AsyncSession``.

One session carries many model turns: each turn (from its first model message to its
``turnComplete``) is one streamed request, the one stream its ``Session`` holds at a time. A
``toolCall`` message delivers whole calls, arguments parsed: each is complete at delivery
(TELEMETRY.md section 6, "Whole calls"). A later ``toolCallCancellation`` for a call not yet
answered revokes it (``live_calls``): each call is revocable until answered or the session ends.
"""

from __future__ import annotations

import contextvars
import time
import weakref
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import guarded, report
from otel_toolcalls._core.owners import keep, kept, watch
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.session import CLOSED, ENDED, Ending, Session, failed
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Patches, Requires

from .adapter import GEMINI, OPERATION, VERTEX_AI
from .live_calls import Calls
from .live_events import translate_message

# The adapter's name (settings, logs, doctor): not its module's.
NAME = "gemini_live"
MODULE = "google.genai.live"
# connect: the model asked for; AsyncSession.__init__: the session it opens (inside the manager's
# __aenter__, in the caller's context); _receive: every message, read by receive() and
# start_stream() alike (what it raises is the socket's end); send_tool_response: the answers;
# close: the user's close.
REQUIRES = Requires(
    sdk="google-genai",
    targets=(
        (MODULE, "AsyncLive.connect"),
        (MODULE, "AsyncSession.__init__"),
        (MODULE, "AsyncSession._receive"),
        (MODULE, "AsyncSession.send_tool_response"),
        (MODULE, "AsyncSession.close"),
    ),
    provider=GEMINI,
)

_patches = Patches()
_telemetry: list[Telemetry] = []
# The model of the newest connect() in this context: its manager opens the session in this context.
_ASKED: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_toolcalls_gemini_live", default=None
)
# The key of the turn open now: a Live session has one at a time.
_TURN = "turn"


class LiveSession:
    """One Live session: what its turns share, the turn open now, the calls awaiting an answer.
    Never references the SDK's session it is kept for."""

    def __init__(self, telemetry: Telemetry, client: Any, model: str | None) -> None:
        self.telemetry = telemetry
        self.provider = VERTEX_AI if getattr(client, "vertexai", False) else GEMINI
        self.model = model
        options = getattr(client, "_http_options", None)
        self.server = server_of(getattr(options, "base_url", None))
        self.turns = Session()
        self.calls = Calls()

    @property
    def turn(self) -> StreamState | None:
        return self.turns.get(_TURN)

    def open_turn(self, owner: Any) -> StreamState | None:
        """The turn open now, or a new one: its parent is the context current when its first
        message is read (the consumer's span)."""
        state = self.turns.get(_TURN)
        if state is None:
            request = Request(self.telemetry, self.provider, self.model, OPERATION, self.server,
                              start_ns=time.time_ns(), parent=otel_context.get_current())  # fmt: skip
            state = self.turns.open(_TURN, request)
            if state is not None:
                state.first_chunk()
                watch(owner, state)  # a session collected mid-turn abandons it
        return state

    def end_turn(self, how: Ending) -> None:
        self.turns.end(_TURN, how)


def _open(instance: Any, session: LiveSession) -> None:
    keep(instance, session)
    # A session collected unclosed (leaving ``async with connect()`` closes only the socket) can
    # revoke nothing more. Not at exit: the core's exit hook seals every held call before the
    # tracer provider shuts down.
    weakref.finalize(instance, session.calls.ended).atexit = False


def _session(instance: Any) -> LiveSession | None:
    found = kept(instance)
    return found if isinstance(found, LiveSession) else None


def _received(instance: Any, message: Any) -> None:
    session = _session(instance)
    if session is None and _telemetry and is_instrumentation_enabled():
        # A session opened before instrument(): no model known.
        session = LiveSession(_telemetry[0], getattr(instance, "_api_client", None), None)
        _open(instance, session)
    if session is not None:
        translate_message(session, message, instance)


def _failed(instance: Any, exc: BaseException) -> None:
    session = _session(instance)
    if session is None:
        return
    # A clean close mid-turn: the turn ended without its turnComplete.
    session.end_turn(ENDED if _clean_close(exc) else failed(exc))
    session.calls.ended()


def _clean_close(exc: BaseException) -> bool:
    # google-genai raises APIError(1000) for a clean close (3.x), or lets ConnectionClosedOK through.
    from websockets.exceptions import ConnectionClosedOK

    return isinstance(exc, ConnectionClosedOK) or getattr(exc, "code", None) == 1000


def _closing(instance: Any) -> None:
    session = _session(instance)
    if session is not None:
        session.end_turn(CLOSED)
        session.calls.ended()


def _answered(instance: Any, kwargs: Any) -> None:
    session = _session(instance)
    if session is not None:
        session.calls.answered(kwargs.get("function_responses"))


# -- the wrappers --------------------------------------------------------------------------------


def _connect(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    manager = wrapped(*args, **kwargs)
    _ASKED.set(model_of(kwargs.get("model")))
    return manager


def _init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
    wrapped(*args, **kwargs)
    if _telemetry and is_instrumentation_enabled():
        try:
            client = kwargs.get("api_client", args[0] if args else None)
            _open(instance, LiveSession(_telemetry[0], client, _ASKED.get()))
        except Exception as exc:
            report(f"{__name__}.session", exc)


async def _receive(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    try:
        message = await wrapped(*args, **kwargs)
    except Exception as exc:
        # A cancelled read (not an Exception) ends nothing: the session goes on.
        guarded(_failed, instance, exc)
        raise
    guarded(_received, instance, message)
    return message


async def _send_tool_response(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    guarded(_answered, instance, kwargs)
    return await wrapped(*args, **kwargs)


async def _close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    guarded(_closing, instance)
    return await wrapped(*args, **kwargs)


_WRAPPERS = {
    "AsyncLive.connect": _connect,
    "AsyncSession.__init__": _init,
    "AsyncSession._receive": _receive,
    "AsyncSession.send_tool_response": _send_tool_response,
    "AsyncSession.close": _close,
}


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(MODULE)
    except ImportError:
        return False
    _telemetry[:] = [telemetry]
    for attr, wrapper in _WRAPPERS.items():
        _patches.wrap(MODULE, attr, wrapper)
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
    _telemetry.clear()
