"""The mistralai SDK: ``chat.stream()`` / ``chat.stream_async()``.

Both return an ``EventStream`` / ``EventStreamAsync`` that pulls from one generator it builds at
construction; the package swaps that generator for its finalize-once wrapper before the user
sees the stream, and hooks ``close`` (a ``with`` exit goes through it too). The chunks are
OpenAI-Chat-shaped (``CompletionEvent.data`` is a ``CompletionChunk``), with two differences the
translator below absorbs: the call id defaults to the string ``"null"``, and name and id may be
repeated on every delta of a call.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .._request import Request, model_of
from .._sink import Sink
from .._stream import close_seen
from .._telemetry import Telemetry
from ._chat_completions import process_chunk
from ._patches import Patches, Requires
from ._shared import guarded, server_of

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
)
_patches = Patches()


# -- translator: the chat one, with Mistral's index rule -----------------------------------------------


def _index(tool_call: Any, position: int) -> int:
    # The SDK fills an index the server left out with 0. Mistral has sent parallel calls whole,
    # side by side in one delta, without an index: there the position in the list tells them
    # apart (a call sent whole needs no later delta to find it again).
    return tool_call.index if "index" in tool_call.model_fields_set else position


def process_event(state: Sink, event: Any) -> None:
    # CompletionEvent.data is a CompletionChunk: {"id":...,"choices":[{"delta":{"tool_calls":[...]}}]}
    process_chunk(state, event.data, index_of=_index)


# -- wiring ------------------------------------------------------------------------------------------


def _server(response: Any) -> tuple[str | None, int | None]:
    return server_of(getattr(getattr(response, "request", None), "url", None))


def _sdk_span(response: Any) -> Any:
    # The SDK's own tracing hook (opt-in) keeps its request span on the request's extensions; it is
    # never made current, so the generic "current span" rule cannot find it.
    extensions = getattr(getattr(response, "request", None), "extensions", None) or {}
    span = extensions.get("_tracing_span")
    return span if span is not None and span.is_recording() else None


def _attach(request: Request, stream: Any) -> None:
    response = stream.response
    request.server = _server(response)
    sdk_span = functools.partial(_sdk_span, response)
    stream.generator = request.attach(
        stream.generator, process_event, key=response, owner=stream, sdk_span=sdk_span
    )


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
        guarded(_attach, request, result)
        return result

    async def stream_async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        request = Request(telemetry, PROVIDER, model_of(kwargs.get("model")))
        result = await request.arun(wrapped(*args, **kwargs))
        guarded(_attach, request, result)
        return result

    def close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        close_seen(getattr(instance, "response", None))
        return wrapped(*args, **kwargs)

    _patches.wrap(_CHAT, "Chat.stream", stream)
    _patches.wrap(_CHAT, "Chat.stream_async", stream_async)
    _patches.wrap(_EVENTS, "EventStream.close", close)
    _patches.wrap(_EVENTS, "EventStreamAsync.close", close)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
