"""The ollama client against the fake provider: real ``Client`` / ``AsyncClient``, real NDJSON
bytes on a real socket (one line per write, cut mid-line, error lines as the server writes them)."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import ollama
import openai
import pytest
from opentelemetry.instrumentation.utils import suppress_instrumentation

from otel_toolcalls import execute_tool, tool_call_outcome
from otel_toolcalls.testing import FakeProvider, Script
from otel_toolcalls.testing import compatible_servers as servers
from otel_toolcalls.testing import ollama as o
from otel_toolcalls.testing import openai_chat as chat
from otel_toolcalls.testing.scenario import timed_script

MESSAGES = [{"role": "user", "content": "Weather in Zürich?"}]


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def stream(client: Any) -> Any:
    return client.chat(model=o.MODEL, messages=MESSAGES, tools=[o.WEATHER_TOOL], stream=True)


def drain(it: Any) -> tuple[list[Any], BaseException | None]:
    got: list[Any] = []
    try:
        for chunk in it:
            got.append(chunk)
    except Exception as exc:
        return got, exc
    return got, None


def inference(telemetry: Any) -> dict[str, Any]:
    return attrs(telemetry.one("chat "))


# -- whole calls ---------------------------------------------------------------------------------


def test_whole_calls_end_at_their_own_chunk(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER, o.CLOCK])))
    it = stream(ollama.Client(host=fake.base_url))
    assert next(it).message.content == "Let me check."
    first = next(it)
    assert first.message.tool_calls[0].function.name == "get_weather"
    # The call's span ended when its chunk reached the consumer, before done (the inference span is open).
    (weather,) = telemetry.tool_spans()
    assert [s.name for s in telemetry.spans()] == ["tool_call get_weather"]
    rest = list(it)
    assert rest[-1].done and rest[-1].done_reason == "stop"
    weather, clock = sorted(telemetry.tool_spans(), key=lambda s: attrs(s)["toolcall.index"])
    inf = telemetry.one("chat ")
    a = attrs(weather)
    assert a["gen_ai.provider.name"] == "ollama"
    assert a["toolcall.request.model"] == o.MODEL
    assert a["toolcall.outcome"] == "completed" and weather.status.is_unset
    assert a["toolcall.arguments.deltas"] == 0
    assert "toolcall.arguments.size" not in a  # whole: arguments arrive parsed, never serialized to count
    # The server sent an id; the client keeps none (its ToolCall model has only `function`).
    assert "toolcall.call.id" not in a and "toolcall.call.id" not in attrs(clock)
    assert (a["toolcall.index"], attrs(clock)["toolcall.index"]) == (0, 1)
    assert weather.parent.span_id == clock.parent.span_id == inf.context.span_id
    assert weather.end_time < clock.start_time < inf.end_time
    i = attrs(inf)
    assert i["gen_ai.operation.name"] == "chat" and i["gen_ai.provider.name"] == "ollama"
    assert (i["toolcall.count"], i["toolcall.outcome"]) == (2, "completed")
    assert i["gen_ai.response.finish_reasons"] == ("stop",)
    assert i["gen_ai.response.model"] == o.MODEL
    assert (i["gen_ai.usage.input_tokens"], i["gen_ai.usage.output_tokens"]) == (41, 23)
    assert (i["server.address"], i["server.port"]) == ("127.0.0.1", fake.port)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}
    assert telemetry.points("toolcall.arguments.size") == []


def test_module_level_chat_of_a_client_bound_before_instrument(
    telemetry: Any, instrument: Any, fake: FakeProvider, monkeypatch: Any
) -> None:
    # ollama.chat is a method of the default client bound when ollama was imported (before the
    # instrumentor ran): it still goes through the patched Client._request. Its httpx client is
    # pointed at the fake provider (OLLAMA_HOST is read at import).
    monkeypatch.setattr(ollama.chat.__self__._client, "base_url", fake.base_url)
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER])))
    list(ollama.chat(model=o.MODEL, messages=MESSAGES, stream=True))
    assert attrs(telemetry.one("tool_call get_weather"))["toolcall.outcome"] == "completed"


@pytest.mark.parametrize("reason", ["length", "stop"])
def test_a_later_done_reason_does_not_cut_a_whole_call(
    telemetry: Any, instrument: Any, fake: FakeProvider, reason: str
) -> None:
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER], done_reason=reason)))
    list(stream(ollama.Client(host=fake.base_url)))
    assert attrs(telemetry.one("tool_call "))["toolcall.outcome"] == "completed"
    i = inference(telemetry)
    assert i["gen_ai.response.finish_reasons"] == (reason,)
    # A token limit still ended the response: the stream as a whole says so.
    assert i.get("toolcall.abort_reason") == ("truncated" if reason == "length" else None)
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_calls_on_the_last_chunk_as_older_servers_send_them(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    old = [o.ToolCall(c.name, c.arguments, id=None) for c in (o.WEATHER, o.CLOCK)]
    fake.enqueue(o.script_for(o.chunks_for(old, on_done=True, done_reason="length")))
    got = list(stream(ollama.Client(host=fake.base_url)))
    assert len(got[-1].message.tool_calls) == 2 and got[-1].done
    # Parsed whole by the server before the limit: completed, at the chunk that carried them.
    assert sorted(attrs(s)["toolcall.outcome"] for s in telemetry.tool_spans()) == ["completed"] * 2
    assert inference(telemetry)["toolcall.count"] == 2


# -- how a stream ends otherwise -----------------------------------------------------------------


def test_cut_mid_line_after_a_call(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    bodies = o.chunks_for([o.WEATHER, o.CLOCK])
    fake.enqueue(o.script_for(bodies, cut_after=2))  # text, weather; the clock line is cut in half
    got, exc = drain(stream(ollama.Client(host=fake.base_url)))
    assert len(got) == 2 and type(exc).__module__.startswith("httpx")
    assert [s.name for s in telemetry.tool_spans()] == ["tool_call get_weather"]
    assert attrs(telemetry.tool_spans()[0])["toolcall.outcome"] == "completed"
    i = inference(telemetry)
    assert (i["toolcall.outcome"], i["toolcall.abort_reason"]) == ("aborted", "stream_error")
    assert i["error.type"] == f"httpx.{type(exc).__qualname__}"
    assert i["gen_ai.response.finish_reasons"] == ("error",)
    assert "gen_ai.usage.input_tokens" not in i  # cut before the counts: none, never 0


def test_error_line_raises_response_error(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(o.script_for([o.chunk(content="Let"), o.error()]))
    got, exc = drain(stream(ollama.Client(host=fake.base_url)))
    assert isinstance(exc, ollama.ResponseError) and exc.error == o.error()["error"] and len(got) == 1
    i = inference(telemetry)
    assert (i["toolcall.abort_reason"], i["error.type"]) == ("stream_error", "ollama.ResponseError")
    assert telemetry.tool_spans() == []


def test_http_error_before_the_stream(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(o.http_error())
    got, exc = drain(stream(ollama.Client(host=fake.base_url)))
    assert isinstance(exc, ollama.ResponseError) and exc.status_code == 404 and got == []
    assert inference(telemetry)["error.type"] == "ollama.ResponseError"


@pytest.mark.parametrize("cut", [None, 2])
def test_same_chunks_and_exceptions_with_and_without(
    telemetry: Any, instrument: Any, fake: FakeProvider, cut: int | None
) -> None:
    seen = []
    for suppressed in (False, True):
        fake.enqueue(o.script_for(o.chunks_for([o.WEATHER, o.CLOCK]), cut_after=cut))
        with suppress_instrumentation() if suppressed else _nothing():
            got, exc = drain(stream(ollama.Client(host=fake.base_url)))
        seen.append(([c.model_dump() for c in got], type(exc), str(exc) if exc else None))
    assert seen[0] == seen[1]
    assert len(telemetry.tool_spans()) == (2 if cut is None else 1)  # only the first run was seen


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: Any) -> None:
        return None


def test_close_after_a_call(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER, o.CLOCK])))
    it = stream(ollama.Client(host=fake.base_url))
    next(it), next(it)
    it.close()
    assert [attrs(s)["toolcall.outcome"] for s in telemetry.tool_spans()] == ["completed"]
    i = inference(telemetry)
    assert (i["toolcall.outcome"], i["toolcall.abort_reason"]) == ("aborted", "closed")
    assert i["toolcall.count"] == 1


@pytest.mark.parametrize("started", [True, False])
def test_a_dropped_stream_is_abandoned(
    telemetry: Any, instrument: Any, fake: FakeProvider, started: bool
) -> None:
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER])))
    it = stream(ollama.Client(host=fake.base_url))
    if started:
        next(it)
    del it
    gc.collect()
    assert inference(telemetry)["toolcall.abort_reason"] == "abandoned"


# -- async ---------------------------------------------------------------------------------------


async def test_async_parallel_calls_and_aclose(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    client = ollama.AsyncClient(host=fake.base_url)
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER, o.CLOCK])))
    got = [c async for c in await client.chat(model=o.MODEL, messages=MESSAGES, stream=True)]
    assert got[-1].done
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER])))
    it = await client.chat(model=o.MODEL, messages=MESSAGES, stream=True)
    assert isinstance(it, type(_agen())) and hasattr(it, "aclose")
    await it.__anext__()
    await it.aclose()
    inference_spans = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    reasons = sorted(str(attrs(s).get("toolcall.abort_reason")) for s in inference_spans)
    assert reasons == ["None", "closed"]
    assert sorted(s.name for s in telemetry.tool_spans()) == ["tool_call get_time", "tool_call get_weather"]


async def _agen() -> Any:
    yield None


async def test_async_cancelled_while_awaiting_the_next_chunk(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    gate = threading.Event()
    full = o.script_for(o.chunks_for([o.WEATHER, o.CLOCK]), split_characters=False)
    # The server holds the body after the weather call: the reader can only be awaiting the clock.
    fake.enqueue(timed_script(list(full.writes), {2: gate}, content_type=o.CONTENT_TYPE))
    inside = asyncio.Event()

    async def read() -> None:
        async for chunk in await ollama.AsyncClient(host=fake.base_url).chat(
            model=o.MODEL, messages=MESSAGES, stream=True
        ):
            if chunk.message.tool_calls:
                inside.set()

    task = asyncio.create_task(read())
    try:
        await asyncio.wait_for(inside.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        gate.set()
    assert [attrs(s)["toolcall.outcome"] for s in telemetry.tool_spans()] == ["completed"]
    assert inference(telemetry)["toolcall.abort_reason"] == "cancelled"


# -- no id: neither linked nor refused; the openai-compatible endpoint -----------------------------


def test_a_call_without_id_is_unknown_to_execute_tool(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    instrument(strict=True)
    fake.enqueue(o.script_for(o.chunks_for([o.WEATHER])))
    list(stream(ollama.Client(host=fake.base_url)))
    assert tool_call_outcome(o.WEATHER.id or "") is None
    with execute_tool(o.WEATHER.id or "", name="get_weather") as span:  # strict: not refused
        assert span.is_recording()
    run = attrs(telemetry.one("execute_tool "))
    assert run["toolcall.outcome"] == "unknown"
    assert telemetry.one("execute_tool ").links == ()


def test_the_openai_compatible_endpoint_is_one_set_of_spans(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    # Ollama's /v1 is reached with the openai SDK (ollama imported and instrumented too).
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    client = openai.OpenAI(base_url=f"{fake.base_url}/v1", api_key="ollama", max_retries=0)
    list(client.chat.completions.create(**chat.request(model=o.MODEL)))
    assert [s.name for s in telemetry.spans()] == ["tool_call get_weather", f"chat {o.MODEL}"]
    assert {attrs(s)["gen_ai.provider.name"] for s in telemetry.spans()} == {"openai"}


# -- a "}" that ends one piece and a "{" that starts the next ----------------------------------------


def test_a_whole_call_written_across_a_brace_boundary_is_one_call(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    # The native client parses whole lines: the line cut between "}" and "{" is one call.
    call = o.ToolCall("render", {"tex": "\\frac{a}{b}"}, id=None)
    data = o.line(o.chunk(tool_calls=[call]))
    cut = data.index(b"}{") + 1
    fake.enqueue(Script([data[:cut], data[cut:], o.line(o.done())], content_type=o.CONTENT_TYPE))
    chunks = list(stream(ollama.Client(host=fake.base_url)))
    assert chunks[0].message.tool_calls[0].function.arguments == {"tex": "\\frac{a}{b}"}
    (span,) = telemetry.tool_spans()
    assert attrs(span)["toolcall.outcome"] == "completed"
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


# Pieces of one call cut between a "}" and a "{" inside its string values.
LATEX = chat.ToolCall(
    name="render",
    id=None,
    arguments='{"tex": "\\\\frac{a}{b}", "note": "\\"}{\\""}',
    fragments=['{"tex": "\\\\frac{a}', '{b}", "note": "\\"}', '{\\""}'],
)
SECOND = chat.ToolCall(name="render", id=None, arguments='{"tex": "{}"}', fragments=['{"tex": "{', '}"}'])


@pytest.mark.parametrize("names_repeated", [True, False], ids=["named_deltas", "bare_deltas"])
def test_the_openai_compatible_endpoint_without_ids_splits_calls_by_whole_documents(
    telemetry: Any, instrument: Any, fake: FakeProvider, names_repeated: bool
) -> None:
    # /v1 with no ids and every call on index 0: only a whole document, then a new one, is another
    # call, whether or not each delta names the tool.
    fake.enqueue(
        servers.script(servers.no_ids([LATEX, SECOND], shared_index=True, names_repeated=names_repeated))
    )
    client = openai.OpenAI(base_url=f"{fake.base_url}/v1", api_key="ollama", max_retries=0)
    chunks = list(client.chat.completions.create(**chat.request(model=o.MODEL)))
    named = [
        tc.function.name
        for c in chunks
        for tc in c.choices[0].delta.tool_calls or ()
        if tc.function.arguments
    ]
    assert named == (["render"] * 5 if names_repeated else [None] * 5)
    got = sorted(
        (attrs(s)["toolcall.arguments.size"], attrs(s)["toolcall.arguments.deltas"])
        for s in telemetry.tool_spans()
    )
    assert got == sorted([(len(LATEX.arguments.encode()), 3), (len(SECOND.arguments.encode()), 2)])
    assert telemetry.calls_by_outcome() == {("completed", None): 2}
