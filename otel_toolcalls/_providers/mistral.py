"""The mistralai SDK: ``chat.stream()`` / ``chat.stream_async()``.

The user gets a stand-in for the SDK's ``EventStream`` / ``EventStreamAsync`` that reads the
package's finalize-once wrapper of the SDK's generator, the SDK's object left as it was. The chunks
are OpenAI-Chat-shaped, read by the chat translator (which absorbs Mistral's ``"null"`` ids).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report, site_of
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.sink import Sink
from otel_toolcalls._core.stream import close_seen
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.returned import Transparent
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested

from .formats.chat_completions import translate_chunk

_log = logging.getLogger(__name__)

PROVIDER = "mistral_ai"
_CHAT = "mistralai.client.chat"
_EVENTS = "mistralai.client.utils.eventstreaming"
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="mistralai",
    targets=(
        (_CHAT, "Chat.stream"),
        (_CHAT, "Chat.stream_async"),
        (_EVENTS, "EventStream.close"),
        (_EVENTS, "EventStreamAsync.close"),
    ),
    provider=PROVIDER,
    tested=(Tested("mistralai", "3.0", "3.8.0"),),
    extra=Extra("mistral"),
)
_patches = Patches()


# -- translator: the chat one, with Mistral's index rule -----------------------------------------------


def _index(tool_call: Any, position: int) -> int:
    # The SDK fills an index the server left out with 0. Mistral has sent parallel calls whole,
    # side by side in one delta, without an index: there the position in the list tells them
    # apart (a call sent whole needs no later delta to find it again).
    return tool_call.index if "index" in tool_call.model_fields_set else position


def translate_event(state: Sink, event: Any) -> None:
    # CompletionEvent.data is a CompletionChunk: {"id":...,"choices":[{"delta":{"tool_calls":[...]}}]}
    translate_chunk(state, event.data, index_of=_index)


# -- wiring ------------------------------------------------------------------------------------------


def _server(response: Any) -> tuple[str | None, int | None]:
    return server_of(getattr(getattr(response, "request", None), "url", None))


def _sdk_span(response: Any) -> Any:
    # The SDK's own tracing hook (opt-in) keeps its request span on the request's extensions; it is
    # never made current, so the generic "current span" rule cannot find it.
    extensions = getattr(getattr(response, "request", None), "extensions", None) or {}
    span = extensions.get("_tracing_span")
    return span if span is not None and span.is_recording() else None


class _Stand(Transparent):
    """What the user gets for the SDK's stream: it reads the package's wrapper of the SDK's
    generator; the SDK's object is left as it was. Each subclass has the SDK class's protocol."""

    __slots__ = ("_self_closed", "_self_events")

    def __init__(self, request: Request, stream: Any) -> None:
        object.__setattr__(self, "_self_wrapped", stream)
        object.__setattr__(self, "_self_closed", False)
        response = stream.response
        request.server = _server(response)
        find_sdk_span = functools.partial(_sdk_span, response)
        events = request.attach(
            stream.generator, translate_event, key=response, owner=self, find_sdk_span=find_sdk_span
        )
        object.__setattr__(self, "_self_events", events)

    @property
    def generator(self) -> Any:
        # The SDK's public attribute, which its own iteration reads: a user who iterates it directly
        # (or mixes it with iterating the stream) reads the package's wrapper, so no event is unseen.
        return self._self_events


class _Events(_Stand):
    """``EventStream``: an iterator and a context manager, closed for good by ``close``."""

    __slots__ = ()

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        if self._self_closed:
            raise StopIteration
        return next(self._self_events)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> Any:
        object.__setattr__(self, "_self_closed", True)
        return self._self_wrapped.close()


class _AsyncEvents(_Stand):
    """``EventStreamAsync``: the same with ``async for``, ``async with`` and an async ``close``."""

    __slots__ = ()

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        if self._self_closed:
            raise StopAsyncIteration
        return await self._self_events.__anext__()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def close(self) -> Any:
        object.__setattr__(self, "_self_closed", True)
        return await self._self_wrapped.close()


def _hand_back(request: Request, stream: Any) -> Any:
    """The stand-in the user gets, or the SDK's stream itself if one cannot be made."""
    try:
        return (_AsyncEvents if hasattr(stream, "__aiter__") else _Events)(request, stream)
    except Exception as exc:
        report(site_of(_hand_back), exc)
        return stream


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_CHAT)
        __import__(_EVENTS)
    except ImportError:
        return False

    def stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        request = Request(telemetry, PROVIDER, model_of(kwargs.get("model")))
        result = request.run(lambda: wrapped(*args, **kwargs))
        return _hand_back(request, result)

    async def stream_async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        request = Request(telemetry, PROVIDER, model_of(kwargs.get("model")))
        result = await request.arun(wrapped(*args, **kwargs))
        return _hand_back(request, result)

    def close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        close_seen(getattr(instance, "response", None))
        return wrapped(*args, **kwargs)

    _patches.wrap(_CHAT, "Chat.stream", stream)
    _patches.wrap(_CHAT, "Chat.stream_async", stream_async)
    # The SDK's close, which the stand-in's close and a ``with`` exit reach too: the close is seen.
    _patches.wrap(_EVENTS, "EventStream.close", close)
    _patches.wrap(_EVENTS, "EventStreamAsync.close", close)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
