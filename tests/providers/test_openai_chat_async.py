"""The real openai SDK (async) against the FakeProvider: the async twin of each way in and each end."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from sdk_compat import bare_error_async, chat_helper_stream
from test_openai_chat import assert_call, assert_parented, helper_kwargs, inference

from otel_toolcalls._core import names as n
from otel_toolcalls._core.calls import error_type_of
from otel_toolcalls.testing import Script, sse
from otel_toolcalls.testing.openai_chat import (
    MODEL,
    WEATHER,
    arguments_by_index,
    chunk,
    events_for,
    legacy_error,
    request,
    tool_call_script,
)


@pytest.fixture
def client(fake: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0)


async def take(stream: Any, count: int) -> list[Any]:
    return [await stream.__anext__() for _ in range(count)]


async def test_anext_until_stop_async_iteration(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], finish_reason="length"))
    stream = await client.chat.completions.create(**request())
    got = []
    with pytest.raises(StopAsyncIteration):
        while True:
            got.append(await stream.__anext__())
    assert_call(telemetry, telemetry.one("tool_call "), reason="truncated", delivered=WEATHER.arguments)
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}


async def test_server_cut_async(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], cut_after=4), tool_call_script([WEATHER], cut_after=4))

    async def drain() -> None:
        async for _ in await client.chat.completions.create(**request()):
            pass

    # openai 3.x raises APIConnectionError, earlier releases the transport's own error.
    sdk_raises = await bare_error_async(drain)
    got: list[Any] = []
    with pytest.raises(sdk_raises) as raised:
        async for c in await client.chat.completions.create(**request()):
            got.append(c)
    assert type(raised.value) is sdk_raises
    delivered = arguments_by_index(got)[(0, 0)]
    span = telemetry.one("tool_call ")
    assert_call(
        telemetry, span, reason="stream_error", delivered=delivered, error_type=error_type_of(raised.value)
    )
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 3
    assert inference(telemetry).status.status_code is StatusCode.ERROR
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


async def test_legacy_error_payload_async(telemetry, instrument, fake, client):
    writes = [sse(chunk(e)) for e in events_for([WEATHER], finish_reason=None)[:3]]
    fake.enqueue(Script([*writes, legacy_error("rate limited", "rate_limit_error")]))
    with pytest.raises(openai.APIError, match="rate limited"):
        async for _ in await client.chat.completions.create(**request()):
            pass
    span = telemetry.one("tool_call ")
    assert span.attributes[n.ERROR_TYPE] == "openai.APIError"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 2


def _assert_closed(telemetry: Any, delivered: str | None = None) -> None:
    span = telemetry.one("tool_call ")
    if delivered is not None:
        assert_call(telemetry, span, reason="closed", delivered=delivered)
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == "closed"
    assert inference(telemetry).attributes[n.TOOLCALL_ABORT_REASON] == "closed"
    assert telemetry.calls_by_outcome() == {("aborted", "closed"): 1}


async def test_async_with_exit_mid_call(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    async with await client.chat.completions.create(**request()) as stream:
        got = await take(stream, 3)
    _assert_closed(telemetry, arguments_by_index(got)[(0, 0)])


async def test_break_then_close_async(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    stream = await client.chat.completions.create(**request())
    got = []
    async for c in stream:
        got.append(c)
        if len(got) == 5:
            break
    await stream.close()
    _assert_closed(telemetry, arguments_by_index(got)[(0, 0)])


async def test_helper_stream_get_final_completion_async(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]))
    async with chat_helper_stream(client)(**helper_kwargs()) as s:
        final = await s.get_final_completion()
    assert final.choices[0].message.tool_calls[0].function.arguments == WEATHER.arguments
    assert_call(telemetry, telemetry.one("tool_call "), reason=None, delivered=WEATHER.arguments)
    assert_parented(telemetry)


async def test_helper_stream_close_async(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    async with chat_helper_stream(client)(**helper_kwargs()) as s:
        chunks = 0
        async for event in s:
            chunks += event.type == "chunk"
            if chunks == 4:
                break
        await s.close()
    span = telemetry.one("tool_call ")
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == "closed"
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 3


async def test_helper_until_done_async(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], finish_reason="content_filter"))
    # The helper auto-parses the strict tool's arguments, and a filtered completion has none to parse.
    with pytest.raises(openai.ContentFilterFinishReasonError):
        async with chat_helper_stream(client)(**helper_kwargs()) as s:
            await s.until_done()
    assert_call(telemetry, telemetry.one("tool_call "), reason="filtered", delivered=WEATHER.arguments)


async def test_with_raw_response_parse_async(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER]))
    raw = await client.chat.completions.with_raw_response.create(**request())
    async for _ in raw.parse():  # the legacy raw response parses synchronously
        pass
    assert_call(telemetry, telemetry.one("tool_call "), reason=None, delivered=WEATHER.arguments)
    assert_parented(telemetry)


async def test_with_streaming_response_exit_async(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    async with client.chat.completions.with_streaming_response.create(**request()) as response:
        got = await take(await response.parse(), 4)
    _assert_closed(telemetry, arguments_by_index(got)[(0, 0)])


async def test_async_azure_openai(telemetry, instrument, fake):
    azure = openai.AsyncAzureOpenAI(
        azure_endpoint=fake.base_url, api_key="k", api_version="2024-10-21", max_retries=0
    )
    fake.enqueue(tool_call_script([WEATHER]))
    async for _ in await azure.chat.completions.create(**request()):
        pass
    assert "/openai/deployments/" in fake.requests[-1].path
    assert_call(
        telemetry,
        telemetry.one("tool_call "),
        reason=None,
        delivered=WEATHER.arguments,
        provider="azure.ai.openai",
    )


async def test_request_failure_async(telemetry, instrument, fake, client):
    fake.enqueue(Script([b'{"error": {"message": "boom"}}'], status=500, content_type="application/json"))
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(**request())
    chat = inference(telemetry)
    assert chat.attributes[n.ERROR_TYPE] == "openai.InternalServerError"
    assert chat.status.status_code is StatusCode.ERROR


async def test_inference_span_not_current_while_iterating_async(telemetry, instrument, fake, client):
    tracer = telemetry.tracer_provider.get_tracer("user")
    fake.enqueue(tool_call_script([WEATHER]))
    with tracer.start_as_current_span("agent turn") as turn:
        async for _ in await client.chat.completions.create(**request()):
            assert trace.get_current_span() is turn
            with tracer.start_as_current_span("user work"):
                pass
    for span in telemetry.spans():
        if span.name == "user work":
            assert span.parent.span_id == turn.get_span_context().span_id
    assert inference(telemetry).name == f"chat {MODEL}"
    assert_parented(telemetry)
