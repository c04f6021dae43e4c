"""AWS Bedrock streams through boto3 / botocore: ``converse_stream()`` and
``invoke_model_with_response_stream()``.

One choke point, ``BaseClient._make_api_call``: the request's start time, parent context,
``modelId`` and endpoint are known when it is called, and the event stream it returns is handed
back as the traced proxy of ``_providers.bedrock.streams`` (which also sees ``close()``). aiobotocore's
client overrides this method with a coroutine: its own adapter, ``aiobotocore``.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import guarded, report
from otel_toolcalls._core.request import Request, current
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested

from .streams import PROVIDER, begin, hand_back

_TARGET = ("botocore.client", "BaseClient._make_api_call")
# Where botocore sends the request (aiobotocore's override too), inside every wrapper of
# _make_api_call: another instrumentation that wraps _make_api_call after the package (the official
# GenAI Bedrock one) has its inference span current only from there.
SENT = ("botocore.client", "BaseClient._make_request")
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="botocore", targets=(_TARGET, SENT), provider=PROVIDER,
    tested=(Tested("botocore", "1.34.116", "1.44.18"), Tested("boto3", "1.34.116", "1.44.18")),
    extra=Extra("bedrock", ("boto3",)),
)
_patches = Patches()


def sending(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    request = current()
    if request is not None:
        guarded(request.sending)
    return wrapped(*args, **kwargs)


def request_of(telemetry: Telemetry, instance: Any, args: Any, kwargs: Any) -> Request | None:
    """The request of a streaming Bedrock call, or None (any other operation, or instrumentation
    suppressed); a failure to read it is the package's, reported, and the call goes on untraced."""
    if not is_instrumentation_enabled():
        return None
    try:
        return begin(telemetry, instance, args, kwargs)
    except Exception as exc:
        report("bedrock request", exc)
        return None


def instrument(telemetry: Telemetry) -> bool:
    try:
        import botocore.client  # noqa: F401
    except ImportError:
        return False

    def api_call(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = request_of(telemetry, instance, args, kwargs)
        if request is None:
            return wrapped(*args, **kwargs)
        result = request.run(lambda: wrapped(*args, **kwargs))
        guarded(hand_back, request, result)
        return result

    _patches.wrap(*SENT, sending)
    return _patches.wrap(*_TARGET, api_call)


def uninstrument() -> None:
    # Streams already handed back stay traced to their end.
    _patches.unwrap_all()
