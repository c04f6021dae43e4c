"""The smithy-based AWS SDK's bidirectional stream (``aws-sdk-bedrock-runtime``,
``invoke_model_with_bidirectional_stream``) against the fake Nova Sonic service: TLS and HTTP/2
through the SDK's own CRT client, SigV4-signed event-stream frames both ways. A tool block ends at
its ``contentEnd``, cut between ``toolUse`` and it (the connection dropped between frames, or inside
one), or interrupted by a barge-in. Python 3.12+ (the SDK's floor): the ``bidi`` lane."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aws_sdk_bedrock_runtime.client import (
    AsyncBedrockRuntimeClient,
    InvokeModelWithBidirectionalStreamOperationInput,
)
from aws_sdk_bedrock_runtime.config import AsyncBedrockRuntimeConfig, HTTPAuthSchemeResolver, SigV4AuthScheme
from aws_sdk_bedrock_runtime.models import (
    BidirectionalInputPayloadPart,
    InvokeModelWithBidirectionalStreamInputChunk,
)
from outcomes import assert_outcome
from smithy_aws_core.identity.static import StaticCredentialsResolver
from smithy_core.shapes import ShapeID

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls.testing import nova_sonic as nova

MODEL = "amazon.nova-sonic-v1:0"
ARGS = {"city": "Zürich"}
CALL = nova.tool_block("c_tool", "get_weather", "tu_1", ARGS)


def _chunk(event: dict[str, Any]) -> InvokeModelWithBidirectionalStreamInputChunk:
    payload = json.dumps({"event": event}).encode()
    return InvokeModelWithBidirectionalStreamInputChunk(value=BidirectionalInputPayloadPart(bytes_=payload))


async def _session(fake: nova.NovaSonicServer, close: bool = True) -> tuple[list[str], BaseException | None]:
    """Asks once (a USER text content), reads the output till the turn's end (or the stream's);
    the event types read and what ``receive()`` raised."""
    config = await AsyncBedrockRuntimeConfig.resolve(
        endpoint_uri=fake.endpoint, region="us-east-1",
        aws_credentials_identity_resolver=StaticCredentialsResolver(),
        auth_scheme_resolver=HTTPAuthSchemeResolver(),
        auth_schemes={ShapeID("aws.auth#sigv4"): SigV4AuthScheme(service="bedrock")},
        aws_access_key_id="AKIDFAKE", aws_secret_access_key="fake-secret",
        transport=nova.crt_transport(fake.ca_pem),
    )  # fmt: skip
    client = AsyncBedrockRuntimeClient(config=config)
    stream = await client.invoke_model_with_bidirectional_stream(
        InvokeModelWithBidirectionalStreamOperationInput(model_id=MODEL)
    )
    for event in ({"contentStart": {"contentName": "u1", "role": "USER", "type": "TEXT"}},
                  {"textInput": {"contentName": "u1", "content": "Weather in Zürich?"}},
                  {"contentEnd": {"contentName": "u1"}}):  # fmt: skip
        await stream.input_stream.send(_chunk(event))
    _, output = await stream.await_output()
    seen: list[str] = []
    raised: BaseException | None = None
    while True:
        try:
            chunk = await output.receive()
        except Exception as exc:
            raised = exc
            break
        if chunk is None:
            break
        kind, body = next(iter(json.loads(chunk.value.bytes_)["event"].items()))
        seen.append(kind)
        if kind == "contentEnd" and body.get("stopReason") in ("END_TURN", "INTERRUPTED"):
            break  # the app's turn is over: it stops reading and closes
    if close:
        await stream.close()
    return seen, raised


def _run(replies: list[nova.Reply], close: bool = True) -> tuple[list[str], BaseException | None]:
    with nova.NovaSonicServer(replies) as fake:
        found = asyncio.run(_session(fake, close))
    assert fake.exchanges and fake.exchanges[0].path.startswith("/model/")
    return found


def test_completed_call_and_its_execution(telemetry: Any, instrument: Any) -> None:
    seen, raised = _run([[*CALL, *nova.spoken("c_say", "Sunny.")]])
    assert raised is None and seen.count("toolUse") == 1 and seen[-1] == "contentEnd"
    span = telemetry.one("tool_call get_weather")
    assert_outcome(span, None)
    assert span.attributes[n.TOOLCALL_CALL_ID] == "tu_1"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(json.dumps(ARGS).encode())
    inference = telemetry.one(f"chat {MODEL}")
    assert inference.attributes[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
    assert inference.attributes[n.SERVER_ADDRESS] == "127.0.0.1"
    assert span.parent.span_id == inference.context.span_id
    assert tool_call_outcome("tu_1") == "completed"
    with execute_tool("tu_1", name="get_weather", strict=True):
        pass
    execution = telemetry.one("execute_tool get_weather")
    assert [link.context.span_id for link in execution.links] == [span.context.span_id]
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert inference.attributes[n.TOOLCALL_OUTCOME] == "completed"


def _refused(call_id: str) -> bool:
    ran = []
    with pytest.raises(IncompleteToolCallError), execute_tool(call_id, name="get_weather", strict=True):
        ran.append(True)
    return not ran


def test_dropped_between_events_is_incomplete(telemetry: Any, instrument: Any) -> None:
    # The SDK reads a connection closed between two frames as the stream's end.
    seen, raised = _run([[*CALL[:2], nova.DROP]])
    assert raised is None and seen == ["contentStart", "toolUse"]
    assert_outcome(telemetry.one("tool_call get_weather"), n.INCOMPLETE)
    assert tool_call_outcome("tu_1") == "aborted"
    assert _refused("tu_1")


def test_dropped_inside_a_frame_is_a_stream_error(telemetry: Any, instrument: Any) -> None:
    seen, raised = _run([[*CALL[:2], nova.CUT, CALL[2]]])
    assert seen == ["contentStart", "toolUse"]
    assert type(raised).__name__ == "InvalidEventBytes"
    error_type = f"{type(raised).__module__}.{type(raised).__qualname__}"
    assert_outcome(telemetry.one("tool_call get_weather"), n.STREAM_ERROR, error_type)
    assert _refused("tu_1")


def test_barge_in_cancels_the_open_call(telemetry: Any, instrument: Any) -> None:
    interrupted = nova.tool_block("c_tool", "get_weather", "tu_1", ARGS, stop_reason="INTERRUPTED")
    seen, raised = _run([interrupted])
    assert raised is None and seen == ["contentStart", "toolUse", "contentEnd"]
    assert_outcome(telemetry.one("tool_call get_weather"), n.CANCELLED)
    turn = telemetry.one(f"chat {MODEL}").attributes
    assert (turn[n.TOOLCALL_OUTCOME], turn[n.TOOLCALL_ABORT_REASON]) == ("aborted", n.CANCELLED)
    assert telemetry.calls_by_outcome() == {("aborted", n.CANCELLED): 1}
    assert _refused("tu_1")
