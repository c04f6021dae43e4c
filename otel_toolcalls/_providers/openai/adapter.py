"""The openai SDK: Chat Completions streams (and, through the same patches, Responses streams).

One set of patches for the SDK (``_sdks.stainless``); the request path picks the translator.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from otel_toolcalls._core import names as n
from otel_toolcalls._providers.formats import chat_completions, responses
from otel_toolcalls._sdks.stainless import Route, StainlessSDK
from otel_toolcalls._wiring.patches import Extra, Requires, Tested

# POST /responses (create); GET /responses/{id}?stream=true (``retrieve(stream=True)``, resuming a
# stored or background response): the conventions' ``fetch_response``, no inference of its own.
_RETRIEVE_PATH = re.compile(r"/responses/[^/]+$")

AZURE_OPENAI = "azure.ai.openai"


def provider_of(client: Any) -> str | None:
    # AzureOpenAI / AsyncAzureOpenAI: the conventions' "azure.ai.openai"; every other client "openai".
    azure = sys.modules.get("openai.lib.azure")
    base = getattr(azure, "BaseAzureClient", None)
    if base is not None and isinstance(client, base):
        return AZURE_OPENAI
    return None


SDK = StainlessSDK(
    module="openai",
    provider="openai",
    provider_of=provider_of,
    routes=[
        Route(
            lambda path: path.endswith("/chat/completions"),
            chat_completions.translate_chunk,
            "chat",
            chat_completions.history_ids,
        ),
        Route(
            lambda path: path.endswith("/responses"), responses.translate_event, "chat", responses.history_ids
        ),
        Route(
            lambda path: _RETRIEVE_PATH.search(path) is not None,
            responses.translate_event,
            n.OPERATION_FETCH_RESPONSE,
        ),
    ],
    helper_closes=[
        ("openai.lib.streaming.chat._completions", "ChatCompletionStream.close", "_response"),
        ("openai.lib.streaming.chat._completions", "AsyncChatCompletionStream.close", "_response"),
        # Leaving `with_streaming_response` closes the APIResponse, never the Stream it parsed.
        ("openai._response", "APIResponse.close", "http_response"),
        ("openai._response", "AsyncAPIResponse.close", "http_response"),
        # The Responses helper streams close the HTTP response directly, never Stream.close.
        ("openai.lib.streaming.responses._responses", "ResponseStream.close", "_response"),
        ("openai.lib.streaming.responses._responses", "AsyncResponseStream.close", "_response"),
    ],
)

# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="openai", targets=SDK.targets, provider=SDK.provider,
    tested=(Tested("openai", "1.40", "3.63.0"),),
    extra=Extra("openai"),
)

# The SDK object is the adapter: the instrumentor calls these.
instrument = SDK.instrument
uninstrument = SDK.uninstrument
