"""OpenAI Agents SDK realtime (``RealtimeAgent`` / ``RealtimeRunner``): a span per streamed call.

``OpenAIRealtimeWebSocketModel`` opens its own ``websockets`` connection: the openai SDK's Realtime
client (the ``openai_realtime`` adapter) never sees it. The server events are the same, so the
same translator reads them (``_providers.openai.realtime``), one ``Connection`` per connection.

Choke points: ``connect`` (the model and URL of a new connection), ``_handle_ws_event`` (every
server event, a parsed JSON object, before the SDK acts on it: a call has ended before the SDK
hands it to the session's tool task), ``_listen_for_messages`` (returns when the socket closed:
its close code, read from websockets' close exception, says how the open responses ended) and
``close`` (the application's). The session runs function tools through
``agents.tool._invoke_function_tool_with_metadata``: the ``openai_agents`` adapter's execution span.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import guarded
from otel_toolcalls._core.owners import keep, kept
from otel_toolcalls._core.request import model_of
from otel_toolcalls._core.session import ABANDONED, CLOSED, ENDED, failed
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._providers.openai.realtime import translate_event
from otel_toolcalls._providers.openai.ws_connection import PROVIDER, Connection
from otel_toolcalls._sdks.fields import Fields
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Patches, Requires

MODULE = "agents.realtime.openai_realtime"
_MODEL = "OpenAIRealtimeWebSocketModel"
# The URL the SDK connects to when the application names none.
_DEFAULT_URL = "wss://api.openai.com/v1/realtime"
# First and last: methods only this class defines (connect and close are RealtimeModel's too, so
# one of them gone from the class would still resolve, to the abstract one).
_METHODS = ("_handle_ws_event", "connect", "close", "_listen_for_messages")
REQUIRES = Requires(
    sdk="openai-agents", targets=tuple((MODULE, f"{_MODEL}.{name}") for name in _METHODS), provider=PROVIDER
)
_patches = Patches()



def _open(telemetry: Telemetry, model: Any, options: Any) -> None:
    previous = kept(model)
    if isinstance(previous, Connection):  # the SDK reuses a model for the next connection
        previous.responses.end_all(ABANDONED, final=True)
    options = options if isinstance(options, dict) else {}
    settings = options.get("initial_model_settings") or {}
    name = settings.get("model_name") if isinstance(settings, dict) else None
    url = options.get("url") or _DEFAULT_URL
    session = Connection(telemetry, PROVIDER, model_of(name or getattr(model, "model", None)), server_of(url))
    keep(model, session)
    # A model collected with responses open abandons them; interpreter exit is the core's to end.
    weakref.finalize(model, session.responses.end_all, ABANDONED, final=True).atexit = False


async def _connect(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if is_instrumentation_enabled():
        guarded(_open, telemetry, instance, args[0] if args else kwargs.get("options"))
    return await wrapped(*args, **kwargs)


def _received(model: Any, event: dict[str, Any]) -> None:
    session = kept(model)
    if isinstance(session, Connection):
        translate_event(session, Fields(event), model)


async def _handle(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    event = args[0] if args else kwargs.get("event")
    if isinstance(event, dict) and isinstance(event.get("type"), str):
        guarded(_received, instance, event)
    return await wrapped(*args, **kwargs)


def _close_exception(websocket: Any) -> BaseException | None:
    # websockets' protocol holds the exception a closed connection raises: ConnectionClosedOK for
    # close code 1000/1001 from both sides, ConnectionClosedError otherwise (1006: no close frame).
    from websockets.protocol import State

    protocol = getattr(websocket, "protocol", None)
    if getattr(protocol, "state", None) is not State.CLOSED:
        return None
    found = getattr(protocol, "close_exc", None)
    return found if isinstance(found, BaseException) else None


def _socket_ended(model: Any, websocket: Any) -> None:
    session = kept(model)
    if not isinstance(session, Connection) or not session.responses.holds():
        return
    exc = _close_exception(websocket)
    if exc is None:  # still open: the listener was cancelled; close() says how the responses end
        return
    from websockets.exceptions import ConnectionClosedOK

    # ConnectionClosedOK: closed cleanly before the final event.
    session.responses.end_all(ENDED if isinstance(exc, ConnectionClosedOK) else failed(exc), final=True)


async def _listen(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    websocket = getattr(instance, "_websocket", None)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        guarded(_socket_ended, instance, websocket)


def _closing(model: Any) -> None:
    session = kept(model)
    if isinstance(session, Connection):
        session.responses.end_all(CLOSED, final=True)


async def _close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    guarded(_closing, instance)
    return await wrapped(*args, **kwargs)


def instrument(telemetry: Telemetry) -> bool:
    wrappers: dict[str, Callable[..., Any]] = {
        "connect": functools.partial(_connect, telemetry),
        "_handle_ws_event": _handle,
        "_listen_for_messages": _listen,
        "close": _close,
    }
    applied = False
    for module, attr in REQUIRES.targets:
        applied = _patches.wrap(module, attr, wrappers[attr.rsplit(".", 1)[1]]) or applied
    return applied


def uninstrument() -> None:
    _patches.unwrap_all()
