"""The openai SDK: Chat Completions streams (and, through the same patches, Responses streams).

One set of patches for the SDK (see ``_stainless``); the request path picks the translator.
"""

from __future__ import annotations

import re

from .._replay import openai_chat_ids, openai_responses_ids
from .._telemetry import Telemetry
from ._chat_completions import process_chunk as chat_chunk
from ._patches import Requires
from ._responses import process_event as responses_event
from ._stainless import Route, StainlessSDK

# POST /responses (create) and GET /responses/{id}?stream=true (resuming a background response).
_RESPONSES_PATH = re.compile(r"/responses(?:/[^/]+)?$")

SDK = StainlessSDK(
    module="openai",
    provider="openai",
    routes=[
        Route(lambda path: path.endswith("/chat/completions"), chat_chunk, "chat", openai_chat_ids),
        Route(
            lambda path: _RESPONSES_PATH.search(path) is not None,
            responses_event,
            "chat",
            openai_responses_ids,
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
REQUIRES = Requires(sdk="openai", targets=SDK.targets, provider=SDK.provider)


def instrument(telemetry: Telemetry) -> bool:
    return SDK.instrument(telemetry)


def uninstrument() -> None:
    SDK.uninstrument()
