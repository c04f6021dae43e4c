"""The openai SDK's Responses API over WebSocket: ``client.responses.connect()``, sync and async.

The events are the Responses stream events, read by the same translator as the SSE streams
(``_providers.formats.responses``); each response is a stream of its own (its own inference span).
The patches and the connection's session: ``_providers.openai.ws_connection``.
"""

from __future__ import annotations

from typing import Any

from otel_toolcalls._core.request import model_of
from otel_toolcalls._core.session import ENDED
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._providers.formats.responses import translate_event as responses_event
from otel_toolcalls._wiring.patches import Patches, Requires

from .ws_connection import PROVIDER, Connection, Wiring, connection_classes

# The adapter's name (settings, logs, doctor): not its module's.
NAME = "openai_responses_ws"
MODULE = "openai.resources.responses.responses"
_CLASSES = connection_classes("Responses", sends=True)
# The Responses API is older than its WebSocket transport: a release without ResponsesConnection
# predates the surface (not in this version, not a missing target).
# client.responses.connect(): the Responses API's WebSocket transport, from 2.22.
REQUIRES = Requires(
    sdk="openai",
    targets=tuple((MODULE, attr) for attr in _CLASSES),
    provider=PROVIDER,
    surfaces=((MODULE, "ResponsesConnection"),),
    since="2.22.0",
)
_patches = Patches()
_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})


def _field(event: Any, name: str) -> Any:
    return event.get(name) if isinstance(event, dict) else getattr(event, name, None)


def on_send(session: Connection, event: Any) -> None:
    # {"type":"response.create","model":"gpt-5","stream_id":"lane_a","input":[...]}: only these read.
    if _field(event, "type") == "response.create":
        lane = _lane(_field(event, "stream_id"))
        session.asked.setdefault(lane, []).append(model_of(_field(event, "model")))


def _lane(stream_id: Any) -> str | None:
    # Omitted keywords arrive as the SDK's `omit` sentinel, and the SDK passes on whatever the
    # server echoes (a list, unhashable, included): only a string names a lane.
    return stream_id if isinstance(stream_id, str) else None


def translate_event(session: Connection, event: Any, connection: object) -> None:
    """One connection carries many responses, each on a lane: a lane's responses run one at a time,
    in the order their ``response.create`` was sent, and every event echoes its lane's
    ``stream_id`` (None: the default lane). So an event belongs to the response open on its lane:
    ``response.created`` opens it (with the model that lane's create asked for), its final event
    (``response.completed`` / ``incomplete`` / ``failed``, or an ``error``) ends it."""
    lane = _lane(getattr(event, "stream_id", None))
    if event.type == "response.created":
        asked = session.asked.get(lane)
        session.open(lane, asked.pop(0) if asked else None)
    state = session.responses.get(lane)
    if state is None:
        return
    if state.first_chunk_ns is None and event.type != "response.created":
        state.first_chunk()
    responses_event(state, event)
    if event.type in _FINAL:
        session.responses.end(lane, ENDED)


_WIRING = Wiring(translate_event, on_send)


def instrument(telemetry: Telemetry) -> bool:
    return _WIRING.install(_patches, (MODULE,), _CLASSES, telemetry)


def uninstrument() -> None:
    _patches.unwrap_all()
    _WIRING.telemetry.clear()
