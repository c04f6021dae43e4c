"""cohere ClientV2.chat_stream / AsyncClientV2.chat_stream against the fake provider writing Cohere v2 SSE."""

from __future__ import annotations

from typing import Any

import cohere
import pytest

from otel_toolcalls._core.calls import error_type_of
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.cohere import MODEL, tool_call_script
from otel_toolcalls.testing.openai_chat import WEATHER, ToolCall

MESSAGES = [{"role": "user", "content": "Weather in Zürich, and the time?"}]
CLOCK = ToolCall(name="get_time", id="get_time_k3v9q", arguments='{"tz": "Europe/Zurich", "offset": -120}')


def client(fake: FakeProvider, kind: Any = cohere.ClientV2) -> Any:
    return kind(base_url=fake.base_url, api_key="x")


def stream(fake: FakeProvider) -> Any:
    return client(fake).chat_stream(model=MODEL, messages=MESSAGES)


def size(call: ToolCall) -> int:
    return len(call.arguments.encode("utf-8"))


def assert_completed(span: Any, call: ToolCall, index: int, inference: Any) -> None:
    a = span.attributes
    assert span.name == f"tool_call {call.name}"
    assert a["gen_ai.provider.name"] == "cohere"
    assert a["toolcall.request.model"] == MODEL
    assert a["toolcall.call.id"] == call.id
    assert a["toolcall.index"] == index
    assert a["toolcall.outcome"] == "completed"
    assert a["toolcall.arguments.deltas"] == len(call.pieces())
    assert a["toolcall.arguments.size"] == size(call)
    assert span.status.is_unset
    assert span.parent.span_id == inference.context.span_id


def by_index(telemetry: Any) -> list[Any]:
    return sorted(telemetry.tool_spans(), key=lambda s: s.attributes["toolcall.index"])


def test_completed_parallel_calls(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK]))
    events = list(stream(fake))
    assert [e.type for e in events][-1] == "message-end"
    inference = telemetry.one("chat ")
    spans = by_index(telemetry)
    assert_completed(spans[0], WEATHER, 0, inference)
    assert_completed(spans[1], CLOCK, 1, inference)
    a = inference.attributes
    assert a["gen_ai.provider.name"] == "cohere"
    assert a["toolcall.outcome"] == "completed"
    assert a["gen_ai.response.finish_reasons"] == ("TOOL_CALL",)
    assert a["server.address"] == "127.0.0.1"
    assert a["server.port"] == fake.port
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_max_tokens_truncates_only_the_last_tool_block(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK], finish_reason="MAX_TOKENS"))
    list(stream(fake))
    first, last = by_index(telemetry)
    assert first.attributes["toolcall.outcome"] == "completed"
    assert last.attributes["toolcall.abort_reason"] == "truncated"
    assert last.attributes["error.type"] == "truncated"
    assert telemetry.calls_by_outcome() == {("completed", None): 1, ("aborted", "truncated"): 1}


def test_text_block_after_the_call_protects_it_from_the_limit(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    fake.enqueue(tool_call_script([WEATHER], finish_reason="MAX_TOKENS", text_after="Looking it up…"))
    list(stream(fake))
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "completed"
    assert telemetry.one("chat ").attributes["toolcall.abort_reason"] == "truncated"


@pytest.mark.parametrize("finish_reason", ["ERROR", "TIMEOUT"])
def test_error_finish_reasons_are_stream_errors(
    instrument: Any, telemetry: Any, fake: FakeProvider, finish_reason: str
) -> None:
    fake.enqueue(tool_call_script([WEATHER], finish_reason=finish_reason, end_last=False))
    list(stream(fake))
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "stream_error"
    assert span.attributes["error.type"] == finish_reason
    inference = telemetry.one("chat ")
    assert inference.attributes["toolcall.abort_reason"] == "stream_error"
    assert inference.attributes["error.type"] == finish_reason


def test_complete_settles_a_stopped_call(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER], finish_reason="COMPLETE"))
    list(stream(fake))
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "completed"


