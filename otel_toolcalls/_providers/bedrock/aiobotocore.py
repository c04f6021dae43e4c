"""AWS Bedrock streams through aiobotocore (used by aioboto3 and by frameworks calling Bedrock
from asyncio): ``converse_stream()`` and ``invoke_model_with_response_stream()``.

``AioBaseClient._make_api_call`` is a coroutine overriding botocore's; the ``AioEventStream`` it
returns is handed back as the async proxy of ``_providers.bedrock.streams``: the same translators as boto3's,
read with ``async for``; ``close()`` (sync, as the SDK's), cancellation while awaiting a chunk, and
collection end the stream as they say.
"""

from __future__ import annotations

from typing import Any

from otel_toolcalls._core.errors import guarded
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested

from .adapter import request_of, sending
from .streams import PROVIDER, hand_back

_TARGET = ("aiobotocore.client", "AioBaseClient._make_api_call")

# aiobotocore's own _make_request (a coroutine function): the call returns its coroutine after the
# check, made where the request is sent (adapter.SENT).
_SENT = ("aiobotocore.client", "AioBaseClient._make_request")
# What the adapter needs of the SDK (the instrumentor waits for and checks it).
# Its own version lanes (it pins botocore below the newest): 2.13.1 and 3.10.0; not in the main venv.
REQUIRES = Requires(
    sdk="aiobotocore", targets=(_TARGET, _SENT), provider=PROVIDER,
    tested=(Tested("aiobotocore", "2.13.1", "3.10.0"),),
    extra=Extra("aiobotocore", main_venv=False),
)
_patches = Patches()


def instrument(telemetry: Telemetry) -> bool:
    try:
        import aiobotocore.client  # noqa: F401
    except ImportError:
        return False

    async def api_call(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        request = request_of(telemetry, instance, args, kwargs)
        if request is None:
            return await wrapped(*args, **kwargs)
        result = await request.arun(wrapped(*args, **kwargs))
        guarded(hand_back, request, result)
        return result

    _patches.wrap(*_SENT, sending)
    return _patches.wrap(*_TARGET, api_call)


def uninstrument() -> None:
    _patches.unwrap_all()
