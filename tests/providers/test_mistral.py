"""mistralai chat.stream() / stream_async() against the fake provider writing Mistral's SSE."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from mistralai.client import Mistral

from otel_toolcalls import execute_tool
from otel_toolcalls._core.calls import error_type_of
from otel_toolcalls.testing import FakeProvider, Script
from otel_toolcalls.testing.compatible_servers import script
from otel_toolcalls.testing.mistral import MODEL, chunks_for, tool_call_script
from otel_toolcalls.testing.openai_chat import WEATHER, ToolCall

MESSAGES = [{"role": "user", "content": "Weather in Zürich, and the time?"}]
CLOCK = ToolCall(name="get_time", id="D681PevKs", arguments='{"tz": "Europe/Zurich", "offset": -120}')


_clients: dict[int, Mistral] = {}


def client(fake: FakeProvider) -> Mistral:
    if fake.port not in _clients:
        _clients[fake.port] = Mistral(api_key="x", server_url=fake.base_url)
    return _clients[fake.port]


def size(call: ToolCall) -> int:
    return len(call.arguments.encode("utf-8"))


def assert_completed(span: Any, call: ToolCall, inference: Any) -> None:
    a = span.attributes
    assert span.name == f"tool_call {call.name}"
    assert a["gen_ai.provider.name"] == "mistral_ai"
    assert a["toolcall.request.model"] == MODEL
    assert a["toolcall.call.id"] == call.id
    assert a["toolcall.outcome"] == "completed"
    assert a["toolcall.arguments.deltas"] == len(call.pieces())
    assert a["toolcall.arguments.size"] == size(call)
    assert span.status.is_unset
    assert span.parent.span_id == inference.context.span_id


def test_completed_call(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    events = list(client(fake).chat.stream(model=MODEL, messages=MESSAGES))
    assert events[-1].data.choices[0].finish_reason == "tool_calls"
    inference = telemetry.one("chat ")
    (span,) = telemetry.tool_spans()
    assert_completed(span, WEATHER, inference)
    assert span.attributes["toolcall.index"] == 0
    assert inference.attributes["gen_ai.provider.name"] == "mistral_ai"
    assert inference.attributes["toolcall.outcome"] == "completed"
    assert inference.attributes["toolcall.count"] == 1
    assert inference.attributes["server.address"] == "127.0.0.1"
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_parallel_calls_with_repeated_names_and_null_ids(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK]))
    list(client(fake).chat.stream(model=MODEL, messages=MESSAGES))
    inference = telemetry.one("chat ")
    spans = sorted(telemetry.tool_spans(), key=lambda s: s.attributes["toolcall.index"])
    # The name repeated on every delta and the "null" id of continuation deltas open nothing new.
    assert [s.name for s in spans] == ["tool_call get_weather", "tool_call get_time"]
    assert_completed(spans[0], WEATHER, inference)
    assert_completed(spans[1], CLOCK, inference)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_whole_calls_side_by_side_without_index(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK], whole=True))
    list(client(fake).chat.stream(model=MODEL, messages=MESSAGES))
    spans = {s.attributes["toolcall.call.id"]: s for s in telemetry.tool_spans()}
    assert set(spans) == {WEATHER.id, CLOCK.id}
    for call in (WEATHER, CLOCK):
        a = spans[call.id].attributes
        assert a["toolcall.outcome"] == "completed"
        assert a["toolcall.arguments.deltas"] == 1
        assert a["toolcall.arguments.size"] == size(call)
    assert spans[CLOCK.id].attributes["toolcall.index"] == 1


def test_no_id_at_all_is_recorded_without_one(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    anonymous = ToolCall(name="lookup", id=None, arguments='{"q": "naïve"}')
    fake.enqueue(tool_call_script([anonymous]))
    list(client(fake).chat.stream(model=MODEL, messages=MESSAGES))
    (span,) = telemetry.tool_spans()
    assert "toolcall.call.id" not in span.attributes
    assert span.attributes["toolcall.outcome"] == "completed"


# length: test_outcomes_matrix.py::test_truncated[mistral].
@pytest.mark.parametrize(
    ("finish_reason", "abort_reason", "error_type"),
    [
        ("model_length", "truncated", "truncated"),
        ("error", "stream_error", "error"),
    ],
)
def test_finish_reasons_that_abort(
    instrument: Any,
    telemetry: Any,
    fake: FakeProvider,
    finish_reason: str,
    abort_reason: str,
    error_type: str,
) -> None:
    fake.enqueue(tool_call_script([WEATHER], finish_reason=finish_reason))
    list(client(fake).chat.stream(model=MODEL, messages=MESSAGES))
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "aborted"
    assert span.attributes["toolcall.abort_reason"] == abort_reason
    assert span.attributes["error.type"] == error_type
    assert span.status.is_ok is False and not span.status.is_unset
    assert telemetry.one("chat ").attributes["toolcall.abort_reason"] == abort_reason
    assert telemetry.calls_by_outcome() == {("aborted", abort_reason): 1}


def test_connection_cut_mid_arguments(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK], cut_after=6))
    seen = 0
    with pytest.raises(Exception) as raised:
        for _ in client(fake).chat.stream(model=MODEL, messages=MESSAGES):
            seen += 1
    assert seen == 6
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "stream_error"
    assert span.attributes["error.type"] == error_type_of(raised.value)
    # Events 0 (role) and 1 (block start, empty arguments) carry no fragment.
    assert span.attributes["toolcall.arguments.deltas"] == 4
    assert span.attributes["toolcall.arguments.size"] == len("".join(WEATHER.pieces()[:4]).encode())
    inference = telemetry.one("chat ")
    assert inference.attributes["error.type"] == error_type_of(raised.value)
    assert inference.attributes["gen_ai.response.finish_reasons"] == ("error",)


def test_close_mid_arguments(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    stream = client(fake).chat.stream(model=MODEL, messages=MESSAGES)
    for _ in range(4):
        next(stream)
    stream.close()
    assert list(stream) == []
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "closed"
    assert span.attributes["toolcall.arguments.deltas"] == 2
    assert telemetry.one("chat ").attributes["toolcall.abort_reason"] == "closed"


def test_break_out_of_with_block_is_closed(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    with client(fake).chat.stream(model=MODEL, messages=MESSAGES) as stream:
        for i, _ in enumerate(stream):
            if i == 3:
                break
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "closed"


def test_request_failure_is_recorded_and_raised_unchanged(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    fake.enqueue(Script([b'{"message": "bad key"}'], status=401, content_type="application/json"))
    with pytest.raises(Exception) as raised:
        client(fake).chat.stream(model=MODEL, messages=MESSAGES)
    inference = telemetry.one("chat ")
    assert inference.attributes["error.type"] == error_type_of(raised.value)
    assert telemetry.tool_spans() == []


async def test_async_completed(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK]))
    stream = await client(fake).chat.stream_async(model=MODEL, messages=MESSAGES)
    async with stream:
        events = [event async for event in stream]
    assert events[-1].data.choices[0].finish_reason == "tool_calls"
    inference = telemetry.one("chat ")
    spans = sorted(telemetry.tool_spans(), key=lambda s: s.attributes["toolcall.index"])
    assert_completed(spans[0], WEATHER, inference)
    assert_completed(spans[1], CLOCK, inference)


def test_what_the_sdk_yields_is_unchanged(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    def run() -> list[Any]:
        fake.enqueue(tool_call_script([WEATHER, CLOCK]))
        stream = client(fake).chat.stream(model=MODEL, messages=MESSAGES)
        # __class__ (what isinstance reads): type() names the package's stand-in, as Bedrock's does
        # (test_returned_objects compares every other answer).
        return [stream.__class__, *(event.model_dump() for event in stream)]

    traced = run()
    instrument().uninstrument()
    bare = run()
    assert traced == bare
    assert len(telemetry.tool_spans()) == 2


def test_the_sdks_stream_keeps_its_own_generator(
    instrument: Any, telemetry: Any, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The package reads the SDK's generator through a wrapper of its own; it writes nothing into
    # the SDK's EventStream, which stays as the SDK made it.
    from mistralai.client.utils import eventstreaming

    made: list[Any] = []
    init = eventstreaming.EventStream.__init__

    def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(eventstreaming.EventStream, "__init__", recording_init)
    fake.enqueue(tool_call_script([WEATHER]))
    stream = client(fake).chat.stream(model=MODEL, messages=MESSAGES)
    (sdk_stream,) = made
    assert sdk_stream.generator.gi_code.co_name == "stream_events"
    with stream:
        for _ in stream:
            pass
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "completed"


def test_iterating_the_public_generator_is_seen(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    # EventStream.generator is public; a user who reads it, alone or after next(stream), reads the
    # same events the stream would yield, and every fragment is counted once.
    fake.enqueue(tool_call_script([WEATHER, CLOCK]))
    stream = client(fake).chat.stream(model=MODEL, messages=MESSAGES)
    first = next(stream)
    rest = list(stream.generator)
    assert first.data.choices is not None and rest[-1].data.choices[0].finish_reason == "tool_calls"
    inference = telemetry.one("chat ")
    spans = sorted(telemetry.tool_spans(), key=lambda s: s.attributes["toolcall.index"])
    assert_completed(spans[0], WEATHER, inference)
    assert_completed(spans[1], CLOCK, inference)


def test_iterating_the_public_async_generator_is_seen(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    async def run() -> list[Any]:
        fake.enqueue(tool_call_script([WEATHER]))
        stream = await client(fake).chat.stream_async(model=MODEL, messages=MESSAGES)
        return [event async for event in stream.generator]

    events = asyncio.run(run())
    assert events[-1].data.choices[0].finish_reason == "tool_calls"
    (span,) = telemetry.tool_spans()
    assert_completed(span, WEATHER, telemetry.one("chat "))


# -- a "}" that ends one delta and a "{" that starts the next ------------------------------------------

# Inside string values: one call, though every delta names the tool and none after the first has an id.
LATEX = ToolCall(
    name="render",
    id="K9xTq2pLm",
    arguments='{"tex": "\\\\frac{a}{b}", "note": "\\"}{\\""}',
    fragments=['{"tex": "\\\\frac{a}', '{b}", "note": "\\"}', '{\\""}'],
)


@pytest.mark.parametrize("call_id", ["K9xTq2pLm", None])
def test_a_brace_at_a_delta_boundary_inside_a_string_is_one_call(
    instrument: Any, telemetry: Any, fake: FakeProvider, call_id: str | None
) -> None:
    call = dataclasses.replace(LATEX, id=call_id)
    assert "".join(call.pieces()) == call.arguments
    fake.enqueue(tool_call_script([call]))
    events = list(client(fake).chat.stream(model=MODEL, messages=MESSAGES))
    texts = [
        tc
        for e in events
        for choice in e.data.choices
        for tc in choice.delta.tool_calls or ()
        if tc.function.arguments
    ]
    # What the SDK hands over: each piece on a delta naming the tool, with no usable id.
    assert [(tc.function.name, tc.id, tc.function.arguments) for tc in texts] == [
        ("render", "null", piece) for piece in call.pieces()
    ]
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.outcome"] == "completed" and span.status.is_unset
    assert span.attributes["toolcall.arguments.deltas"] == 3
    assert span.attributes["toolcall.arguments.size"] == size(call)
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    if call_id is not None:
        with execute_tool(call_id, strict=True) as run:
            assert run.is_recording()
        assert telemetry.one("execute_tool ").links[0].context.span_id == span.context.span_id


def test_two_calls_on_one_index_without_ids_stay_two(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    # Following strings merges nothing: a whole document, then a new one, is another call.
    first = ToolCall(name="render", id=None, arguments='{"tex": "}{"}', fragments=['{"tex": "}', '{"}'])
    second = ToolCall(name="render", id=None, arguments='{"tex": "{}"}', fragments=['{"tex": "{', '}"}'])
    chunks = chunks_for([first, second])
    for body in chunks:
        for tool_call in body["choices"][0]["delta"].get("tool_calls", ()):
            tool_call["index"] = 0
    fake.enqueue(script(chunks))
    list(client(fake).chat.stream(model=MODEL, messages=MESSAGES))
    spans = telemetry.tool_spans()
    assert sorted(s.attributes["toolcall.arguments.size"] for s in spans) == sorted(
        [size(first), size(second)]
    )
    assert [s.attributes["toolcall.index"] for s in spans] == [0, 0]
    assert telemetry.calls_by_outcome() == {("completed", None): 2}
