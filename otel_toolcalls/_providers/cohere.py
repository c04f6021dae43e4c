"""The cohere SDK, v2 chat: ``ClientV2.chat_stream`` / ``AsyncClientV2.chat_stream``.

The translator (one function per event type) and the wiring: the raw client's context manager,
where the request is made, and the public generator, whose ``close()`` the package must see.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import wrapt

from otel_toolcalls._core import usage
from otel_toolcalls._core.errors import guarded, report
from otel_toolcalls._core.request import CURRENT, Request, current, model_of
from otel_toolcalls._core.sink import Sink, by_type
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.returned import hand_back
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested, traced_instead

_log = logging.getLogger(__name__)

PROVIDER = "cohere"
_MODULE = "cohere.v2.client"
_RAW = "cohere.v2.raw_client"
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="cohere",
    targets=(
        (_RAW, "RawV2Client.chat_stream"),
        (_RAW, "AsyncRawV2Client.chat_stream"),
        (_MODULE, "V2Client.chat_stream"),
        (_MODULE, "AsyncV2Client.chat_stream"),
    ),
    provider=PROVIDER,
    tested=(Tested("cohere", "7.0", "7.3.1"),),
    extra=Extra("cohere"),
)
_patches = Patches()


# -- translator: one small function per event type ---------------------------------------------------


def usage_of(found: Any) -> usage.Usage | None:
    # {"billed_units":{"input_tokens":12,"output_tokens":40},"tokens":{"input_tokens":900,...},
    #  "cached_tokens":0}: the billed units are what the customer pays for.
    if found is None:
        return None
    billed, tokens = getattr(found, "billed_units", None), getattr(found, "tokens", None)
    source = billed if getattr(billed, "input_tokens", None) is not None else tokens
    return usage.make(
        input_tokens=getattr(source, "input_tokens", None),
        output_tokens=getattr(source, "output_tokens", None),
        cache_read=getattr(found, "cached_tokens", None),
    )


def _message_start(state: Sink, event: Any) -> None:
    # {"type":"message-start","id":"c14c80c3-...","delta":{"message":{"role":"assistant"}}}
    state.response_id = event.id


def _tool_call(event: Any) -> Any:
    # delta, its message and the message's tool_calls are each Optional in the SDK's types.
    return getattr(getattr(event.delta, "message", None), "tool_calls", None)


def _tool_call_start(state: Sink, event: Any) -> None:
    # {"type":"tool-call-start","index":0,"delta":{"message":{"tool_calls":{"id":"get_weather_q0",
    #  "type":"function","function":{"name":"get_weather","arguments":""}}}}}
    call = _tool_call(event)
    function = getattr(call, "function", None)
    if function is None or not function.name:
        _log.debug("cohere tool-call-start without a name: %r", event.index)
        return
    state.block_started(event.index, name=function.name, call_id=getattr(call, "id", None), index=event.index)
    state.fragment(event.index, function.arguments)


def _tool_call_delta(state: Sink, event: Any) -> None:
    # {"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":"{\""}}}}}
    function = getattr(_tool_call(event), "function", None)
    if function is not None:
        state.fragment(event.index, function.arguments)


def _tool_call_end(state: Sink, event: Any) -> None:
    # {"type":"tool-call-end","index":0}
    state.block_stopped(event.index)


def _content_start(state: Sink, event: Any) -> None:
    # {"type":"content-start","index":1,"delta":{"message":{"content":{"type":"text","text":""}}}}
    state.other_block_started()


def _message_end(state: Sink, event: Any) -> None:
    # {"type":"message-end","delta":{"finish_reason":"TOOL_CALL","usage":{...}}}
    # Settles the last block (MAX_TOKENS truncates it; ERROR / TIMEOUT are stream errors).
    delta = event.delta
    state.settle(delta.finish_reason if delta is not None else None)
    state.usage = usage_of(getattr(delta, "usage", None))
    state.final_event()


_HANDLERS: dict[str, Callable[[Sink, Any], None]] = {
    "message-start": _message_start,
    "tool-call-start": _tool_call_start,
    "tool-call-delta": _tool_call_delta,
    "tool-call-end": _tool_call_end,
    "content-start": _content_start,
    "message-end": _message_end,
}


translate_event = by_type(_HANDLERS, name="translate_event", module=__name__)


# -- the raw request: where the stream is made --------------------------------------------------------


class _Response(wrapt.ObjectProxy):
    """The SDK's ``HttpResponse``, its ``data`` the finalize-once wrapper of the SDK's iterator."""

    def __init__(self, wrapped: Any, data: Any) -> None:
        super().__init__(wrapped)
        self._self_data = data

    @property
    def data(self) -> Any:
        return self._self_data


def _attached(request: Request, response: Any) -> Any:
    try:
        return _Response(response, request.attach(response.data, translate_event))
    except Exception as exc:
        report("cohere attach", exc)
        return response


def _left(request: Request, exc: BaseException | None) -> None:
    """The raw context manager is left. Without an exception (the raw client's user left the
    ``with`` block before the stream ended) the stream is closed. With one, what ended it has
    been, or will be, seen where it is known: raised through the iterator (failed, cancelled), a
    close of the generator the package handed back (closed), or its collection (abandoned: an
    exception thrown in at the SDK's generator's ``yield`` by asyncio finalizing it, say)."""
    if exc is None:
        request.closed()


class _RawStream(wrapt.ObjectProxy):
    """``RawV2Client.chat_stream(...)``'s context manager; what it yields is ``_attached`` (an
    ``HttpResponse`` whose ``data`` is the event iterator). An HTTP error status raises in
    ``__enter__``. The request lives in a ``_self_`` attribute: the SDK's objects are not touched."""

    def __init__(self, wrapped: Any, request: Request) -> None:
        super().__init__(wrapped)
        self._self_request = request

    def __enter__(self) -> Any:
        request = self._self_request
        return _attached(request, request.run(self.__wrapped__.__enter__))

    def __exit__(self, kind: Any, exc: Any, traceback: Any) -> Any:
        guarded(_left, self._self_request, exc)
        return self.__wrapped__.__exit__(kind, exc, traceback)


