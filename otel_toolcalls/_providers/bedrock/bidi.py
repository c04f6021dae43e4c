"""Bedrock's bidirectional stream (Nova Sonic) through the smithy-based AWS SDK
(``aws-sdk-bedrock-runtime``, not boto3): HTTP/2 through the AWS CRT client, SigV4-signed
event-stream frames both ways.

Choke points: ``AsyncBedrockRuntimeClient.invoke_model_with_bidirectional_stream`` (the model asked
for, the endpoint) returns the ``DuplexEventStream``; its ``await_output`` hands over the receiver
(smithy's ``AWSEventReceiver``), whose ``receive`` reads every output event, returns None at the
stream's end and raises what the connection raised; ``DuplexEventStream.close`` is the user's close.
A connection dropped between two events reads as the stream's end (the SDK's ``receive`` returns
None): calls still open are ``incomplete``; one dropped inside a frame raises (``stream_error``).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import guarded, report
from otel_toolcalls._core.owners import keep, kept, watch
from otel_toolcalls._core.request import Request, model_of
from otel_toolcalls._core.session import CLOSED, ENDED, Ending, Session, failed
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking import settling
from otel_toolcalls._sdks.servers import server_of
from otel_toolcalls._wiring.patches import Extra, Patches, Requires, Tested

from .bidi_events import translate_event
from .streams import PROVIDER

CLIENT = "aws_sdk_bedrock_runtime.client"
DUPLEX = "smithy_core.aio.eventstream"
RECEIVER = "smithy_aws_event_stream.aio"
NAME = "bedrock_bidi"
REQUIRES = Requires(
    sdk="aws-sdk-bedrock-runtime",
    targets=(
        (CLIENT, "AsyncBedrockRuntimeClient.invoke_model_with_bidirectional_stream"),
        (DUPLEX, "DuplexEventStream.await_output"),
        (DUPLEX, "DuplexEventStream.close"),
        (RECEIVER, "AWSEventReceiver.receive"),
    ),
    provider=PROVIDER,
    # The smithy-based AWS SDK (not boto3): its bidirectional stream (Nova Sonic) needs Python 3.12+;
    # 0.11.0 is the release Strands' bidi extra requires (>=0.11,<0.12). Lanes bidi and bidi-floor
    # (with Strands), bidi-sdk (0.12.0 alone), on Python 3.12.
    tested=(Tested("aws-sdk-bedrock-runtime", "0.11.0", "0.12.0"),),
    extra=Extra("bedrock-bidi", main_venv=False),
)
OPERATION = "chat"

_patches = Patches()
_telemetry: list[Telemetry] = []


# The key of the turn open now: a bidirectional stream has one at a time.
_TURN = "turn"


class BidiSession:
    """One bidirectional stream: the turn open now (the one stream of its ``Session``) and its
    open tool blocks. Never references the SDK's objects it is kept for."""

    def __init__(self, telemetry: Telemetry, model: str | None, endpoint: Any) -> None:
        self.telemetry = telemetry
        self.model = model
        self.server = server_of(endpoint)
        self.turns = Session()
        self.tools: dict[str, str] = {}

    @property
    def turn(self) -> StreamState | None:
        return self.turns.get(_TURN)

    def open_turn(self, owner: Any) -> StreamState | None:
        state = self.turns.get(_TURN)
        if state is None:
            request = Request(self.telemetry, PROVIDER, self.model, OPERATION, self.server,
                              start_ns=time.time_ns(), parent=otel_context.get_current())  # fmt: skip
            state = self.turns.open(_TURN, request)
            if state is not None:
                state.first_chunk()
                watch(owner, state)
        return state

    def end_turn(self, how: Ending) -> None:
        self.turns.end(_TURN, how)
        # Every call of the turn has its outcome now: the executions waiting for it go on.
        tools, self.tools = self.tools, {}
        for call_id in tools.values():
            settling.settled(call_id)
        # Every call of the turn has its outcome now: the executions waiting for it go on.
        tools, self.tools = self.tools, {}
        for call_id in tools.values():
            settling.settled(call_id)


def _session(instance: Any) -> BidiSession | None:
    found = kept(instance)
    return found if isinstance(found, BidiSession) else None


def _opened(instance: Any, args: Any, kwargs: Any, stream: Any) -> None:
    operation_input = kwargs.get("input", args[0] if args else None)
    config = getattr(instance, "_config", None)
    model = model_of(getattr(operation_input, "model_id", None))
    keep(stream, BidiSession(_telemetry[0], model, getattr(config, "endpoint_uri", None)))


def _handed(instance: Any, result: Any) -> None:
    session = _session(instance)
    if session is not None and isinstance(result, tuple) and len(result) == 2:
        keep(result[1], session)


def _ended(instance: Any, how: Ending) -> None:
    session = _session(instance)
    if session is not None:
        session.end_turn(how)


# -- the wrappers --------------------------------------------------------------------------------


async def _invoke(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    stream = await wrapped(*args, **kwargs)
    if _telemetry and is_instrumentation_enabled():
        try:
            _opened(instance, args, kwargs, stream)
        except Exception as exc:
            report(f"{__name__}.session", exc)
    return stream


async def _await_output(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    result = await wrapped(*args, **kwargs)
    guarded(_handed, instance, result)
    return result


async def _close(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    guarded(_ended, instance, CLOSED)
    return await wrapped(*args, **kwargs)


async def _receive(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    try:
        chunk = await wrapped(*args, **kwargs)
    except Exception as exc:
        guarded(_ended, instance, failed(exc))
        raise
    if chunk is None:
        guarded(_ended, instance, ENDED)
    else:
        guarded(_received, instance, chunk)
    return chunk


def _received(instance: Any, chunk: Any) -> None:
    session = _session(instance)
    if session is not None:
        translate_event(session, chunk, instance)


_WRAPPERS = {
    REQUIRES.targets[0]: _invoke,
    REQUIRES.targets[1]: _await_output,
    REQUIRES.targets[2]: _close,
    REQUIRES.targets[3]: _receive,
}


def instrument(telemetry: Telemetry) -> bool:
    try:
        __import__(CLIENT)
    except ImportError:
        return False
    _telemetry[:] = [telemetry]
    for (module, attr), wrapper in _WRAPPERS.items():
        _patches.wrap(module, attr, wrapper)
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
    _telemetry.clear()
