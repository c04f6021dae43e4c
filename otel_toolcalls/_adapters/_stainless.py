"""Patches shared by the SDKs generated with Stainless (openai, groq, anthropic): same client base,
same ``_streaming.Stream`` / ``AsyncStream`` design, different chunk shapes.

Choke points, and why:
- ``Stream.__stream__`` / ``AsyncStream.__stream__``: every way to get a stream builds one (``create``,
  ``with_raw_response...parse()``, ``client.post(..., stream_cls=...)`` as LiteLLM does, helper
  streams), and every way to read one (``for``, ``next()``, helpers) goes through it.
- ``SyncAPIClient.request`` / ``AsyncAPIClient.request``: the moment the request is made and the
  context it is made in; the stream may be built later (raw responses) or lazily (anthropic).
- ``close`` of each stream class and helper stream: ``closed`` needs a close the package saw.
"""

from __future__ import annotations

import contextvars
import logging
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .. import _replay
from .._core import RequestInfo, StreamState
from .._stream import (
    Process,
    bind,
    close_seen,
    foreign_inference_span,
    install_exit_hook,
    watch,
    wrap_async,
    wrap_sync,
)
from .._telemetry import Telemetry
from ._patches import Patches
from ._shared import guarded, server_of

_log = logging.getLogger(__name__)


@dataclass
class Route:
    """Which streams a translator handles, by the request path."""

    matches: Callable[[str], bool]
    process: Process
    operation: str = "chat"
    # The call ids of a request body's input history, for the replayed-aborted-call check (_replay).
    history_ids: _replay.HistoryIds | None = None


