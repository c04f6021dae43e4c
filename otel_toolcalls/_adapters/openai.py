"""The openai SDK: Chat Completions streams (and, through the same patches, Responses streams).

One set of patches for the SDK (see ``_stainless``); the request path picks the translator.
"""

from __future__ import annotations

from .._replay import openai_chat_ids
from .._telemetry import Telemetry
from ._chat_completions import process_chunk as chat_chunk
from ._stainless import Route, StainlessSDK

SDK = StainlessSDK(
    module="openai",
    provider="openai",
    routes=[
        Route(lambda path: path.endswith("/chat/completions"), chat_chunk, "chat", openai_chat_ids),
    ],
    helper_closes=[
        ("openai.lib.streaming.chat._completions", "ChatCompletionStream.close", "_response"),
        ("openai.lib.streaming.chat._completions", "AsyncChatCompletionStream.close", "_response"),
        # Leaving `with_streaming_response` closes the APIResponse, never the Stream it parsed.
        ("openai._response", "APIResponse.close", "http_response"),
        ("openai._response", "AsyncAPIResponse.close", "http_response"),
    ],
)


def instrument(telemetry: Telemetry) -> bool:
    return SDK.instrument(telemetry)


def uninstrument() -> None:
    SDK.uninstrument()