def test_connection_cut_mid_arguments(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    # message-start, tool-plan, start, 3 deltas, then the socket drops.
    fake.enqueue(tool_call_script([WEATHER], cut_after=6))
    seen = 0
    with pytest.raises(Exception) as raised:
        for _ in stream(fake):
            seen += 1
    assert seen == 6
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "stream_error"
    assert span.attributes["error.type"] == error_type_of(raised.value)
    assert span.attributes["toolcall.arguments.deltas"] == 3
    assert span.attributes["toolcall.arguments.size"] == len("".join(WEATHER.pieces()[:3]).encode())
    assert telemetry.one("chat ").attributes["gen_ai.response.finish_reasons"] == ("error",)


def test_cut_after_tool_call_end_keeps_the_stopped_call(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    events = 3 + len(WEATHER.pieces()) + 1  # through tool-call-end of the first call
    fake.enqueue(tool_call_script([WEATHER, CLOCK], cut_after=events))
    with pytest.raises(Exception):  # noqa: B017 - whatever the SDK raises for a dropped connection
        list(stream(fake))
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "completed"
    assert telemetry.one("chat ").attributes["toolcall.abort_reason"] == "stream_error"


def test_close_mid_arguments(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    events = stream(fake)
    for _ in range(5):
        next(events)
    events.close()
    assert list(events) == []
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "closed"
    assert span.attributes["toolcall.arguments.deltas"] == 2
    assert telemetry.one("chat ").attributes["toolcall.abort_reason"] == "closed"


def test_http_error_is_raised_unchanged_and_recorded(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    from otel_toolcalls.testing import Script

    fake.enqueue(Script([b'{"message": "invalid api token"}'], status=401, content_type="application/json"))
    with pytest.raises(cohere.UnauthorizedError) as raised:
        list(stream(fake))
    inference = telemetry.one("chat ")
    assert inference.attributes["error.type"] == error_type_of(raised.value)
    assert telemetry.tool_spans() == []


async def test_async_completed(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK]))
    events = [e async for e in client(fake, cohere.AsyncClientV2).chat_stream(model=MODEL, messages=MESSAGES)]
    assert events[-1].type == "message-end"
    inference = telemetry.one("chat ")
    spans = by_index(telemetry)
    assert_completed(spans[0], WEATHER, 0, inference)
    assert_completed(spans[1], CLOCK, 1, inference)


def test_what_the_sdk_yields_is_unchanged(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    import types

    def run() -> list[Any]:
        fake.enqueue(tool_call_script([WEATHER, CLOCK], text_after="ok"))
        events = stream(fake)
        return [isinstance(events, types.GeneratorType), *(e.dict() for e in events)]

    traced = run()
    instrument().uninstrument()
    bare = run()
    assert traced == bare
    assert traced[0] is True
    assert len(telemetry.tool_spans()) == 2


def test_client_made_before_instrumentation_is_traced(
    telemetry: Any, fake: FakeProvider, instrument: Any
) -> None:
    instrument().uninstrument()
    early = client(fake)  # cohere binds chat_stream on the instance in __init__
    instrument()
    fake.enqueue(tool_call_script([WEATHER]))
    list(early.chat_stream(model=MODEL, messages=MESSAGES))
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "completed"
    assert span.attributes["toolcall.arguments.size"] == size(WEATHER)


# -- the raw client, and what the package hands on --------------------------------------------------


def test_leaving_the_raw_clients_with_block_mid_arguments_is_closed(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    with client(fake).with_raw_response.chat_stream(model=MODEL, messages=MESSAGES) as raw:
        events = iter(raw.data)
        for _ in range(5):
            next(events)
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "closed"
    assert span.attributes["toolcall.arguments.deltas"] == 2
    assert telemetry.one("chat ").attributes["toolcall.abort_reason"] == "closed"


def test_the_sdks_response_keeps_its_own_iterator(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    from cohere.core.http_response import HttpResponse

    fake.enqueue(tool_call_script([WEATHER]))
    with client(fake).with_raw_response.chat_stream(model=MODEL, messages=MESSAGES) as raw:
        assert isinstance(raw, HttpResponse)
        events = list(raw.data)
        # The package hands on a proxy whose `data` it wraps; the SDK's object is not written to.
        sdk_response = getattr(raw, "__wrapped__", raw)
        assert sdk_response.data.__name__ == "_iter"
    assert events[-1].type == "message-end"
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "completed"


async def test_async_stream_dropped_mid_arguments_is_abandoned_and_the_client_still_works(
    instrument: Any, telemetry: Any, fake: FakeProvider, caplog: Any
) -> None:
    import asyncio
    import gc
    import logging

    fake.enqueue(tool_call_script([WEATHER]))
    sdk = client(fake, cohere.AsyncClientV2)
    events = sdk.chat_stream(model=MODEL, messages=MESSAGES)
    for _ in range(5):
        await events.__anext__()
    del events
    gc.collect()
    # A running program's loop goes on and runs the close asyncio scheduled for the SDK's collected
    # generator; the test lets it (one turn: the hook schedules it by call_soon_threadsafe).
    await asyncio.sleep(0)
    await asyncio.gather(*(asyncio.all_tasks() - {asyncio.current_task()}))
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "abandoned"
    assert telemetry.one("chat ").attributes["toolcall.abort_reason"] == "abandoned"
    fake.enqueue(tool_call_script([WEATHER]))
    again = [e async for e in sdk.chat_stream(model=MODEL, messages=MESSAGES)]
    assert again[-1].type == "message-end"
    assert not [r for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR]