@dataclass
class _Pending:
    start_ns: int
    parent: otel_context.Context
    route: Route
    model: str | None
    state: StreamState | None = None
    replayed: _replay.Replayed | None = None


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

    # -- wiring ------------------------------------------------------------------------------------

    @property
    def targets(self) -> tuple[tuple[str, str], ...]:
        # Every (module, "Class.method") instrument() wraps: the adapters' REQUIRES.
        streaming, base = f"{self.module}._streaming", f"{self.module}._base_client"
        own = [(streaming, f"{c}.{m}") for m in ("__stream__", "close") for c in ("Stream", "AsyncStream")]
        own += [(base, "SyncAPIClient.request"), (base, "AsyncAPIClient.request")]
        return (*own, *((module, attr) for module, attr, _ in self.helper_closes))

    def instrument(self, telemetry: Telemetry) -> bool:
        try:
            __import__(f"{self.module}._streaming")
            __import__(f"{self.module}._base_client")
        except ImportError:
            return False
        pending: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar(
            f"otel_toolcalls_{self.module}_pending", default=None
        )
        # Request context of streams built after their request returned (raw responses, anthropic's
        # lazy stream), keyed on the HTTP response.
        stashed: weakref.WeakKeyDictionary[Any, _Pending] = weakref.WeakKeyDictionary()
        sdk = self

        def new_state(instance: Any) -> tuple[StreamState, Route] | None:
            found = pending.get()
            response = getattr(instance, "response", None)
            if found is None and response is not None:
                found = stashed.pop(response, None)
            if found is not None:
                route, start_ns, parent, model = found.route, found.start_ns, found.parent, found.model
            else:
                options = getattr(instance, "_options", None)
                matched = sdk._route(options)
                if matched is None:
                    return None
                route, start_ns, parent, model = (
                    matched,
                    time.time_ns(),
                    otel_context.get_current(),
                    _model(options),
                )
            adopted = foreign_inference_span(parent)
            if adopted is None and sdk.find_sdk_span is not None:
                adopted = sdk.find_sdk_span(instance)
            client = getattr(instance, "_client", None)
            host, port = _server(client)
            state = StreamState(
                telemetry,
                RequestInfo(
                    provider=sdk._provider(client),
                    model=model,
                    operation=route.operation,
                    server_address=host,
                    server_port=port,
                    start_ns=start_ns,
                    parent=parent,
                    adopted_span=adopted,
                ),
            )
            if found is not None:
                found.state = state
                _replay.record(telemetry, found.replayed, state.span, state.provider, model)
            if response is not None:
                bind(response, state)
            if sdk.watch_streams:
                watch(instance, state)
            install_exit_hook()
            return state, route

        def stream_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            iterator = wrapped(*args, **kwargs)
            if not is_instrumentation_enabled():
                return iterator
            try:
                made = new_state(instance)
            except Exception:
                _log.debug("otel_toolcalls: could not start tracing a %s stream", sdk.module, exc_info=True)
                return iterator
            if made is None:
                return iterator
            state, route = made
            if hasattr(iterator, "__anext__"):
                return wrap_async(iterator, state, route.process)
            return wrap_sync(iterator, state, route.process)

        def begin(args: Any, kwargs: Any, instance: Any) -> tuple[_Pending | None, Any]:
            if not is_instrumentation_enabled():
                return None, None
            options = kwargs.get("options", args[1] if len(args) > 1 else None)
            route = sdk._route(options)
            if route is None:
                return None, None
            replayed = _replay.scan(telemetry, route.history_ids, getattr(options, "json_data", None))
            if not kwargs.get("stream", False):
                # No inference span of ours for a request that does not stream: the current span.
                span = trace.get_current_span()
                _replay.record(telemetry, replayed, span, sdk._provider(instance), _model(options))
                return None, None
            found = _Pending(
                time.time_ns(), otel_context.get_current(), route, _model(options), None, replayed
            )
            return found, pending.set(found)

        def finish(found: _Pending, result: Any) -> None:
            if found.state is None:
                response = getattr(result, "http_response", None) or getattr(result, "response", None)
                if response is not None:
                    stashed[response] = found

        def fail(found: _Pending, instance: Any, exc: BaseException) -> None:
            # The request failed before any stream existed: the inference span still records it.
            if found.state is not None:
                return
            if (
                not telemetry.settings.inference_spans
                or foreign_inference_span(found.parent) is not None
                or (sdk.sdk_traces is not None and sdk.sdk_traces(instance))
            ):
                span = trace.get_current_span(found.parent)
                _replay.record(telemetry, found.replayed, span, sdk._provider(instance), found.model)
                return
            host, port = _server(instance)
            state = StreamState(
                telemetry,
                RequestInfo(
                    sdk._provider(instance),
                    found.model,
                    found.route.operation,
                    host,
                    port,
                    found.start_ns,
                    found.parent,
                ),
            )
            _replay.record(telemetry, found.replayed, state.span, state.provider, found.model)
            state.failed(exc)

        def request_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            try:
                found, token = begin(args, kwargs, instance)
            except Exception:
                _log.debug("otel_toolcalls: could not read a %s request", sdk.module, exc_info=True)
                found = token = None
            if found is None:
                return wrapped(*args, **kwargs)
            try:
                result = wrapped(*args, **kwargs)
            except Exception as exc:
                guarded(fail, found, instance, exc)
                raise
            finally:
                pending.reset(token)
            guarded(finish, found, result)
            return result

        async def async_request_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            try:
                found, token = begin(args, kwargs, instance)
            except Exception:
                _log.debug("otel_toolcalls: could not read a %s request", sdk.module, exc_info=True)
                found = token = None
            if found is None:
                return await wrapped(*args, **kwargs)
            try:
                result = await wrapped(*args, **kwargs)
            except Exception as exc:
                guarded(fail, found, instance, exc)
                raise
            finally:
                pending.reset(token)
            guarded(finish, found, result)
            return result

        def close_wrapper(attribute: str) -> Callable[..., Any]:
            def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
                close_seen(getattr(instance, attribute, None))
                return wrapped(*args, **kwargs)

            return wrapper

        streaming = f"{self.module}._streaming"
        base = f"{self.module}._base_client"
        self._patches.wrap(streaming, "Stream.__stream__", stream_wrapper)
        self._patches.wrap(streaming, "AsyncStream.__stream__", stream_wrapper)
        self._patches.wrap(streaming, "Stream.close", close_wrapper("response"))
        self._patches.wrap(streaming, "AsyncStream.close", close_wrapper("response"))
        self._patches.wrap(base, "SyncAPIClient.request", request_wrapper)
        self._patches.wrap(base, "AsyncAPIClient.request", async_request_wrapper)
        for module, attr, response_attribute in self.helper_closes:
            self._patches.wrap(module, attr, close_wrapper(response_attribute))
        return True

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


def _model(options: Any) -> str | None:
    body = getattr(options, "json_data", None)
    if isinstance(body, dict):
        model = body.get("model")
        return model if isinstance(model, str) else None
    return None


def _server(client: Any) -> tuple[str | None, int | None]:
    return server_of(getattr(client, "base_url", None))
