"""Bedrock through aiobotocore: ``converse_stream`` and ``invoke_model_with_response_stream`` on a
real ``AioBaseClient`` against the fake provider writing AWS event-stream frames.

aiobotocore pins botocore below the newest, so it is not in the main venv: this module runs in the
version lanes ``aiobotocore`` (the newest release) and ``aiobotocore-floor`` (tests/versions/run.py),
and is not collected where aiobotocore is not installed (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import collections.abc as abc
import gc
import inspect
import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import EventStreamError
from opentelemetry.sdk.trace import ReadableSpan
from outcomes import assert_outcome, bare_rerun, caller_saw

from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as claude
from otel_toolcalls.testing.bedrock import (
    MODEL,
    TIME,
    WEATHER,
    Text,
    aio_client,
    anthropic_chunks,
    exception_frame,
    frames_for,
    script_for,
    tool_use_script,
)
from otel_toolcalls.testing.scenario import timed_script

MESSAGES = [{"role": "user", "content": [{"text": "Weather in Zürich?"}]}]
CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def client(fake: FakeProvider) -> Any:
    """The client's async context manager, as aiobotocore's documentation opens one."""
    return aio_client(fake.base_url)


async def converse(c: Any) -> Any:
    return (await c.converse_stream(modelId=MODEL, messages=MESSAGES))["stream"]


async def invoke(c: Any) -> Any:
    return (await c.invoke_model_with_response_stream(modelId=CLAUDE, body="{}"))["body"]


Open = Callable[[Any], Any]


async def drain(fake: FakeProvider, open_stream: Open) -> tuple[list[Any], BaseException | None]:
    got: list[Any] = []
    async with client(fake) as c:
        stream = await open_stream(c)
        try:
            async for event in stream:
                got.append(event)
        except Exception as exc:
            return got, exc
    return got, None


def fragments(events: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Argument fragments per block index, from Converse events or Claude chunks."""
    out: dict[int, list[str]] = {}
    for e in events:
        if "chunk" in e:
            p = json.loads(e["chunk"]["bytes"])
            if p["type"] == "content_block_delta" and "partial_json" in p["delta"]:
                out.setdefault(p["index"], []).append(p["delta"]["partial_json"])
        elif "toolUse" in e.get("contentBlockDelta", {}).get("delta", {}):
            body = e["contentBlockDelta"]
            out.setdefault(body["contentBlockIndex"], []).append(body["delta"]["toolUse"]["input"])
    return out


def check(
    telemetry: Any, got: list[Any], expected: list[tuple[str, str | None]], error_type: str | None = None
) -> list[ReadableSpan]:
    spans = sorted(telemetry.tool_spans(), key=lambda s: s.attributes[n.TOOLCALL_INDEX])
    assert [s.name.removeprefix("tool_call ") for s in spans] == [name for name, _ in expected]
    (chat,) = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    delivered = fragments(got)
    for span, (_, reason) in zip(spans, expected, strict=True):
        attrs = span.attributes or {}
        assert attrs[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
        assert span.parent is not None and span.parent.span_id == chat.context.span_id
        pieces = delivered.get(attrs[n.TOOLCALL_INDEX], [])
        assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len([p for p in pieces if p])
        assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(pieces).encode("utf-8"))
        assert_outcome(span, reason, error_type if reason == "stream_error" else None)
    return spans


def qualified(exc: BaseException) -> str:
    cls = type(exc)
    public = itertools.takewhile(lambda part: not part.startswith("_"), cls.__module__.split("."))
    return ".".join([*public, cls.__qualname__])


