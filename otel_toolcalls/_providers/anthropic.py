"""The anthropic SDK: Messages streams, stable and beta, on every client class.

One set of patches for the SDK (``_sdks.stainless``); the translator is
``_providers.formats.anthropic_messages``.
"""

from __future__ import annotations

import logging
from typing import Any

from otel_toolcalls._sdks.stainless import Route, StainlessSDK
from otel_toolcalls._wiring.patches import Extra, Requires, Tested

from .formats.anthropic_messages import history_ids, translate_event

_log = logging.getLogger(__name__)


def _is_messages(path: str) -> bool:
    # "/v1/messages" (the beta twin adds "?beta=true", which the route drops before matching);
    # the rewritten Bedrock / Vertex paths, for streams built without a request the package saw
    # (a request the package saw is read before the SDK rewrites its URL: /v1/messages matches).
    return path.endswith(("/v1/messages", "/invoke-with-response-stream", ":streamRawPredict"))


def _sdk_span(stream: Any) -> Any:
    """The SDK's own span for the request of ``stream``, while it records.

    The SDK wraps the response body in a stream that carries an observer holding the call's span
    (``anthropic._tracing.SpanEndingStream.stream_observer``, a ``FirstEnd`` around a
    ``StreamedMessage``). The span was current only inside the SDK's ``request``, not where the
    stream is read, so it is found here rather than as the current span. That span (on by
    default) is the request's inference span: the tool-call spans are its children, and the
    package makes no inference span of its own.
    """
    body = getattr(getattr(stream, "response", None), "stream", None)
    observer = getattr(body, "stream_observer", None)
    if observer is None:
        return None
    span = getattr(getattr(observer, "inner", observer), "_span", None)
    if span is None or not span.is_recording():
        return None
    return span


def _sdk_traces(client: Any) -> bool:
    # anthropic 2.x: `_tracer` is None when ANTHROPIC_OPEN_TELEMETRY=false or open_telemetry=False.
    return getattr(client, "_tracer", None) is not None


# Before anthropic 1.14 the client does not name its platform: its class does.
_PLATFORM_CLIENTS = {
    "AnthropicBedrock": "aws.bedrock",
    "AsyncAnthropicBedrock": "aws.bedrock",
    "AnthropicVertex": "gcp.vertex_ai",
    "AsyncAnthropicVertex": "gcp.vertex_ai",
}


def _provider_of(client: Any) -> str | None:
    # AnthropicBedrock: "aws.bedrock"; AnthropicVertex: "gcp.vertex_ai"; Anthropic: "anthropic".
    name = getattr(client, "_gen_ai_provider_name", None)
    if isinstance(name, str):
        return name
    for cls in type(client).__mro__:
        if cls.__name__ in _PLATFORM_CLIENTS:
            return _PLATFORM_CLIENTS[cls.__name__]
    return None


# The SDK runs __stream__ lazily on a copy of the Stream the user holds: the state is keyed on the
# HTTP response both share, so close() on the original reaches it. Helper streams (MessageStream)
# read that Stream and close it through Stream.close: no helper close needs a patch of its own.
SDK = StainlessSDK(
    module="anthropic",
    provider="anthropic",
    routes=[Route(_is_messages, translate_event, "chat", history_ids)],
    find_sdk_span=_sdk_span,
    sdk_traces=_sdk_traces,
    provider_of=_provider_of,
    watch_streams=False,
)

# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="anthropic", targets=SDK.targets, provider=SDK.provider,
    tested=(Tested("anthropic", "0.43", "2.17.0"),),
    extra=Extra("anthropic"),
)

# The SDK object is the adapter: the instrumentor calls these.
instrument = SDK.instrument
uninstrument = SDK.uninstrument
