"""lm15's choke point: ``BaseProviderLM.stream`` and ``AsyncBaseProviderLM.stream``, the readers that
turn a provider's SSE frames into the canonical events every caller iterates (``LMRouter``, DSPy's
engine, the user). One wrapper for both: each returns its iterator (a generator, an async
generator) without reading it, and the request is made when it is first read.

OpenAI's and Gemini's ``stream`` overrides call ``BaseProviderLM.stream`` for their HTTP path, so
they pass here once; their WebSocket path for live models does not.
"""

from __future__ import annotations

import functools
from typing import Any

from otel_toolcalls._core.owners import watch
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.returned import hand_back
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Patches, Target, traced_instead

from .events import translate_event, translate_whole_event

# lm15's provider names -> the GenAI conventions' well-known values; others pass as lm15 names them.
PROVIDERS = {
    "openai": "openai",
    "openai-chat": "openai",
    "openai-codex": "openai",
    "anthropic": "anthropic",
    "claude-code": "anthropic",
    "gemini": "gcp.gemini",
    "xai": "x_ai",
}
# Providers whose calls arrive whole (parsed arguments).
_WHOLE = frozenset({"gemini"})


class Streams:
    """The stream readers of one copy of lm15, under its package ``root``."""

    def __init__(self, root: str) -> None:
        self.targets: tuple[Target, ...] = (
            (f"{root}.providers.base", "BaseProviderLM.stream"),
            (f"{root}.providers.async_base", "AsyncBaseProviderLM.stream"),
        )
        self._patches = Patches()

    def instrument(self, telemetry: Telemetry) -> bool:
        try:
            __import__(self.targets[0][0])
        except ImportError:
            return False
        wrapper = functools.partial(_stream, telemetry)
        for module, attr in self.targets:
            self._patches.wrap(module, attr, wrapper)
        return bool(self._patches)

    def uninstrument(self) -> None:
        self._patches.unwrap_all()


def _stream(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    request = args[0] if args else kwargs.get("request")
    return traced_instead("lm15 stream", wrapped(*args, **kwargs), _traced, telemetry, instance, request)


def _traced(events: Any, telemetry: Telemetry, lm: Any, request: Any) -> Any:
    # stream(Request(model="gpt-4o-mini", messages=(...), tools=(...)))
    named = getattr(lm, "provider", None)
    named = named if isinstance(named, str) and named else "lm15"
    traced = Request(
        telemetry,
        PROVIDERS.get(named, named),
        model_of(getattr(request, "model", None)),
        server=server_of(getattr(lm, "base_url", None)),
    )
    translate = translate_whole_event if named in _WHOLE else translate_event
    iterator = traced.attach(events, translate)
    state = traced.stream()
    returned = hand_back(iterator, on_close=state.closed)
    # A stream never iterated runs no code when collected: its collection is watched too.
    watch(returned, state)
    return returned
