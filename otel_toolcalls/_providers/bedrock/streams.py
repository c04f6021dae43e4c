"""What boto3 and aiobotocore hand back for a Bedrock stream, traced: a proxy of the SDK's event stream.

``converse_stream()`` returns ``{"stream": EventStream}``, ``invoke_model_with_response_stream()``
``{"body": EventStream}`` (aiobotocore: ``AioEventStream``); ``hand_back`` puts the proxy there.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from otel_toolcalls._core import replay
from otel_toolcalls._core.errors import guarded, report, site_of
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.sink import Translator
from otel_toolcalls._core.stream import ended_by
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.returned import Transparent
from otel_toolcalls._sdks.servers import server_of

from . import converse, invoke

_log = logging.getLogger(__name__)

PROVIDER = "aws.bedrock"


@dataclass(frozen=True)
class Operation:
    """A streaming operation (a request's ``route``): where its stream is in the response, and the
    translator of its parsed events."""

    operation: str
    key: str
    translate: Translator


ROUTES: dict[str, Operation] = {
    route.operation: route
    for route in (
        Operation("ConverseStream", "stream", converse.translate_event),
        Operation("InvokeModelWithResponseStream", "body", invoke.translate_event),
    )
}


def begin(telemetry: Telemetry, client: Any, args: Any, kwargs: Any) -> Request | None:
    """The request of a ``_make_api_call(operation_name, api_params)`` that streams, else None."""
    operation = args[0] if args else kwargs.get("operation_name")
    if operation not in ROUTES:
        return None
    params = args[1] if len(args) > 1 else kwargs.get("api_params")
    model = params.get("modelId") if isinstance(params, dict) else None
    server = server_of(getattr(getattr(client, "meta", None), "endpoint_url", None))
    # Converse messages are parameters botocore holds parsed; an invoke body is the caller's own
    # JSON text, which the package does not parse (the one parse it makes is a response chunk's).
    replayed = replay.scan(telemetry, converse.history_ids, params) if operation == "ConverseStream" else None
    route = ROUTES[operation]
    return Request(telemetry, PROVIDER, model_of(model), server=server, replayed=replayed, route=route)


def hand_back(request: Request, result: Any) -> None:
    """Puts the traced stream in the response in place of the SDK's (a dict botocore made)."""
    route = request.route
    if not isinstance(route, Operation):  # only begin() makes the requests handed back here
        return
    stream = result.get(route.key) if isinstance(result, dict) else None
    if stream is None or not hasattr(stream, "_event_generator"):
        _log.debug("otel_toolcalls: %s returned no event stream; not traced", route.operation)
        return
    if type(stream) is not stream.__class__:
        # Another instrumentation's proxy of the SDK's stream (the official GenAI Bedrock one's,
        # when it wrapped _make_api_call first): read through it, so that it sees every event
        # and its end, as without the package; the raw messages beneath it would bypass it.
        through = AsyncThroughProxy if hasattr(stream, "__aiter__") else ThroughProxy
        result[route.key] = through(request, stream, route.translate, through.source(stream))
        return
    cls = AsyncStreamProxy if hasattr(stream, "__aiter__") else StreamProxy
    result[route.key] = cls(request, stream, route.translate)


def _fail(state: Any, exc: BaseException) -> None:
    # What botocore's parse raised (an exception frame: EventStreamError), or a cancellation
    # delivered while aiobotocore's parse awaited.
    guarded(ended_by, state, exc)


class Proxy(Transparent):
    """The traced stream. Not a wrapt ``ObjectProxy``: that one defines ``__len__``, ``__enter__``,
    ``__getitem__``... on its class, so the stream would become ``Sized``, ``Container``,
    ``Reversible`` and seem to be a context manager. This class defines exactly the stream's
    protocol (``__iter__``; for aiobotocore ``__aiter__`` / ``__anext__`` too), reports the SDK's
    class as ``__class__`` and forwards every other attribute: ``isinstance``, ``hasattr`` and
    ``inspect`` answer as for the SDK's stream; only ``type()`` names the proxy. Its state is in
    ``_self_`` slots."""

    __slots__ = ("_self_events", "_self_state", "_self_translate")

    def __init__(self, request: Request, stream: Any, translate: Translator, source: Any = None) -> None:
        object.__setattr__(self, "_self_wrapped", stream)
        object.__setattr__(self, "_self_translate", translate)
        # The raw messages, through the finalize-once wrapper: the stream's end. Every loop over the
        # SDK's stream is a new generator over this one raw generator (a break ends only that
        # loop), so the end is read here (exhausted, raising, collected), never from a loop's end.
        # Its translate step only times the stream; an event is read once botocore has parsed it,
        # in _translate. SDK private names read, never replaced: _event_generator, _parse_event.
        # ``source``: the parsed events of another instrumentation's proxy instead (ThroughProxy).
        events = request.attach(stream._event_generator if source is None else source, _timed, owner=self)
        object.__setattr__(self, "_self_events", events)
        object.__setattr__(self, "_self_state", request.state)

    def close(self) -> Any:
        # A close the package saw: `closed` (TELEMETRY section 6). The SDK's close is sync in both.
        guarded(self._self_state.closed)
        return self._self_wrapped.close()

    def _translate(self, event: Any) -> Any:
        try:
            self._self_translate(self._self_state, event)
        except Exception as exc:
            report(site_of(self._self_translate), exc)
        return event


def _timed(state: Any, message: Any) -> None:
    return None


class StreamProxy(Proxy):
    """botocore's ``EventStream``: every ``for`` loop reads on from where the last one stopped."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Any]:
        parse: Callable[[Any], Any] = self._self_wrapped._parse_event
        for message in self._self_events:
            try:
                event = parse(message)
            except BaseException as exc:
                _fail(self._self_state, exc)
                raise
            if event:
                yield self._translate(event)


class AsyncStreamProxy(Proxy):
    """aiobotocore's ``AioEventStream``: ``async for`` only (its ``__iter__`` raises); its
    ``_parse_event`` is a coroutine in recent releases, a function in older ones."""

    __slots__ = ()

    def __iter__(self) -> Any:
        return self._self_wrapped.__iter__()

    def __aiter__(self) -> AsyncIterator[Any]:
        # As the SDK: __aiter__ is a new async generator over the one raw generator.
        return self.__anext__()

    async def __anext__(self) -> AsyncIterator[Any]:  # type: ignore[misc]
        parse = self._self_wrapped._parse_event
        async for message in self._self_events:
            try:
                event = parse(message)
                if inspect.isawaitable(event):  # aiobotocore 3.x parses asynchronously, 2.13 did not
                    event = await event
            except BaseException as exc:
                _fail(self._self_state, exc)
                raise
            if event:
                yield self._translate(event)


class ThroughProxy(Proxy):
    """botocore's ``EventStream`` under another instrumentation's proxy: that proxy's one iterator
    parses the events (and sees them); a failure raised through it ends the package's stream."""

    __slots__ = ()

    @staticmethod
    def source(stream: Any) -> Any:
        return iter(stream)

    def __iter__(self) -> Iterator[Any]:
        for event in self._self_events:
            if event:
                yield self._translate(event)


class AsyncThroughProxy(Proxy):
    """aiobotocore's ``AioEventStream`` under another instrumentation's proxy (``async for``)."""

    __slots__ = ()

    @staticmethod
    def source(stream: Any) -> Any:
        return stream.__aiter__()

    def __iter__(self) -> Any:
        return self._self_wrapped.__iter__()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self.__anext__()

    async def __anext__(self) -> AsyncIterator[Any]:  # type: ignore[misc]
        async for event in self._self_events:
            if event:
                yield self._translate(event)
