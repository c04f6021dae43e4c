"""OpenAI Agents SDK's Responses model over WebSocket (``OpenAIResponsesWSModel``): a span per
streamed call.

The model opens its own ``websockets`` connection (the openai SDK's ``responses.connect()``, the
``openai_responses_ws`` adapter, is not used) and yields the openai SDK's parsed Responses stream
events: the Responses translator reads them (``_providers.formats.responses``).

Choke point: ``_iter_websocket_response_events`` (every request's events, as an async generator
from ``response.create`` to the terminal event, through every way the model reads them: streamed
and not). What it raises is the stream's end (a socket closed mid-response: websockets'
``ConnectionClosedError`` / ``ConnectionClosedOK``, by its close code). The runner executes the
calls through the ``openai_agents`` adapter's choke point: that adapter makes the execution span.
"""

from __future__ import annotations

import functools
from typing import Any

from otel_toolcalls._core import replay
from otel_toolcalls._core.owners import watch
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._providers.formats.responses import history_ids, translate_event
from otel_toolcalls._sdks.returned import hand_back
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Patches, Requires, traced_instead

MODULE = "agents.models.openai_responses"
PROVIDER = "openai"
REQUIRES = Requires(
    sdk="openai-agents",
    targets=((MODULE, "OpenAIResponsesWSModel._iter_websocket_response_events"),),
    provider=PROVIDER,
)
_patches = Patches()


def _request(telemetry: Telemetry, model: Any, body: Any) -> Request:
    body = body if isinstance(body, dict) else {}
    client = getattr(model, "_client", None)
    url = getattr(client, "websocket_base_url", None) or getattr(client, "base_url", None)
    asked = model_of(body.get("model")) or model_of(getattr(model, "model", None))
    replayed = replay.scan(telemetry, history_ids, body)
    return Request(telemetry, PROVIDER, asked, server=server_of(url), replayed=replayed)


def _traced(events: Any, telemetry: Telemetry, model: Any, body: Any) -> Any:
    request = _request(telemetry, model, body)
    traced = request.attach(events, translate_event)
    state = request.stream()
    returned = hand_back(traced, on_close=state.closed)
    # A generator never iterated runs no code when collected: its collection is watched too.
    watch(returned, state)
    return returned


def _events(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    body = args[0] if args else kwargs.get("create_kwargs")
    # An async generator: nothing is sent before its first step.
    return traced_instead(f"{__name__}.events", wrapped(*args, **kwargs), _traced, telemetry, instance, body)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_events, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
