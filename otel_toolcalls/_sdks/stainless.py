"""Patches shared by the SDKs generated with Stainless (openai, groq, anthropic): same client base,
same ``_streaming.Stream`` / ``AsyncStream`` design, different chunk shapes (one ``Route`` each).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core import replay
from otel_toolcalls._core.errors import guarded, report
from otel_toolcalls._core.peers import peer_inference_span, started_ns, suppressed_span
from otel_toolcalls._core.request import Request, current, stash, stashed
from otel_toolcalls._core.sink import Translator
from otel_toolcalls._core.stream import close_seen
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._wiring.patches import Patches

from .servers import server_of


@dataclass
class Route:
    """Which streams a translator handles, by the request path."""

    matches: Callable[[str], bool]
    translate: Translator
    operation: str = "chat"
    # The call ids of a request body's input history, for the replayed-aborted-call check (_core.replay).
    history_ids: replay.HistoryIds | None = None


@dataclass(frozen=True, eq=False)
class Routed:
    """A request's ``route``: the SDK whose patches made the request, and the route they matched."""

    sdk: StainlessSDK
    route: Route


@dataclass
class StainlessSDK:
    module: str
    provider: str
    routes: Sequence[Route]
    # (module, "Class.close", attribute of the instance holding the HTTP response)
    helper_closes: Sequence[tuple[str, str, str]] = ()
    # Hook for an SDK that may already trace the request itself (anthropic): returns its span.
    find_sdk_span: Callable[[Any], Any] | None = None
    # Hook: whether the SDK client traces its requests itself; then a request that fails before any
    # stream exists gets no inference span from the package (the SDK's own span records it).
    sdk_traces: Callable[[Any], bool] | None = None
    # Hook: the provider name for one client, where a client class serves another platform
    # (anthropic's AnthropicBedrock is `aws.bedrock`); `provider` otherwise.
    provider_of: Callable[[Any], str | None] | None = None
    # Watch the stream object for garbage collection. Off where ``__stream__`` runs on a private
    # copy (anthropic): the copy dies with the SDK's generator, even when the stream ended normally;
    # dropping the user's object closes the wrapping generator instead, which reports `abandoned`.
    watch_streams: bool = True
    _patches: Patches = field(default_factory=Patches)
    _telemetry: Any = None

    # -- wiring ------------------------------------------------------------------------------------

    @property
    def targets(self) -> tuple[tuple[str, str], ...]:
        # Every (module, "Class.method") instrument() wraps: the adapters' REQUIRES.
        streaming, base = f"{self.module}._streaming", f"{self.module}._base_client"
        methods = ("__init__", "__stream__", "close")
        own = [(streaming, f"{c}.{m}") for m in methods for c in ("Stream", "AsyncStream")]
        own += [(base, "SyncAPIClient.request"), (base, "AsyncAPIClient.request")]
        return (*own, *((module, attr) for module, attr, _ in self.helper_closes))

    def instrument(self, telemetry: Telemetry) -> bool:
        """The choke points. ``__stream__``: every way to get a stream builds one (``create``,
        ``with_raw_response...parse()``, ``client.post(..., stream_cls=...)`` as LiteLLM does,
        helpers) and every way to read one goes through it. ``request``: the moment and context the
        request is made in; the stream may be built later (raw responses) or lazily (anthropic).
        ``close`` of each stream and helper: ``closed`` needs a close the package saw.
        ``__init__``: where a peer made the request (``_built``)."""
        try:
            __import__(f"{self.module}._streaming")
            __import__(f"{self.module}._base_client")
        except ImportError:
            return False
        self._telemetry = telemetry
        streaming, base = f"{self.module}._streaming", f"{self.module}._base_client"
        for cls in ("Stream", "AsyncStream"):
            self._patches.wrap(streaming, f"{cls}.__init__", self._init_wrapper)
            self._patches.wrap(streaming, f"{cls}.__stream__", self._stream_wrapper)
            self._patches.wrap(streaming, f"{cls}.close", _close_wrapper("response"))
        self._patches.wrap(base, "SyncAPIClient.request", self._request_wrapper)
        self._patches.wrap(base, "AsyncAPIClient.request", self._async_request_wrapper)
        for module, attr, response_attribute in self.helper_closes:
            self._patches.wrap(module, attr, _close_wrapper(response_attribute))
        return True

    # -- the request: where its context is read ------------------------------------------------------

    def _request_wrapper(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = self._begin_guarded(instance, args, kwargs)
        if request is None:
            return wrapped(*args, **kwargs)
        result = request.run(lambda: wrapped(*args, **kwargs))
        guarded(_stash, request, result)
        return result

    async def _async_request_wrapper(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = self._begin_guarded(instance, args, kwargs)
        if request is None:
            return await wrapped(*args, **kwargs)
        result = await request.arun(wrapped(*args, **kwargs))
        guarded(_stash, request, result)
        return result

    def _begin_guarded(self, instance: Any, args: Any, kwargs: Any) -> Request | None:
        if not _enabled():
            return None
        try:
            return self._begin(instance, args, kwargs)
        except Exception as exc:
            report(f"{self.module} request", exc)
            return None

    def _begin(self, client: Any, args: Any, kwargs: Any) -> Request | None:
        options = kwargs.get("options", args[1] if len(args) > 1 else None)
        route = self._route(options)
        if route is None:
            return None
        telemetry = self._telemetry
        replayed = replay.scan(telemetry, route.history_ids, getattr(options, "json_data", None))
        if not kwargs.get("stream", False):
            # No inference span of ours for a request that does not stream: the current span, looked
            # up only for a replayed aborted call (the SDK's own tracing may be off, or none at all).
            if replayed:
                span = trace.get_current_span()
                replay.record(telemetry, replayed, span, self._provider(client), _model(options))
            return None
        return self._new_request(client, options, route, replayed=replayed)

    def _new_request(self, client: Any, options: Any, route: Route, **known: Any) -> Request:
        return Request(
            self._telemetry,
            self._provider(client),
            _model(options),
            route.operation,
            _server(client),
            sdk_traces=self.sdk_traces is not None and bool(self.sdk_traces(client)),
            route=Routed(self, route),
            **known,
        )

    # -- the stream: where the request meets its iterator --------------------------------------------

    def _init_wrapper(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
        wrapped(*args, **kwargs)
        guarded(self._built, kwargs)

    def _built(self, kwargs: dict[str, Any]) -> None:
        """A stream built with no request of this adapter's in flight: under a peer's
        inference span (or a suppressed stand-in sharing its context), the request is the one made
        here (the span and its context end before the stream is read, where the package sees the
        stream next), from the span's start. What it reads are the stream's keyword-only
        arguments (``response``, ``client``, ``options``), never the stream's private state.

        Logfire, say, replaces the client's ``request`` with one calling the SDK's unpatched method,
        and may suppress other instrumentation for the SDK's call: the tool-call spans still go under
        its span, and the package adds none the peer made (no inference span, no HTTP span)."""
        response = kwargs.get("response")
        if current() is not None or response is None or stashed(response):
            return
        parent = otel_context.get_current()
        span = peer_inference_span(parent) or suppressed_span(parent)
        options = kwargs.get("options")
        route = self._route(options) if span is not None else None
        if route is None:
            return
        request = self._new_request(kwargs.get("client"), options, route, parent=parent)
        request.peer_span, request.start_ns = span, started_ns(span) or request.start_ns
        stash(response, request)

    def _stream_wrapper(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        iterator = wrapped(*args, **kwargs)
        if not _enabled():
            return iterator
        try:
            return self._attach(instance, iterator)
        except Exception as exc:
            report(f"{self.module} stream", exc)
            return iterator

    def _attach(self, stream: Any, iterator: Any) -> Any:
        response = getattr(stream, "response", None)
        request = current(response)
        route = self._route_of(request)
        if request is None or route is None:
            # Built outside a request this adapter saw (a stream made by hand, or a peer's wrapper of
            # the client's `request` shadowing the package's): from its options, or the request sent.
            options = getattr(stream, "_options", None) or _sent(stream)
            route = self._route(options)
            if route is None:
                return iterator
            request = self._new_request(getattr(stream, "_client", None), options, route)
        find = None if self.find_sdk_span is None else functools.partial(self.find_sdk_span, stream)
        owner = stream if self.watch_streams else None
        return request.attach(iterator, route.translate, key=response, owner=owner, find_sdk_span=find)

    def _route_of(self, request: Request | None) -> Route | None:
        """The route of a request these patches made; None for another adapter's (LiteLLM's, another
        Stainless SDK's) or none."""
        routed = request.route if request is not None else None
        return routed.route if isinstance(routed, Routed) and routed.sdk is self else None

    def uninstrument(self) -> None:
        self._patches.unwrap_all()

    def _provider(self, client: Any) -> str:
        if self.provider_of is not None and client is not None:
            return self.provider_of(client) or self.provider
        return self.provider

    def _route(self, options: Any) -> Route | None:
        url = getattr(options, "url", None)
        if not isinstance(url, str):
            return None
        path = url.split("?", 1)[0]
        for route in self.routes:
            if route.matches(path):
                return route
        return None


def _enabled() -> bool:
    """Instrumentation is not suppressed, or suppressed under a peer's inference span."""
    return is_instrumentation_enabled() or peer_inference_span(otel_context.get_current()) is not None


@dataclass(frozen=True)
class _Sent:
    """A stream's request as its HTTP request shows it, where the stream keeps no options (openai
    before 3.x): what ``_route`` and ``_model`` read of the options."""

    url: str
    json_data: Any


def _sent(stream: Any) -> _Sent | None:
    request: Any = getattr(getattr(stream, "response", None), "request", None)
    path = getattr(getattr(request, "url", None), "path", None)
    if not isinstance(path, str):
        return None
    try:
        body = json.loads(request.content)
    except (RuntimeError, TypeError, ValueError):  # a body not read, or not JSON: no model known
        body = None
    return _Sent(path, body)


def _model(options: Any) -> str | None:
    body = getattr(options, "json_data", None)
    if isinstance(body, dict):
        model = body.get("model")
        return model if isinstance(model, str) else None
    return None


def _server(client: Any) -> tuple[str | None, int | None]:
    return server_of(getattr(client, "base_url", None))


def _stash(request: Request, result: Any) -> None:
    # A raw response (or anthropic's lazy stream): the stream is built later, on its HTTP response.
    stash(getattr(result, "http_response", None) or getattr(result, "response", None), request)


def _close_wrapper(attribute: str) -> Callable[..., Any]:
    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        close_seen(getattr(instance, attribute, None))
        return wrapped(*args, **kwargs)

    return wrapper
