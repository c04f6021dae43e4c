"""The mistralai SDK: ``chat.stream()`` / ``chat.stream_async()``.

Both return an ``EventStream`` / ``EventStreamAsync`` that pulls from one generator it builds at
construction; the package swaps that generator for its finalize-once wrapper before the user
sees the stream, and hooks ``close`` (a ``with`` exit goes through it too). The chunks are
OpenAI-Chat-shaped (``CompletionEvent.data`` is a ``CompletionChunk``), with two differences the
translator below absorbs: the call id defaults to the string ``"null"``, and name and id may be
repeated on every delta of a call.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from .. import _usage as usage
from .._core import RequestInfo, StreamState
from .._stream import (
    bind,
    close_seen,
    foreign_inference_span,
    install_exit_hook,
    watch,
    wrap_async,
    wrap_sync,
)
from .._telemetry import Telemetry
from ._chat_completions import _call_id
from ._patches import Patches, Requires
from ._shared import guarded, server_of

_log = logging.getLogger(__name__)

PROVIDER = "mistral_ai"
_CHAT = "mistralai.client.chat"
_EVENTS = "mistralai.client.utils.eventstreaming"
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
REQUIRES = Requires(
    sdk="mistralai",
    targets=(
        (_CHAT, "Chat.stream"),
        (_CHAT, "Chat.stream_async"),
        (_EVENTS, "EventStream.close"),
        (_EVENTS, "EventStreamAsync.close"),
    ),
    provider=PROVIDER,
)
_patches = Patches()


# -- translator ------------------------------------------------------------------------------------


def process_event(state: StreamState, event: Any) -> None:
    chunk = event.data
    if state.response_id is None:
        state.response_id = getattr(chunk, "id", None) or ""
        state.response_model = getattr(chunk, "model", None)
    for choice in chunk.choices:
        tool_calls = choice.delta.tool_calls
        if tool_calls:
            _tool_calls(state, choice=choice.index or 0, tool_calls=tool_calls)
        finish_reason = choice.finish_reason
        if finish_reason is not None:
            # {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"tool_calls"}]}
            state.settle(finish_reason, choice=choice.index or 0, completes_open=True)
            # The finish chunk carries the usage: {"usage":{"prompt_tokens":20,"completion_tokens":9,...}}
            state.usage = usage.openai_chat(getattr(chunk, "usage", None))
            state.final_event()


def _tool_calls(state: StreamState, *, choice: int, tool_calls: Any) -> None:
    open_calls = state.open
    for position, tool_call in enumerate(tool_calls):
        # The SDK fills an index the server left out with 0. Mistral has sent parallel calls whole,
        # side by side in one delta, without an index: there the position in the list tells them
        # apart (a call sent whole needs no later delta to find it again).
        index = tool_call.index if "index" in tool_call.model_fields_set else position
        key = index if choice == 0 else (choice, index)
        function = tool_call.function
        call = open_calls.get(key)
        call_id = _call_id(tool_call.id)
        if call is None or (call_id is not None and call.call_id is not None and call_id != call.call_id):
            # {"index":0,"id":"D681PevKs","function":{"name":"get_weather","arguments":""}}
            if not function.name:
                continue
            state.block_started(key, name=function.name, call_id=call_id, index=index, choice=choice)
        # {"index":0,"id":"null","function":{"name":"get_weather","arguments":"{\"loc"}}: the name
        # repeated on an open index is the same call.
        arguments = function.arguments
        if isinstance(arguments, str):
            state.fragment(key, arguments)
        elif arguments:
            # The SDK types arguments as text or an object; an object would have to be serialized
            # to be measured, which the package never does.
            _log.debug("mistral tool-call arguments arrived as an object; not counted")


# -- wiring ------------------------------------------------------------------------------------------


def _server(response: Any) -> tuple[str | None, int | None]:
    return server_of(getattr(getattr(response, "request", None), "url", None))


def _sdk_span(response: Any) -> Any:
    # The SDK's own tracing hook (opt-in) keeps its request span on the request's extensions; it is
    # never made current, so the generic "current span" rule cannot find it.
    extensions = getattr(getattr(response, "request", None), "extensions", None) or {}
    span = extensions.get("_tracing_span")
    return span if span is not None and span.is_recording() else None


def _adopt(telemetry: Telemetry, stream: Any, start_ns: int, parent: Any, model: Any) -> None:
    response = stream.response
    host, port = _server(response)
    adopted = foreign_inference_span(parent) or _sdk_span(response)
    state = StreamState(
        telemetry,
        RequestInfo(
            provider=PROVIDER,
            model=model if isinstance(model, str) else None,
            server_address=host,
            server_port=port,
            start_ns=start_ns,
            parent=parent,
            adopted_span=adopted,
        ),
    )
    generator = stream.generator
    if hasattr(generator, "__anext__"):
        stream.generator = wrap_async(generator, state, process_event)
    else:
        stream.generator = wrap_sync(generator, state, process_event)
    bind(response, state)
    watch(stream, state)
    install_exit_hook()


def _failed(telemetry: Telemetry, start_ns: int, parent: Any, model: Any, exc: BaseException) -> None:
    # The request failed before any stream existed: the inference span still records it.
    if not telemetry.settings.inference_spans or foreign_inference_span(parent) is not None:
        return
    request = RequestInfo(
        PROVIDER, model if isinstance(model, str) else None, start_ns=start_ns, parent=parent
    )
    StreamState(telemetry, request).failed(exc)


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_CHAT)
        __import__(_EVENTS)
    except ImportError:
        return False

    def stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return wrapped(*args, **kwargs)
        start_ns, parent, model = time.time_ns(), otel_context.get_current(), kwargs.get("model")
        try:
            result = wrapped(*args, **kwargs)
        except Exception as exc:
            guarded(_failed, telemetry, start_ns, parent, model, exc)
            raise
        guarded(_adopt, telemetry, result, start_ns, parent, model)
        return result

    async def stream_async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not is_instrumentation_enabled():
            return await wrapped(*args, **kwargs)
        start_ns, parent, model = time.time_ns(), otel_context.get_current(), kwargs.get("model")
        try:
            result = await wrapped(*args, **kwargs)
        except Exception as exc:
            guarded(_failed, telemetry, start_ns, parent, model, exc)
            raise
        guarded(_adopt, telemetry, result, start_ns, parent, model)
        return result

    def close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        close_seen(getattr(instance, "response", None))
        return wrapped(*args, **kwargs)

    _patches.wrap(_CHAT, "Chat.stream", stream)
    _patches.wrap(_CHAT, "Chat.stream_async", stream_async)
    _patches.wrap(_EVENTS, "EventStream.close", close)
    _patches.wrap(_EVENTS, "EventStreamAsync.close", close)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
