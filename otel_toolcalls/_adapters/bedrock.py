"""AWS Bedrock ConverseStream through boto3 / botocore (sync only: botocore has no async client).

``converse_stream()`` returns ``{"stream": botocore.eventstream.EventStream, ...}``. The stream holds
one raw event generator; ``EventStream.__iter__`` is a generator function, so every ``for`` loop
over it gets a new generator, and a ``break`` closes only that loop's generator while a second loop
continues the same stream. So the stream's end is read from the raw event generator (exhausted,
raising, or collected), never from a loop's end.

Choke points, and why:
- ``BaseClient._make_api_call``: the request's start time, parent context, ``modelId`` and endpoint;
  the ``EventStream`` is built inside this call, so a context variable carries them to it.
- ``EventStream.__init__`` (``ConverseStream`` only): wraps the raw event generator in the
  finalize-once wrapper and puts a per-stream ``_parse_event`` on the instance, which sees each
  parsed event and each exception frame (botocore raises ``EventStreamError`` there).
- ``EventStream.close``: ``closed`` needs a close the package saw.
"""

from __future__ import annotations

import contextvars
import logging
import time
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .. import _replay
from .._core import RequestInfo, StreamState
from .._stream import bind, close_seen, foreign_inference_span, install_exit_hook, watch, wrap_sync
from .._telemetry import Telemetry
from ._bedrock_converse import process_event
from ._patches import Patches, Requires
from ._shared import guarded, server_of

_log = logging.getLogger(__name__)

PROVIDER = "aws.bedrock"
OPERATION = "ConverseStream"

_PATCHES = (
    ("botocore.client", "BaseClient", "_make_api_call"),
    ("botocore.eventstream", "EventStream", "__init__"),
    ("botocore.eventstream", "EventStream", "close"),
)
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="botocore", targets=tuple((m, f"{o}.{a}") for m, o, a in _PATCHES), provider=PROVIDER
)


@dataclass
class _Request:
    start_ns: int
    parent: otel_context.Context
    model: str | None
    host: str | None
    port: int | None
    state: StreamState | None = None
    replayed: _replay.Replayed | None = None


_pending: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "otel_toolcalls_bedrock_pending", default=None
)
_patches = Patches()


def _raw_event(state: StreamState, message: Any) -> None:
    # The raw frame only times the stream (first chunk, buffered check); the event is read after
    # botocore has parsed it, in the instance's _parse_event.
    return None


def instrument(telemetry: Telemetry) -> bool:
    try:
        import botocore.client
        import botocore.eventstream  # noqa: F401
    except ImportError:
        return False

    def api_call_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            request = _begin(instance, args, kwargs)
            if request is not None:
                params = args[1] if len(args) > 1 else kwargs.get("api_params")
                request.replayed = _replay.scan(telemetry, _replay.bedrock_ids, params)
        except Exception:
            _log.debug("otel_toolcalls: could not read a Bedrock request", exc_info=True)
            request = None
        if request is None:
            return wrapped(*args, **kwargs)
        token = _pending.set(request)
        try:
            return wrapped(*args, **kwargs)
        except Exception as exc:
            guarded(_request_failed, telemetry, request, exc)
            raise
        finally:
            _pending.reset(token)

    def init_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
        wrapped(*args, **kwargs)
        if getattr(instance, "_operation_name", None) == OPERATION and is_instrumentation_enabled():
            guarded(_start_stream, telemetry, instance)

    def close_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        close_seen(instance)
        return wrapped(*args, **kwargs)

    wrappers = {"_make_api_call": api_call_wrapper, "__init__": init_wrapper, "close": close_wrapper}
    for module, owner, method in _PATCHES:
        _patches.wrap(module, f"{owner}.{method}", wrappers[method])
    return bool(_patches)


def uninstrument() -> None:
    # Streams already built keep their per-instance hooks and end as they would have.
    _patches.unwrap_all()


def _begin(client: Any, args: Any, kwargs: Any) -> _Request | None:
    operation = args[0] if args else kwargs.get("operation_name")
    if operation != OPERATION or not is_instrumentation_enabled():
        return None
    params = args[1] if len(args) > 1 else kwargs.get("api_params")
    model = params.get("modelId") if isinstance(params, dict) else None
    host, port = server_of(getattr(getattr(client, "meta", None), "endpoint_url", None))
    return _Request(
        time.time_ns(), otel_context.get_current(), model if isinstance(model, str) else None, host, port
    )


def _request_info(request: _Request) -> RequestInfo:
    return RequestInfo(
        provider=PROVIDER,
        model=request.model,
        operation="chat",
        server_address=request.host,
        server_port=request.port,
        start_ns=request.start_ns,
        parent=request.parent,
        adopted_span=foreign_inference_span(request.parent),
    )


def _start_stream(telemetry: Telemetry, stream: Any) -> None:
    events = stream._event_generator
    if not hasattr(events, "__next__"):
        # A subclass with an async generator (aiobotocore's AioEventStream): not supported.
        _log.debug("otel_toolcalls: %r has no sync event generator; not traced", type(stream))
        return
    request = _pending.get()
    if request is None:
        # Built outside _make_api_call (a test double, a custom parser): no model or endpoint.
        request = _Request(time.time_ns(), otel_context.get_current(), None, None, None)
    state = StreamState(telemetry, _request_info(request))
    request.state = state
    _replay.record(telemetry, request.replayed, state.span, PROVIDER, request.model)
    stream._event_generator = wrap_sync(events, state, _raw_event)
    stream._parse_event = _parse_hook(stream._parse_event, state)
    bind(stream, state)
    watch(stream, state)
    install_exit_hook()


def _parse_hook(parse: Any, state: StreamState) -> Any:
    """The stream's own ``_parse_event``, seen: an exception frame raises here, unchanged."""

    def parse_event(message: Any) -> Any:
        try:
            event = parse(message)
        except BaseException as exc:
            guarded(state.failed, exc)
            raise
        try:
            process_event(state, event)
        except Exception:
            _log.debug("otel_toolcalls: could not process a Bedrock event", exc_info=True)
        return event

    return parse_event


def _request_failed(telemetry: Telemetry, request: _Request, exc: BaseException) -> None:
    # The request failed before any stream existed (throttled, denied, validation): the inference
    # span still records it.
    if request.state is not None or not telemetry.settings.inference_spans:
        return
    if foreign_inference_span(request.parent) is not None:
        return
    StreamState(telemetry, _request_info(request)).failed(exc)
