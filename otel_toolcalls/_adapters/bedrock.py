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

import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .. import _replay
from .._core import StreamState
from .._internal import report
from .._request import Request, current, model_of
from .._stream import close_seen
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
            request = _begin(telemetry, instance, args, kwargs)
        except Exception as exc:
            report("bedrock request", exc)
            request = None
        if request is None:
            return wrapped(*args, **kwargs)
        return request.run(lambda: wrapped(*args, **kwargs))

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


def _begin(telemetry: Telemetry, client: Any, args: Any, kwargs: Any) -> Request | None:
    operation = args[0] if args else kwargs.get("operation_name")
    if operation != OPERATION or not is_instrumentation_enabled():
        return None
    params = args[1] if len(args) > 1 else kwargs.get("api_params")
    model = params.get("modelId") if isinstance(params, dict) else None
    server = server_of(getattr(getattr(client, "meta", None), "endpoint_url", None))
    replayed = _replay.scan(telemetry, _replay.bedrock_ids, params)
    return Request(telemetry, PROVIDER, model_of(model), server=server, replayed=replayed, detail=OPERATION)


def _start_stream(telemetry: Telemetry, stream: Any) -> None:
    events = stream._event_generator
    if not hasattr(events, "__next__"):
        # A subclass with an async generator (aiobotocore's AioEventStream): not supported.
        _log.debug("otel_toolcalls: %r has no sync event generator; not traced", type(stream))
        return
    request = current()
    if request is None or request.detail != OPERATION:
        # Built outside _make_api_call (a test double, a custom parser): no model or endpoint.
        request = Request(telemetry, PROVIDER)
    stream._event_generator = request.attach(events, _raw_event, key=stream, owner=stream)
    stream._parse_event = _parse_hook(stream._parse_event, request.stream())


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
        except Exception as exc:
            report("_adapters._bedrock_converse.process_event", exc)
        return event

    return parse_event
