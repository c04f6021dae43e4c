"""LiteLLM: ``litellm.completion(stream=True)`` / ``acompletion`` return a ``CustomStreamWrapper``
yielding OpenAI-shaped chunks, whatever the provider behind it: traced here, with the provider
LiteLLM routed to, unless a provider SDK's own adapter already traces it.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import guarded
from otel_toolcalls._core.owners import keep, kept, watch
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.session import CLOSED, Session
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._core.stream import traced_elsewhere, wrap_async, wrap_sync
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested

from .formats.chat_completions import translate_chunk

_log = logging.getLogger(__name__)

_MODULE = "litellm.litellm_core_utils.streaming_handler"
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
# No one provider: each stream's is the one LiteLLM routed to (PROVIDERS).
REQUIRES = Requires(
    sdk="litellm",
    targets=tuple(
        (_MODULE, f"CustomStreamWrapper.{method}")
        for method in ("__init__", "__next__", "__anext__", "close", "aclose")
    ),
    tested=(Tested("litellm", "1.108.0", "1.110.2"),),
    extra=Extra("litellm"),
)
_patches = Patches()

# LiteLLM's provider names -> the GenAI conventions' well-known values; others pass as LiteLLM
# names them.
PROVIDERS = {
    "openai": "openai",
    "text-completion-openai": "openai",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "codestral": "mistral_ai",
    "cohere": "cohere",
    "cohere_chat": "cohere",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
    "watsonx_text": "ibm.watsonx.ai",
    "moonshot": "moonshot_ai",
    "azure_text": "azure.ai.openai",
    "text-completion-codestral": "mistral_ai",
}


class _Traced:
    """Per traced wrapper: its state, and the generator ``__next__`` pulls through once started;
    the wrapper's ``close`` ends the state through ``session``."""

    __slots__ = ("finished", "iterator", "pulling", "session", "state")

    def __init__(self, state: StreamState) -> None:
        self.state = state
        self.session = Session()
        self.session.add(state)
        self.iterator: Any = None
        # Once the traced iterator has ended (exhausted or raised), calls go to LiteLLM directly,
        # so that a wrapper read past its end behaves as it always did.
        self.finished = False
        # LiteLLM closes the stream itself when reading fails: that close is not the consumer's.
        self.pulling = False


def _sdk_state(completion_stream: Any) -> StreamState | None:
    # One request, one set of tool-call spans: routed through a provider SDK with its own adapter
    # (openai/..., azure/...), the stream is that adapter's; only LiteLLM's own HTTP handlers'
    # streams (hosted_vllm, anthropic, bedrock, ollama_chat...) are traced here.
    # Stainless streams (openai, groq, anthropic) carry `response`, mistral's too; each adapter
    # binds its state to that object when it traces the stream.
    keys = (getattr(completion_stream, name, None) for name in ("response", "_response"))
    return traced_elsewhere(*keys)


def _server(wrapper: Any) -> tuple[str | None, int | None]:
    params = wrapper.logging_obj.model_call_details.get("litellm_params") or {}
    return server_of(params.get("api_base"))


def _routed_provider(wrapper: Any) -> str:
    # The wrapper's own custom_llm_provider is "openai" for the OpenAI-compatible providers LiteLLM
    # calls through the openai SDK (moonshot...); the request's logging details keep the route's.
    details = getattr(getattr(wrapper, "logging_obj", None), "model_call_details", None) or {}
    routed = details.get("custom_llm_provider")
    return routed if isinstance(routed, str) and routed else wrapper.custom_llm_provider or "litellm"


def _start(telemetry: Telemetry, wrapper: Any) -> None:
    provider = _routed_provider(wrapper)
    sdk_state = _sdk_state(wrapper.completion_stream)
    if sdk_state is not None:
        # OpenAI-compatible providers (moonshot, deepseek, xai...) go through the openai SDK, whose
        # adapter saw only an OpenAI client: LiteLLM's routing names the provider.
        named = PROVIDERS.get(provider, provider)
        if provider != "litellm" and named != sdk_state.provider:
            sdk_state.set_provider(named)
        return
    request = Request(
        telemetry, PROVIDERS.get(provider, provider), model_of(wrapper.model), server=_server(wrapper)
    )
    state = request.stream()
    keep(wrapper, _Traced(state))
    watch(wrapper, state)


def _pull(next_chunk: weakref.WeakMethod[Any]) -> Iterator[Any]:
    # A weak reference: the generator is kept for the wrapper, so it must not keep the wrapper.
    while True:
        try:
            chunk = next_chunk()()  # type: ignore[misc]
        except StopIteration:
            return
        yield chunk


async def _apull(next_chunk: weakref.WeakMethod[Any]) -> AsyncIterator[Any]:
    while True:
        try:
            chunk = await next_chunk()()  # type: ignore[misc]
        except StopAsyncIteration:
            return
        yield chunk


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_MODULE)
    except ImportError:
        return False

    def init(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> None:
        wrapped(*args, **kwargs)
        if not is_instrumentation_enabled():
            return
        guarded(_start, telemetry, instance)

    def next_chunk(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        traced = kept(instance)
        if traced is None or traced.finished:
            return wrapped(*args, **kwargs)
        if traced.iterator is None:
            traced.iterator = wrap_sync(_pull(weakref.WeakMethod(wrapped)), traced.state, translate_chunk)
        traced.pulling = True
        try:
            return next(traced.iterator)
        except BaseException:
            traced.finished = True
            raise
        finally:
            traced.pulling = False

    async def anext_chunk(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        traced = kept(instance)
        if traced is None or traced.finished:
            return await wrapped(*args, **kwargs)
        if traced.iterator is None:
            traced.iterator = wrap_async(_apull(weakref.WeakMethod(wrapped)), traced.state, translate_chunk)
        traced.pulling = True
        try:
            return await traced.iterator.__anext__()
        except BaseException:
            traced.finished = True
            raise
        finally:
            traced.pulling = False

    def close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        traced = kept(instance)
        if traced is not None and not traced.pulling:
            traced.session.end_all(CLOSED)
        return wrapped(*args, **kwargs)

    # The wrapper is a class with __next__ / __anext__, not a generator: patched on the class, and
    # for a traced stream they pull through the package's finalize-once generator.
    for attr, wrapper in (
        ("CustomStreamWrapper.__init__", init),
        ("CustomStreamWrapper.__next__", next_chunk),
        ("CustomStreamWrapper.__anext__", anext_chunk),
        ("CustomStreamWrapper.close", close),
        ("CustomStreamWrapper.aclose", close),
    ):
        _patches.wrap(_MODULE, attr, wrapper)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