class _AsyncRawStream(wrapt.ObjectProxy):
    """``AsyncRawV2Client.chat_stream(...)``'s context manager, likewise."""

    def __init__(self, wrapped: Any, request: Request) -> None:
        super().__init__(wrapped)
        self._self_request = request

    async def __aenter__(self) -> Any:
        request = self._self_request
        return _attached(request, await request.arun(self.__wrapped__.__aenter__()))

    async def __aexit__(self, kind: Any, exc: Any, traceback: Any) -> Any:
        guarded(_left, self._self_request, exc)
        return await self.__wrapped__.__aexit__(kind, exc, traceback)


# -- wiring ------------------------------------------------------------------------------------------


def _server(instance: Any) -> tuple[str | None, int | None]:
    return server_of(instance._client_wrapper.get_base_url())


def _request_of(telemetry: Telemetry, instance: Any, kwargs: Any) -> Request:
    """The request the public ``chat_stream`` began and published, or (the raw client called
    directly) a new one."""
    found = current()
    if found is None or found.provider != PROVIDER or found.state is not None:
        found = Request(telemetry, PROVIDER, model_of(kwargs.get("model")))
    found.server = _server(instance)
    return found


def _raw(inner: Any, telemetry: Telemetry, instance: Any, kwargs: Any) -> Any:
    proxy = _AsyncRawStream if hasattr(inner, "__aenter__") else _RawStream
    return proxy(inner, _request_of(telemetry, instance, kwargs))


def _public(stream: Any, telemetry: Telemetry, kwargs: Any) -> Any:
    request = Request(telemetry, PROVIDER, model_of(kwargs.get("model")))
    # A bare generator around the raw client: the one handed back relays it and sees close().
    # The SDK's generator makes the request at its first step: published for each step.
    published = request.entered()
    return hand_back(stream, on_close=request.closed, scope=published, publish=(CURRENT, request))


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_MODULE)
        __import__(_RAW)
    except ImportError:
        return False

    def raw_chat_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        inner = wrapped(*args, **kwargs)
        return traced_instead("cohere raw_chat_stream", inner, _raw, telemetry, instance, kwargs)

    def chat_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return traced_instead("cohere chat_stream", wrapped(*args, **kwargs), _public, telemetry, kwargs)

    # The raw client makes every v2 stream, whatever client object leads there. The public method
    # makes its generator's close seen (_sdks.returned) and begins the request; cohere's Client binds its
    # methods in __init__, so a client made before instrument() keeps the bare generator (its
    # close() is then recorded as abandoned) and its request begins at the raw client.
    _patches.wrap(_RAW, "RawV2Client.chat_stream", raw_chat_stream)
    _patches.wrap(_RAW, "AsyncRawV2Client.chat_stream", raw_chat_stream)
    _patches.wrap(_MODULE, "V2Client.chat_stream", chat_stream)
    _patches.wrap(_MODULE, "AsyncV2Client.chat_stream", chat_stream)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