async def test_converse_parallel_calls_complete(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_use_script([Text("Let me check."), WEATHER, TIME], split=True))
    got, exc = await drain(fake, converse)
    assert exc is None
    assert "".join(fragments(got)[1]) == WEATHER.input
    check(telemetry, got, [("get_weather", None), ("get_time", None)])
    chat = telemetry.one("chat ")
    assert (chat.attributes or {})[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert fake.requests[0].path.endswith("/converse-stream")


async def test_invoke_claude_call_completes(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(script_for(anthropic_chunks(claude.events_for([claude.WEATHER])), split=True))
    got, exc = await drain(fake, invoke)
    assert exc is None and "".join(fragments(got)[0]) == claude.WEATHER.arguments
    check(telemetry, got, [("get_weather", None)])
    attrs = telemetry.one("chat ").attributes or {}
    assert (attrs[n.GEN_AI_USAGE_INPUT_TOKENS], attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS]) == (25, 42)


async def test_invoke_max_tokens_truncates(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    events = claude.events_for([claude.WEATHER], stop_reason="max_tokens")
    fake.enqueue(script_for(anthropic_chunks(events)))
    got, exc = await drain(fake, invoke)
    assert exc is None
    check(telemetry, got, [("get_weather", "truncated")])


@pytest.mark.parametrize("open_stream", [converse, invoke])
async def test_cut_mid_arguments_is_a_stream_error(
    instrument: Any, telemetry: Any, fake: FakeProvider, open_stream: Open
) -> None:
    if open_stream is converse:
        fake.enqueue(tool_use_script([WEATHER], cut_after=5, cut_inside=True))
    else:
        fake.enqueue(
            script_for(anthropic_chunks(claude.events_for([claude.WEATHER])), cut_after=6, cut_inside=True)
        )
    got, exc = await drain(fake, open_stream)
    assert exc is not None  # aiohttp's own exception reaches the caller
    assert 0 < len(fragments(got)[0]) < len(WEATHER.pieces())
    check(telemetry, got, [("get_weather", "stream_error")], qualified(exc))


@pytest.mark.parametrize("open_stream", [converse, invoke])
async def test_an_exception_event_is_a_stream_error(
    instrument: Any, telemetry: Any, fake: FakeProvider, open_stream: Open
) -> None:
    if open_stream is converse:
        frames = frames_for([WEATHER])
    else:
        frames = anthropic_chunks(claude.events_for([claude.WEATHER]))
    fake.enqueue(script_for([*frames[:5], exception_frame("modelStreamErrorException", "x"), *frames[5:]]))
    got, exc = await drain(fake, open_stream)
    assert isinstance(exc, EventStreamError)
    check(telemetry, got, [("get_weather", "stream_error")], "botocore.exceptions.EventStreamError")


def gated(gate: threading.Event, after: int = 5) -> Any:
    """ConverseStream frames held after the block start and a few fragments until ``gate`` is set."""
    full = tool_use_script([WEATHER])
    return timed_script(list(full.writes), {after: gate}, content_type=full.content_type)


async def _until_fragments(
    stream: Any, got: list[Any], count: int, inside: asyncio.Event | None = None
) -> None:
    async for event in stream:
        got.append(event)
        if len(fragments(got).get(0, [])) >= count:
            if inside is None:
                return
            inside.set()


async def test_closed_by_the_consumer(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    gate = threading.Event()
    fake.enqueue(gated(gate))
    got: list[Any] = []
    try:
        async with client(fake) as c:
            stream = await converse(c)
            await _until_fragments(stream, got, 2)
            stream.close()
    finally:
        gate.set()
    check(telemetry, got, [("get_weather", "closed")])


async def test_cancelled_while_awaiting_a_chunk(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    gate = threading.Event()
    fake.enqueue(gated(gate))
    got: list[Any] = []
    try:
        async with client(fake) as c:
            stream = await converse(c)
            inside = asyncio.Event()
            task = asyncio.create_task(_until_fragments(stream, got, 2, inside))
            # The server holds the body at the gate: once the reader has the fragments, it can only
            # be parked awaiting the next chunk.
            await asyncio.wait_for(inside.wait(), 30)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    finally:
        gate.set()
    check(telemetry, got, [("get_weather", "cancelled")])


async def test_a_dropped_stream_is_abandoned(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    gate = threading.Event()
    fake.enqueue(gated(gate))
    got: list[Any] = []
    try:
        async with client(fake) as c:
            response = await c.converse_stream(modelId=MODEL, messages=MESSAGES)
            loop = response["stream"].__aiter__()
            async for event in loop:
                got.append(event)
                if len(fragments(got).get(0, [])) == 2:
                    break
            # The loop's own iterator closed (as contextlib.aclosing does): not the stream's end.
            await loop.aclose()
            assert telemetry.tool_spans() == []
            del response, loop
            gc.collect()
            check(telemetry, got, [("get_weather", "abandoned")])
    finally:
        gate.set()


SCENARIOS: dict[str, Callable[[], Any]] = {
    "completed": lambda: tool_use_script([Text("hi"), WEATHER, TIME], split=True),
    "exception": lambda: script_for([*frames_for([WEATHER])[:5], exception_frame()]),
    "cut": lambda: tool_use_script([WEATHER], cut_after=5, cut_inside=True),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_what_the_sdk_yields_and_raises_is_unchanged(
    instrument: Any, telemetry: Any, fake: FakeProvider, scenario: str
) -> None:
    def seen(result: tuple[list[Any], BaseException | None]) -> Any:
        got, exc = result
        return got, caller_saw(exc)

    fake.enqueue(SCENARIOS[scenario]())
    traced = seen(await drain(fake, converse))
    with bare_rerun(instrument, telemetry):
        fake.enqueue(SCENARIOS[scenario]())
        bare = seen(await drain(fake, converse))
    assert bare == traced


def answers(obj: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"__class__": obj.__class__}
    found |= {name: isinstance(obj, getattr(abc, name)) for name in abc.__all__ if name != "ByteString"}
    found |= {name: hasattr(obj, name) for name in
              ("__iter__", "__aiter__", "__anext__", "__len__", "__enter__", "__aenter__", "__await__",
               "__getitem__", "__contains__", "__wrapped__", "close", "get_initial_response")}  # fmt: skip
    found |= {p: getattr(inspect, p)(obj) for p in dir(inspect) if p.startswith("is") and p != "isclass"
              and getattr(getattr(inspect, p), "__module__", None) == "inspect"}  # fmt: skip
    return found


@pytest.mark.parametrize("open_stream", [converse, invoke])
async def test_the_returned_stream_answers_as_the_sdks(
    instrument: Any, telemetry: Any, fake: FakeProvider, open_stream: Open
) -> None:
    async def ask() -> dict[str, Any]:
        if open_stream is converse:
            fake.enqueue(tool_use_script([WEATHER]))
        else:
            fake.enqueue(script_for(anthropic_chunks(claude.events_for([claude.WEATHER]))))
        async with client(fake) as c:
            stream = await open_stream(c)
            found = answers(stream) | {f"aiter {k}": v for k, v in answers(stream.__aiter__()).items()}
            with pytest.raises(NotImplementedError):
                iter(stream)
            [e async for e in stream]
        return found

    instrumented = await ask()
    assert telemetry.tool_spans()
    instrument().uninstrument()
    assert await ask() == instrumented
