"""google-genai (Gemini Developer API and Vertex AI): ``generate_content_stream``, chats'
``send_message_stream``, sync and async, and the tools the SDK runs itself (``afc``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested, traced_instead

from . import afc
from .chunks import translate_chunk
from .streams import async_session, hand_back_stream, sync_session

GEMINI = "gcp.gemini"
VERTEX_AI = "gcp.vertex_ai"
OPERATION = "generate_content"

_MODELS, _CHATS, _EXTRA = "google.genai.models", "google.genai.chats", "google.genai._extra_utils"
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
# _generate_content_stream: one call per HTTP request (each automatic-function-calling round and
# continuation hop its own), one StreamState each. The public generators: bare, so the package
# hands back its own that sees close() (streams). _extra_utils: where the SDK runs Python tools.
REQUIRES = Requires(
    sdk="google-genai",
    targets=(
        (_MODELS, "Models._generate_content_stream"),
        (_MODELS, "AsyncModels._generate_content_stream"),
        (_MODELS, "Models.generate_content_stream"),
        (_MODELS, "AsyncModels.generate_content_stream"),
        (_CHATS, "Chat.send_message_stream"),
        (_CHATS, "AsyncChat.send_message_stream"),
        (_EXTRA, "get_function_response_parts"),
        (_EXTRA, "get_function_response_parts_async"),
        (_EXTRA, "invoke_function_from_dict_args"),
        (_EXTRA, "invoke_function_from_dict_args_async"),
    ),
    provider=GEMINI,
    tested=(Tested("google-genai", "1.55", "3.6.1"),),
    extra=Extra("gemini"),
)

_patches = Patches()
_telemetry: Telemetry | None = None


def instrument(telemetry: Telemetry) -> bool:
    global _telemetry
    try:
        __import__("google.genai.models")
        __import__("google.genai.chats")
        __import__("google.genai._extra_utils")
    except ImportError:
        return False
    _telemetry = telemetry
    models, chats, extra = "google.genai.models", "google.genai.chats", "google.genai._extra_utils"
    _patches.wrap(models, "Models._generate_content_stream", _request_wrapper)
    _patches.wrap(models, "AsyncModels._generate_content_stream", _async_request_wrapper)
    _patches.wrap(models, "Models.generate_content_stream", _sync_stream_wrapper)
    _patches.wrap(models, "AsyncModels.generate_content_stream", _async_stream_wrapper)
    _patches.wrap(chats, "Chat.send_message_stream", _sync_stream_wrapper)
    _patches.wrap(chats, "AsyncChat.send_message_stream", _async_stream_wrapper)
    _patches.wrap(extra, "get_function_response_parts", afc.responses_wrapper)
    _patches.wrap(extra, "get_function_response_parts_async", afc.async_responses_wrapper)
    _patches.wrap(extra, "invoke_function_from_dict_args", afc.invoke_wrapper)
    _patches.wrap(extra, "invoke_function_from_dict_args_async", afc.async_invoke_wrapper)
    return True


def uninstrument() -> None:
    global _telemetry
    _patches.unwrap_all()
    _telemetry = None


# -- the generators handed to the user -----------------------------------------------------------


def _sync_stream_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    site = "_providers.gemini.adapter._sync_stream_wrapper"
    return traced_instead(site, wrapped(*args, **kwargs), _handed_back, sync_session)


async def _async_stream_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    site = "_providers.gemini.adapter._async_stream_wrapper"
    return traced_instead(site, await wrapped(*args, **kwargs), _handed_back, async_session)


def _handed_back(stream: Any, session: Callable[[], Any]) -> Any:
    return hand_back_stream(stream, session())


# -- one request each ----------------------------------------------------------------------------


def _request_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # A generator function: the request is sent at the first next(), inside wrap_sync's guard.
    iterator = wrapped(*args, **kwargs)
    request = _new_request(instance, kwargs, sync_session())
    if request is None:
        return iterator
    return request.attach(iterator, translate_chunk, fresh=False)


async def _async_request_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # The request is sent by the await; the stream comes after it.
    request = _new_request(instance, kwargs, async_session())
    if request is None:
        return await wrapped(*args, **kwargs)
    iterator = await request.sent(wrapped(*args, **kwargs))
    return request.attach(iterator, translate_chunk, fresh=False)


def _new_request(instance: Any, kwargs: Any, session: Any) -> Request | None:
    telemetry = _telemetry
    if telemetry is None or not is_instrumentation_enabled():
        return None
    try:
        client = instance._api_client
        request = Request(
            telemetry,
            VERTEX_AI if getattr(client, "vertexai", False) else GEMINI,
            model_of(kwargs.get("model")),
            OPERATION,
            _server(client),
        )
        state = request.stream()
        if session is not None:
            session.add(state)
        return request
    except Exception as exc:
        report("gemini request", exc)
        return None


def _server(client: Any) -> tuple[str | None, int | None]:
    return server_of(getattr(getattr(client, "_http_options", None), "base_url", None))
