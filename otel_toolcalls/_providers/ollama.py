"""The ollama client's native API: ``Client.chat(..., stream=True)`` and ``AsyncClient.chat``.

Tool calls arrive whole, arguments parsed, in ``message.tool_calls``: each is a block that starts
and completes at its chunk (TELEMETRY section 6, "Whole calls"). Ollama's OpenAI-compatible ``/v1``
endpoint is reached through the openai SDK and traced by its adapter.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core import usage
from otel_toolcalls._core.errors import report
from otel_toolcalls._core.owners import watch
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.sink import Sink
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.returned import hand_back
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested

_log = logging.getLogger(__name__)

PROVIDER = "ollama"
_CLIENT = "ollama._client"
_CHAT_PATH = "/api/chat"
# What the adapter needs of the SDK (the instrumentor waits for and checks it). _request, not chat:
# ollama.chat is a method of a default client bound at import, which a class patch of chat made
# later never reaches; _request is looked up at every call, and builds the chunk generator.
REQUIRES = Requires(
    sdk="ollama",
    targets=((_CLIENT, "Client._request"), (_CLIENT, "AsyncClient._request")),
    provider=PROVIDER,
    tested=(Tested("ollama", "0.4.0", "0.6.3"),),
    extra=Extra("ollama"),
)
_patches = Patches()


# -- translator --------------------------------------------------------------------------------------


def translate_chunk(state: Sink, chunk: Any) -> None:
    # {"model":"qwen3:8b","created_at":"...","message":{"role":"assistant","content":"",
    #  "tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Zürich"}}}]},"done":false}
    if state.response_model is None:
        state.response_model = chunk.model or None
    message = chunk.message
    calls = message.tool_calls if message is not None else None
    if calls:
        for call in calls:
            _whole_call(state, call)
    if chunk.done:
        # {"model":"qwen3:8b",...,"done":true,"done_reason":"stop","prompt_eval_count":41,"eval_count":23}
        state.settle(chunk.done_reason)
        state.usage = usage.make(input_tokens=chunk.prompt_eval_count, output_tokens=chunk.eval_count)
        state.final_event()


def _whole_call(state: Sink, call: Any) -> None:
    function = call.function
    name = function.name if function is not None else None
    if not name:
        _log.debug("ollama tool call without a name; not counted")
        return
    # Calls have no index in the client's model: they are numbered in order of arrival. Nor an id
    # (its ToolCall drops a newer server's): no id (section 6, "No id"), unless the client keeps one.
    key = state.tool_calls
    call_id = getattr(call, "id", None)
    state.block_started(
        key, name=name, call_id=call_id if isinstance(call_id, str) else None, index=key, whole=True
    )
    state.block_completed(key)  # whole: a later done_reason ("length") does not cut it


# -- wiring ------------------------------------------------------------------------------------------


def _new_request(telemetry: Telemetry, instance: Any, args: Any, kwargs: Any) -> Request | None:
    # _request(ChatResponse, "POST", "/api/chat", json={...}, stream=True); generate has no tool calls.
    if not kwargs.get("stream") or len(args) < 3 or args[2] != _CHAT_PATH:
        return None
    if not is_instrumentation_enabled():
        return None
    body = kwargs.get("json")
    model = model_of(body.get("model")) if isinstance(body, dict) else None
    return Request(telemetry, PROVIDER, model, server=server_of(instance._client.base_url))


def _traced(request: Request, stream: Any) -> Any:
    # A bare generator from the client: one of the same kind, that sees close(), is handed back.
    traced = request.attach(stream, translate_chunk)
    state = request.stream()
    returned = hand_back(traced, on_close=state.closed)
    # A stream never iterated runs no code when collected: its collection is watched too.
    watch(returned, state)
    return returned


def _begin(telemetry: Telemetry, instance: Any, args: Any, kwargs: Any) -> Request | None:
    try:
        return _new_request(telemetry, instance, args, kwargs)
    except Exception as exc:
        report("ollama request", exc)
        return None


def _hand_back(request: Request | None, stream: Any) -> Any:
    if request is None:
        return stream
    try:
        return _traced(request, stream)
    except Exception as exc:
        report("ollama stream", exc)
        return stream


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(_CLIENT)
    except ImportError:
        return False

    def request(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        traced = _begin(telemetry, instance, args, kwargs)
        return _hand_back(traced, wrapped(*args, **kwargs))

    async def arequest(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        traced = _begin(telemetry, instance, args, kwargs)
        return _hand_back(traced, await wrapped(*args, **kwargs))

    _patches.wrap(_CLIENT, "Client._request", request)
    _patches.wrap(_CLIENT, "AsyncClient._request", arequest)
    return True


def uninstrument() -> None:
    _patches.unwrap_all()
