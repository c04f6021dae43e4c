"""The cohere SDK, v2 chat: ``ClientV2.chat_stream`` / ``AsyncClientV2.chat_stream``.

``V2Client.chat_stream`` is a generator function around ``RawV2Client.chat_stream`` (a context
manager yielding the event iterator; the SDK itself logs and skips events it cannot parse). The
user gets a bare generator, whose ``close()`` nothing could observe, so the package hands back a
generator of its own relaying the SDK's (an async-generator proxy for the async client) that sees
``close()`` / ``aclose()`` and is in every other way what the SDK returned (``_returned``). The stream
itself is traced where the raw client makes it: the request starts there, and an HTTP error
status raises there.

Blocks have their own completion event (``tool-call-end``); ``message-end``'s ``finish_reason``
settles the last one (``MAX_TOKENS`` truncates it, ``ERROR`` / ``TIMEOUT`` are stream errors).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .. import _usage as usage
from .._request import Request, model_of
from .._sink import Sink, by_type
from .._stream import bound, close_seen
from .._telemetry import Telemetry
from ._patches import Patches, Requires
from ._returned import hand_back
from ._shared import guarded, server_of

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
)
_patches = Patches()


# -- translator: one small function per event type ---------------------------------------------------


def _message_start(state: Sink, event: Any) -> None:
    # {"type":"message-start","id":"c14c80c3-...","delta":{"message":{"role":"assistant"}}}
    state.response_id = event.id


def _tool_call_start(state: Sink, event: Any) -> None:
    # {"type":"tool-call-start","index":0,"delta":{"message":{"tool_calls":{"id":"get_weather_q0",
    #  "type":"function","function":{"name":"get_weather","arguments":""}}}}}
    call = event.delta.message.tool_calls
    function = call.function
    if function is None or not function.name:
        _log.debug("cohere tool-call-start without a name: %r", event.index)
        return
    state.block_started(event.index, name=function.name, call_id=call.id, index=event.index)
    state.fragment(event.index, function.arguments)


def _tool_call_delta(state: Sink, event: Any) -> None:
    # {"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":"{\""}}}}}
    function = event.delta.message.tool_calls.function
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
    delta = event.delta
    state.settle(delta.finish_reason if delta is not None else None)
    state.usage = usage.cohere(getattr(delta, "usage", None))
    state.final_event()


_HANDLERS: dict[str, Callable[[Sink, Any], None]] = {
    "message-start": _message_start,
    "tool-call-start": _tool_call_start,
    "tool-call-delta": _tool_call_delta,
    "tool-call-end": _tool_call_end,
    "content-start": _content_start,
    "message-end": _message_end,
}


process_event = by_type(_HANDLERS, name="process_event", module=__name__)


# -- what the user gets ------------------------------------------------------------------------------


def _close_seen(generator: Any) -> None:
    # The stream's state is bound to the raw HttpResponse the SDK's generator holds in a local while
    # it iterates; looking it up only here keeps the SDK's generator untouched. No frame, or no
    # response yet: the request was never made, there is nothing to close.
    try:
        frame = getattr(generator, "gi_frame", None) or getattr(generator, "ag_frame", None)
        for value in (frame.f_locals if frame is not None else {}).values():
            if bound(value) is not None:
                close_seen(value)
                return
    except Exception:
        _log.debug("otel_toolcalls: could not find a cohere stream to close", exc_info=True)


# -- the raw request: where the stream is made --------------------------------------------------------


class _TracedRequest:
    """``RawV2Client.chat_stream(...)``'s context manager, with the event iterator of the response
    it yields swapped for the finalize-once wrapper."""

    def __init__(self, inner: Any, telemetry: Telemetry, client: Any, model: Any) -> None:
        self._inner = inner
        self._telemetry = telemetry
        self._client = client
        self._model = model_of(model)
        self._request: Request | None = None

    def _begin(self) -> None:
        self._request = Request(self._telemetry, PROVIDER, self._model, server=_server(self._client))

    def _failed(self, exc: BaseException) -> None:
        # The request failed before any stream existed (HTTP error status): the span records it.
        if self._request is not None:
            self._request.failed_before_stream(exc)

    def _attach(self, response: Any) -> None:
        if self._request is not None:
            response._data = self._request.attach(response._data, process_event, key=response)

    def __enter__(self) -> Any:
        guarded(self._begin)
        try:
            response = self._inner.__enter__()
        except Exception as exc:
            guarded(self._failed, exc)
            raise
        guarded(self._attach, response)
        return response

    def __exit__(self, *exc_info: Any) -> Any:
        return self._inner.__exit__(*exc_info)

    async def __aenter__(self) -> Any:
        guarded(self._begin)
        try:
            response = await self._inner.__aenter__()
        except Exception as exc:
            guarded(self._failed, exc)
            raise
        guarded(self._attach, response)
        return response

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._inner.__aexit__(*exc_info)


# -- wiring ------------------------------------------------------------------------------------------


def _server(instance: Any) -> tuple[str | None, int | None]:
    return server_of(instance._client_wrapper.get_base_url())


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_MODULE)
        __import__(_RAW)
    except ImportError:
        return False

    def raw_chat_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        inner = wrapped(*args, **kwargs)
        if not is_instrumentation_enabled():
            return inner
        return _TracedRequest(inner, telemetry, instance, kwargs.get("model"))

    def chat_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        stream = wrapped(*args, **kwargs)
        if not is_instrumentation_enabled():
            return stream
        try:
            return hand_back(stream, on_close=functools.partial(_close_seen, stream))
        except Exception:
            _log.debug("otel_toolcalls: could not wrap a cohere stream", exc_info=True)
            return stream

    # The raw client makes every v2 stream, whatever client object leads there. The public method
    # only makes its generator's close seen (_returned); cohere's Client binds its methods in
    # __init__, so a client made before instrument() keeps the bare generator (its close() is then
    # recorded as abandoned).
    _patches.wrap(_RAW, "RawV2Client.chat_stream", raw_chat_stream)
    _patches.wrap(_RAW, "AsyncRawV2Client.chat_stream", raw_chat_stream)
    _patches.wrap(_MODULE, "V2Client.chat_stream", chat_stream)
    _patches.wrap(_MODULE, "AsyncV2Client.chat_stream", chat_stream)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
