"""The groq SDK: the same Stainless stream design and the same chunk shape as OpenAI chat."""

from __future__ import annotations

from otel_toolcalls._sdks.stainless import Route, StainlessSDK
from otel_toolcalls._wiring.patches import Extra, Requires, Tested

from .formats.chat_completions import translate_chunk

SDK = StainlessSDK(
    module="groq",
    provider="groq",
    routes=[Route(lambda path: path.endswith("/chat/completions"), translate_chunk, "chat")],
    # Leaving `with_streaming_response` closes the APIResponse, never the Stream it parsed.
    helper_closes=[
        ("groq._response", "APIResponse.close", "http_response"),
        ("groq._response", "AsyncAPIResponse.close", "http_response"),
    ],
)

# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="groq",
    targets=SDK.targets,
    provider=SDK.provider,
    tested=(Tested("groq", "0.11", "1.7.0"),),
    extra=Extra("groq"),
)

# The SDK object is the adapter: the instrumentor calls these.
instrument = SDK.instrument
uninstrument = SDK.uninstrument
