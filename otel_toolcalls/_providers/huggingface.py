"""huggingface_hub's ``InferenceClient.chat_completion(..., stream=True)`` and the async twin
(also reached as ``client.chat.completions.create``): OpenAI-shaped SSE chunks from TGI, vLLM and
the Inference Providers router, translated by the chat translator.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.owners import watch
from otel_toolcalls._core.request import Request, current, model_of
from otel_toolcalls._core.sink import Sink
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.returned import hand_back
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested

from .formats import chat_completions as chat

_log = logging.getLogger(__name__)

# The conventions have no well-known value for Hugging Face (it hosts and routes rather than makes
# models): the custom value, as contrib's smolagents instrumentation names its runtimes.
PROVIDER = "huggingface"
# The client's `provider` values that are the conventions' well-known names (used, as the
# conventions require); the others (the router's "auto", "hf-inference", together, fireworks-ai,
# ...) are Hugging Face's routing.
WELL_KNOWN = {"groq": "groq", "cohere": "cohere", "openai": "openai"}
_URL = ("http://", "https://")
_SYNC = "huggingface_hub.inference._client"
_ASYNC = "huggingface_hub.inference._generated._async_client"
# What the adapter needs of the SDK (the instrumentor waits for and checks it). chat_completion:
# the HTTP request is sent (an error status raised) inside it, then a bare generator of parsed
# chunks handed back; _inner_post: where the URL the provider helper built is known.
REQUIRES = Requires(
    sdk="huggingface_hub",
    targets=(
        (_SYNC, "InferenceClient.chat_completion"),
        (_SYNC, "InferenceClient._inner_post"),
        (_ASYNC, "AsyncInferenceClient.chat_completion"),
        (_ASYNC, "AsyncInferenceClient._inner_post"),
    ),
    tested=(Tested("huggingface_hub", "0.30.0", "2.5.0"),),
    extra=Extra("huggingface"),
)
_patches = Patches()


# -- translator: the chat one, with the quirks of the servers behind this client -------------------


def _index(tool_call: Any, position: int) -> int:
    # The client fills a field the server left out with None: the position in the delta stands in.
    index = tool_call.index
    return index if isinstance(index, int) else position


def translate_chunk(state: Sink, chunk: Any) -> None:
    # {"id":"","model":"tgi","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,
    #  "id":"","type":"function","function":{"name":"get_weather","arguments":"{\""}}]},
    #  "finish_reason":null}]}
    for choice in chunk.choices or ():
        delta = choice.delta
        calls = delta.tool_calls if delta is not None else None
        if calls is not None and type(calls) is not list:
            # TGI before 3.0 sent one call object, not a list, its name inside the arguments: no
            # block can be told from it.
            _log.debug("tool_calls is no list (TGI < 3.0): not counted")
            return
    chat.translate_chunk(state, chunk, index_of=_index)


# -- wiring ------------------------------------------------------------------------------------------


def provider_of(client: Any, kwargs: Any) -> str:
    target = getattr(client, "model", None) or kwargs.get("model")
    if isinstance(target, str) and target.startswith(_URL):
        return PROVIDER  # a URL is served as hf-inference, whatever `provider` says
    named = getattr(client, "provider", None)
    return WELL_KNOWN.get(named, PROVIDER) if isinstance(named, str) else PROVIDER


def _model(client: Any, kwargs: Any) -> str | None:
    model = model_of(kwargs.get("model") or getattr(client, "model", None))
    # A model given as a URL (a TGI or Inference Endpoint base URL) names no model: the server's
    # address is server.address, and the response says which model answered.
    return None if model is None or model.startswith(_URL) else model


def _new_request(telemetry: Telemetry, instance: Any, kwargs: Any) -> Request | None:
    if not kwargs.get("stream") or not is_instrumentation_enabled():
        return None
    try:
        return Request(telemetry, provider_of(instance, kwargs), _model(instance, kwargs))
    except Exception as exc:
        report("huggingface request", exc)
        return None


def _hand_back(request: Request, stream: Any) -> Any:
    # The client breaks on `data: [DONE]` and raises on an in-stream {"error": ...} payload
    # (GenerationError and siblings): both reach the finalize-once wrapper as the stream's end.
    try:
        traced = request.attach(stream, translate_chunk)
        state = request.stream()
        returned = hand_back(traced, on_close=state.closed)
        watch(returned, state)
        return returned
    except Exception as exc:
        report("huggingface stream", exc)
        return stream


def _inner_post(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    request = current()
    if request is not None:
        try:
            parameters = args[0] if args else kwargs.get("request_parameters")
            request.server = server_of(parameters.url)
        except Exception as exc:
            report("huggingface server", exc)
    return wrapped(*args, **kwargs)


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_SYNC)
        __import__(_ASYNC)
    except ImportError:
        return False

    def chat_completion(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = _new_request(telemetry, instance, kwargs)
        if request is None:
            return wrapped(*args, **kwargs)
        return _hand_back(request, request.run(lambda: wrapped(*args, **kwargs)))

    async def achat_completion(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = _new_request(telemetry, instance, kwargs)
        if request is None:
            return await wrapped(*args, **kwargs)
        return _hand_back(request, await request.arun(wrapped(*args, **kwargs)))

    _patches.wrap(_SYNC, "InferenceClient.chat_completion", chat_completion)
    _patches.wrap(_SYNC, "InferenceClient._inner_post", _inner_post)
    _patches.wrap(_ASYNC, "AsyncInferenceClient.chat_completion", achat_completion)
    _patches.wrap(_ASYNC, "AsyncInferenceClient._inner_post", _inner_post)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
