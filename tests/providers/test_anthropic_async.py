"""The real anthropic SDK (async) against the FakeProvider: the async twins, cancellation, GC."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import anthropic
import pytest
from opentelemetry.trace import StatusCode
from sdk_compat import dropped_connection, traces_itself
from test_anthropic import LOOKUP, MESSAGES, assert_call, by_name, inference, needs_sdk_tracing

from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as wire
from otel_toolcalls.testing.anthropic import MODEL, WEATHER, Text, ToolUse

SDK_TRACES = traces_itself(anthropic.AsyncAnthropic)


def client(fake: FakeProvider, **options: Any) -> anthropic.AsyncAnthropic:
    if SDK_TRACES:
        options.setdefault("open_telemetry", False)
    return anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.base_url, max_retries=0, **options)


async def create(c: Any) -> Any:
    return await c.messages.create(model=MODEL, max_tokens=1024, messages=MESSAGES, stream=True)


async def test_async_create_completes(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([Text("Checking."), WEATHER, LOOKUP]))
    async with await create(client(fake)) as s:
        events = [e.type async for e in s]
    assert events[-1] == "message_stop"
    calls = by_name(telemetry)
    assert_call(calls["get_weather"], reason=None, delivered=WEATHER.arguments)
    assert_call(calls["lookup"], reason=None, delivered=LOOKUP.arguments)
    assert (inference(telemetry).attributes or {})[n.TOOLCALL_OUTCOME] == "completed"


async def test_async_truncated_and_anext(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER], stop_reason="max_tokens"))
    s = await create(client(fake))
    types = []
    while True:
        try:
            types.append((await s.__anext__()).type)
        except StopAsyncIteration:
            break
    assert types[-1] == "message_stop"
    assert_call(telemetry.tool_spans()[0], reason="truncated", delivered=WEATHER.arguments)


@pytest.mark.parametrize("cut", [True, False], ids=["connection_dropped", "error_event"])
async def test_async_stream_errors_keep_the_sdk_exception(
    telemetry: Any, instrument: Any, fake: FakeProvider, cut: bool
) -> None:
    events = wire.events_for([WEATHER], final=False, stop_reason=None)
    keep = len(events) - 4
    script = (
        wire.script_for(events, cut_after=keep) if cut else wire.script_for([*events[:keep], wire.error()])
    )
    fake.enqueue(script, script)

    async def run() -> BaseException:
        with pytest.raises(Exception) as caught:
            async for _ in await create(client(fake)):
                pass
        return caught.value

    instrumented = await run()
    instrument().uninstrument()
    bare = await run()
    assert type(instrumented) is type(bare) and str(instrumented) == str(bare)
    expected = dropped_connection(anthropic, type(bare)) if cut else f"anthropic.{type(bare).__name__}"
    if not cut:
        assert isinstance(instrumented, anthropic.APIStatusError)
    assert_call(
        telemetry.tool_spans()[0],
        reason="stream_error",
        delivered="".join(WEATHER.pieces()[:-3]),
        error_type=expected,
    )
    assert inference(telemetry).status.status_code is StatusCode.ERROR


async def test_async_dropped_stream_is_abandoned(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER]))
    s = await create(client(fake))
    async for event in s:
        if event.type == "content_block_delta":
            break
    del s, event
    gc.collect()
    # The event loop closes a dropped async generator in a task of its own. Before anthropic 1.14
    # the stream and its generators form a cycle, freed over more than one collection and turn.
    for _ in range(100):
        if telemetry.tool_spans():
            break
        await asyncio.sleep(0)
        gc.collect()
    assert_call(telemetry.tool_spans()[0], reason="abandoned", delivered=WEATHER.pieces()[0])


@pytest.mark.parametrize("how", ["text_stream", "get_final_message", "get_final_text", "until_done"])
async def test_async_stream_helpers(telemetry: Any, instrument: Any, fake: FakeProvider, how: str) -> None:
    blocks = [WEATHER, Text("Sunny.")]
    fake.enqueue(*[wire.tool_use_script(blocks, stop_reason="end_turn")] * 2)

    async def run() -> Any:
        async with client(fake).messages.stream(model=MODEL, max_tokens=1024, messages=MESSAGES) as s:
            if how == "text_stream":
                return "".join([t async for t in s.text_stream])
            if how == "get_final_message":
                return (await s.get_final_message()).model_dump()
            if how == "get_final_text":
                return await s.get_final_text()
            await s.until_done()
            return s.current_message_snapshot.model_dump()

    instrumented = await run()
    instrument().uninstrument()
    assert instrumented == await run()
    assert_call(telemetry.tool_spans()[0], reason=None, delivered=WEATHER.arguments)


async def test_async_beta_stream_break_is_closed(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    server = ToolUse(
        name="web_search", id="srvtoolu_01", type="server_tool_use", arguments='{"query": "zürich"}'
    )
    fake.enqueue(wire.tool_use_script([server]))
    async with client(fake).beta.messages.stream(model=MODEL, max_tokens=1024, messages=MESSAGES) as s:
        async for event in s:
            if event.type == "content_block_delta":
                break
    assert_call(
        telemetry.tool_spans()[0], reason="closed", delivered=server.pieces()[0], tool_type="extension"
    )


@needs_sdk_tracing
async def test_async_raw_response_and_sdk_span(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(wire.tool_use_script([WEATHER], stop_reason="refusal"))
    c = client(fake, open_telemetry={"tracer_provider": telemetry.tracer_provider})
    raw = await c.messages.with_raw_response.create(
        model=MODEL, max_tokens=1024, messages=MESSAGES, stream=True
    )
    async for _ in await raw.parse():
        pass
    sdk_span = telemetry.one("anthropic.messages.create")
    assert not [s for s in telemetry.spans() if s.name.startswith("chat ")]
    call = telemetry.tool_spans()[0]
    assert call.parent is not None and call.parent.span_id == sdk_span.context.span_id
    assert_call(call, reason="filtered", delivered=WEATHER.arguments)
