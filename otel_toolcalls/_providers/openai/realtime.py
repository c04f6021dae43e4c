"""The openai SDK's Realtime API over WebSocket: ``client.realtime.connect(model=...)``, its async
twin, and ``client.beta.realtime`` (the same connection code, where the SDK still has it).

One connection carries many responses: each ``response.created`` opens a stream of its own (a
``StreamState``: one inference span, its tool-call spans under it), which ``response.done`` ends.
Events are routed to their response by ``response_id``; a call's fragments to its call by
``item_id``. The patches and the connection's session: ``_providers.openai.ws_connection``.
"""

from __future__ import annotations

from typing import Any

from otel_toolcalls._core.request import model_of
from otel_toolcalls._core.session import CANCELLED, ENDED
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._wiring.patches import Extra, Patches, Requires

from .realtime_events import RESPONSE_EVENTS, response_done
from .ws_connection import PROVIDER, Connection, Wiring, connection_classes

# The adapter's name (settings, logs, doctor): not its module's.
NAME = "openai_realtime"
# The GA surface (openai >= 1.103) and the beta one (1.58 on); an SDK release may have neither.
MODULES = ("openai.resources.realtime.realtime", "openai.resources.beta.realtime.realtime")
_CLASSES = connection_classes("Realtime")
# What the adapter needs of the SDK (the instrumentor waits for and checks it). A release from
# before a surface lacks its module: not in this version, not a missing target.
# client.beta.realtime from 1.58, client.realtime (GA) from 1.103: the lanes openai-realtime-beta / -ga
# run the oldest of each. The extra: the openai SDK's own `realtime` extra installs the same.
REQUIRES = Requires(
    sdk="openai",
    targets=tuple((module, attr) for module in MODULES for attr in _CLASSES),
    provider=PROVIDER,
    surfaces=tuple((module, "RealtimeConnection") for module in MODULES),
    since="1.58.0",
    extra=Extra("realtime", ("openai", "websockets>=13")),
)
_patches = Patches()


def _id(found: Any) -> str | None:
    # The SDK passes on what the server sends: an event without its response, an id that is no
    # string (unhashable as a key). Such a response is not routed, so not traced.
    return found if isinstance(found, str) else None


def translate_event(session: Connection, event: Any, connection: object) -> None:
    kind = event.type
    handler = RESPONSE_EVENTS.get(kind)
    if handler is not None:
        state = session.responses.get(_id(event.response_id))
        if state is not None:
            if state.first_chunk_ns is None:
                state.first_chunk()
            handler(state, event)
    elif kind == "response.created":
        # {"type":"response.created","response":{"id":"resp_1","status":"in_progress",...}}
        response_id = _id(getattr(event.response, "id", None))
        state = session.open(response_id) if response_id is not None else None
        if state is not None:
            state.response_id = response_id
    elif kind == "response.done":
        # Taken first: a close meanwhile no longer ends it, its final event does.
        state = session.responses.take(_id(getattr(event.response, "id", None)))
        if state is not None:
            cancelled = response_done(state, event.response)
            (CANCELLED if cancelled else ENDED)(state)
    elif kind in ("session.created", "session.updated"):
        session.response_model = model_of(getattr(event.session, "model", None)) or session.response_model


_WIRING = Wiring(translate_event)


def instrument(telemetry: Telemetry) -> bool:
    return _WIRING.install(_patches, MODULES, _CLASSES, telemetry)


def uninstrument() -> None:
    _patches.unwrap_all()
    _WIRING.telemetry.clear()
