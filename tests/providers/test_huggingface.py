"""huggingface_hub's InferenceClient / AsyncInferenceClient against the fake provider: the real
clients reading OpenAI-shaped SSE (as TGI, vLLM and the Inference Providers router write it) from
a real socket, the client's base_url pointed at 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from typing import Any

import huggingface_hub
import pytest
from huggingface_hub import AsyncInferenceClient, InferenceClient, constants
from opentelemetry.instrumentation.utils import suppress_instrumentation
from packaging.version import Version

from otel_toolcalls import IncompleteToolCallError, execute_tool
from otel_toolcalls.testing import FakeProvider, Script, sse
from otel_toolcalls.testing import openai_chat as chat
from otel_toolcalls.testing.scenario import timed_script

MESSAGES = [{"role": "user", "content": "Weather in Zürich?"}]
MODEL = "tgi"


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


_HELD: list[Any] = []


def client(fake: FakeProvider) -> InferenceClient:
    # Held: a collected InferenceClient closes its exit stack, and with it the response streaming.
    _HELD.append(InferenceClient(base_url=f"{fake.base_url}/v1", api_key="x"))
    return _HELD[-1]


@pytest.fixture(autouse=True)
def _release() -> Any:
    yield
    for held in _HELD:
        close = getattr(held, "close", None)  # from 1.0 (httpx): older clients hold no session
        if close is not None:
            close()
    _HELD.clear()


def stream(c: Any, **options: Any) -> Any:
    return c.chat_completion(
        messages=MESSAGES, model=MODEL, tools=[chat.WEATHER_TOOL], stream=True, **options
    )


def drain(it: Any) -> tuple[list[Any], BaseException | None]:
    got: list[Any] = []
    try:
        for chunk in it:
            got.append(chunk)
    except Exception as exc:
        return got, exc
    return got, None


def inference(telemetry: Any) -> dict[str, Any]:
    return attrs(telemetry.one("chat"))


def rewritten(script: Script, size: int) -> Script:
    """The same body in writes of ``size`` bytes: SSE lines, ``data:`` prefixes and multi-byte
    characters cut wherever the bytes fall, as a proxy re-chunking the body would."""
    body = b"".join(script.writes)
    return Script([body[i : i + size] for i in range(0, len(body), size)])


# -- completed -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [None, 1, 7])
def test_completed_with_awkward_fragments(
    telemetry: Any, instrument: Any, fake: FakeProvider, size: int | None
) -> None:
    script = chat.tool_call_script([chat.WEATHER], usage=chat.USAGE)
    fake.enqueue(script if size is None else rewritten(script, size))
    got, exc = drain(stream(client(fake), stream_options={"include_usage": True}))
    assert exc is None
    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments
        for c in got
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert arguments == chat.WEATHER.arguments
    span = telemetry.one("tool_call get_weather")
    a = attrs(span)
    assert a["gen_ai.provider.name"] == "huggingface"
    assert a["toolcall.request.model"] == MODEL
    assert a["toolcall.call.id"] == chat.WEATHER.id
    assert a["toolcall.arguments.deltas"] == len(chat.WEATHER.pieces())
    assert a["toolcall.arguments.size"] == len(chat.WEATHER.arguments.encode()) == 94
    assert a["toolcall.outcome"] == "completed"
    i = inference(telemetry)
    assert (i["server.address"], i["server.port"]) == ("127.0.0.1", fake.port)
    assert i["gen_ai.response.id"] == "chatcmpl-fake"
    assert i["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (i["gen_ai.usage.input_tokens"], i["gen_ai.usage.output_tokens"]) == (19, 10)
    assert span.parent.span_id == telemetry.one("chat").context.span_id
    assert fake.requests[0].path == "/v1/chat/completions"


def test_parallel_calls_and_the_openai_style_alias(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    fake.enqueue(chat.tool_call_script(chat.PARALLEL))
    list(client(fake).chat.completions.create(messages=MESSAGES, model=MODEL, stream=True))
    spans = sorted(telemetry.tool_spans(), key=lambda s: attrs(s)["toolcall.index"])
    assert [attrs(s)["toolcall.call.id"] for s in spans] == ["call_par_1", "call_par_2"]
    assert [attrs(s)["toolcall.outcome"] for s in spans] == ["completed", "completed"]


def test_tgi_chunks_without_ids_and_its_finish_reason(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    # TGI 3: "id": "" on the call delta, "eos_token" as finish reason, the model URL as model.
    events = chat.events_for(
        [chat.ToolCall("get_weather", '{"city": "Bern"}', id="")], finish_reason="eos_token"
    )
    fake.enqueue(chat.script_for(events, model="meta-llama/Llama-3.1-8B-Instruct"))
    got = list(client(fake).chat_completion(messages=MESSAGES, stream=True))
    assert got[-1].choices[0].finish_reason == "eos_token"
    a = attrs(telemetry.one("tool_call "))
    assert "toolcall.call.id" not in a and a["toolcall.outcome"] == "completed"
    i = inference(telemetry)
    # The client's model is the base URL: it names no model (and its URL is not recorded as one).
    assert "gen_ai.request.model" not in i and telemetry.one("chat").name == "chat"
    assert i["gen_ai.response.model"] == "meta-llama/Llama-3.1-8B-Instruct"


# -- how a stream ends otherwise -----------------------------------------------------------------


def test_cut_during_the_second_call_aborts_both(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    fake.enqueue(chat.tool_call_script(chat.PARALLEL, cut_after=9))
    got, exc = drain(stream(client(fake)))
    assert exc is not None and got
    spans = telemetry.tool_spans()
    assert sorted(attrs(s)["toolcall.abort_reason"] for s in spans) == ["stream_error", "stream_error"]
    error_type = attrs(spans[0])["error.type"]
    assert error_type.endswith(type(exc).__qualname__) and error_type.startswith(
        type(exc).__module__.split(".")[0]
    )


def test_truncated(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER], finish_reason="length"))
    list(stream(client(fake)))
    a = attrs(telemetry.one("tool_call "))
    assert (a["toolcall.outcome"], a["toolcall.abort_reason"]) == ("aborted", "truncated")


@pytest.mark.parametrize(
    ("error_type", "raised"),
    [("overloaded", "OverloadedError"), ("generation", "GenerationError"), (None, "UnknownError")],
)
def test_error_payload_in_the_stream(
    telemetry: Any, instrument: Any, fake: FakeProvider, error_type: str | None, raised: str
) -> None:
    events = chat.events_for([chat.WEATHER], finish_reason=None)[:3]
    payload: dict[str, Any] = {"error": "Model is overloaded"}
    if error_type is not None:
        payload["error_type"] = error_type
    fake.enqueue(chat.raw_script([*(chat.chunk(e) for e in events), sse(payload)], done=False))
    got, exc = drain(stream(client(fake)))
    assert type(exc).__name__ == raised and len(got) == 3
    a = attrs(telemetry.one("tool_call "))
    assert (a["toolcall.abort_reason"], a["toolcall.arguments.deltas"]) == ("stream_error", 2)
    assert a["error.type"] == f"huggingface_hub.errors.{raised}"


def test_http_error_before_the_stream(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    body = json.dumps({"error": "Model not loaded", "error_type": "overloaded"}).encode()
    fake.enqueue(Script([body], status=503, content_type="application/json"))
    got, exc = drain(_lazy(lambda: stream(client(fake))))
    assert exc is not None and type(exc).__name__ == "HfHubHTTPError" and got == []
    i = inference(telemetry)
    assert (i["toolcall.abort_reason"], i["error.type"]) == (
        "stream_error",
        "huggingface_hub.errors.HfHubHTTPError",
    )


def _lazy(make: Any) -> Any:
    yield from make()


@pytest.mark.parametrize("cut", [None, 5])
def test_same_chunks_and_exceptions_with_and_without(
    telemetry: Any, instrument: Any, fake: FakeProvider, cut: int | None
) -> None:
    seen = []
    for suppressed in (False, True):
        fake.enqueue(chat.tool_call_script(chat.PARALLEL, cut_after=cut))
        if suppressed:
            with suppress_instrumentation():
                got, exc = drain(stream(client(fake)))
        else:
            got, exc = drain(stream(client(fake)))
        seen.append(([dict(c) for c in got], type(exc), str(exc) if exc else None))
    assert seen[0] == seen[1]
    assert len(telemetry.tool_spans()) == (2 if cut is None else 1)


def test_closed_mid_arguments(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    it = stream(client(fake))
    next(it), next(it), next(it)
    it.close()
    a = attrs(telemetry.one("tool_call "))
    assert (a["toolcall.abort_reason"], a["toolcall.arguments.deltas"]) == ("closed", 2)


def test_dropped_mid_arguments_is_abandoned(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    it = stream(client(fake))
    next(it), next(it)
    del it
    gc.collect()
    assert attrs(telemetry.one("tool_call "))["toolcall.abort_reason"] == "abandoned"


# -- async ---------------------------------------------------------------------------------------


async def test_async_completed_and_aclose(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    c = AsyncInferenceClient(base_url=f"{fake.base_url}/v1", api_key="x")
    fake.enqueue(chat.tool_call_script(chat.PARALLEL))
    got = [x async for x in await stream(c)]
    assert got[-1].choices[0].finish_reason == "tool_calls"
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    it = await stream(c)
    await it.__anext__()
    await it.__anext__()
    await it.aclose()
    outcomes = sorted(str(attrs(s).get("toolcall.abort_reason")) for s in telemetry.tool_spans())
    assert outcomes == ["None", "None", "closed"]


async def test_async_cancelled_mid_arguments(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    gate = threading.Event()
    full = chat.tool_call_script([chat.WEATHER], split_characters=False)
    fake.enqueue(timed_script(list(full.writes), {3: gate}))  # held after two fragments
    inside = asyncio.Event()

    async def read() -> None:
        c = AsyncInferenceClient(base_url=f"{fake.base_url}/v1", api_key="x")
        async for chunk in await stream(c):
            calls = chunk.choices[0].delta.tool_calls if chunk.choices else None
            if calls and calls[0].function.arguments:
                inside.set()

    task = asyncio.create_task(read())
    try:
        await asyncio.wait_for(inside.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        gate.set()
    assert attrs(telemetry.one("tool_call "))["toolcall.abort_reason"] == "cancelled"


# -- execute_tool: linked if completed, refused in strict mode if cut --------------------------------


def test_execute_tool_links_completed_and_strict_refuses_cut(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    instrument(strict=True)
    fake.enqueue(
        chat.tool_call_script([chat.PARALLEL[0]]), chat.tool_call_script([chat.WEATHER], cut_after=4)
    )
    list(stream(client(fake)))
    drain(stream(client(fake)))
    with execute_tool("call_par_1", name="get_weather"):
        pass
    with pytest.raises(IncompleteToolCallError), execute_tool(chat.WEATHER.id or "", name="get_weather"):
        raise AssertionError("the body of a refused call never runs")
    by_id = {
        attrs(s)["gen_ai.tool.call.id"]: s
        for s in telemetry.spans()
        if s.name.startswith("execute_tool")
    }
    call = next(s for s in telemetry.tool_spans() if attrs(s)["toolcall.call.id"] == "call_par_1")
    assert [link.context.span_id for link in by_id["call_par_1"].links] == [call.context.span_id]
    assert attrs(by_id[chat.WEATHER.id or ""])["toolcall.outcome"] == "aborted"
    assert by_id[chat.WEATHER.id or ""].links == ()


# -- the provider name ---------------------------------------------------------------------------


def _hub_maps_the_model() -> bool:
    """Whether a chat with an HF token and a named provider asks the Hub for the model's mapping
    and calls the router's route of that provider (before 2.5), or sends ``model:provider`` to the
    router's own OpenAI route, which resolves it (2.5 on; its host is not a setting)."""
    return Version(huggingface_hub.__version__) < Version("2.5")


def test_a_well_known_inference_provider_names_the_spans(
    telemetry: Any, instrument: Any, fake: FakeProvider, monkeypatch: Any
) -> None:
    # provider="cohere" (a well-known value; the floor has no groq) with a Hugging Face token; every
    # host the client reaches points at the fake provider, so no test leaves 127.0.0.1.
    monkeypatch.setattr(constants, "ENDPOINT", fake.base_url)
    monkeypatch.setattr(constants, "INFERENCE_PROXY_TEMPLATE", fake.base_url + "/{provider}")
    model = "CohereLabs/c4ai-command-a-03-2025-t14"
    if _hub_maps_the_model():
        mapping = {"cohere": {"status": "live", "providerId": "command-a-03-2025", "task": "conversational"}}
        info = json.dumps({"id": model, "_id": model, "inferenceProviderMapping": mapping}).encode()
        fake.enqueue(Script([info], content_type="application/json"))
        path, sent_model = "/cohere/compatibility/v1/chat/completions", "command-a-03-2025"
    else:
        from huggingface_hub.inference._providers._common import AutoRouterConversationalTask

        monkeypatch.setattr(AutoRouterConversationalTask, "_prepare_base_url", lambda _, __: fake.base_url)
        path, sent_model = "/v1/chat/completions", f"{model}:cohere"
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    c = InferenceClient(provider="cohere", api_key="hf_fake")
    list(c.chat_completion(messages=MESSAGES, model=model, stream=True))
    assert (fake.requests[-1].path, fake.requests[-1].json()["model"]) == (path, sent_model)
    assert {attrs(s)["gen_ai.provider.name"] for s in telemetry.spans()} == {"cohere"}
    assert attrs(telemetry.one("tool_call "))["toolcall.request.model"] == model


def test_tgi_2_single_call_objects_open_no_span_and_raise_nothing(
    telemetry: Any, instrument: Any, fake: FakeProvider, caplog: Any
) -> None:
    # TGI before 3.0: "tool_calls" is one object, its name inside the arguments (no block to tell).
    def delta(arguments: str) -> dict[str, Any]:
        call = {
            "index": 0,
            "id": "",
            "type": "function",
            "function": {"name": None, "arguments": arguments},
        }
        choice = {"index": 0, "delta": {"role": "assistant", "tool_calls": call}, "finish_reason": None}
        return {
            "id": "",
            "model": "tgi",
            "object": "chat.completion.chunk",
            "created": 1,
            "choices": [choice],
        }

    finish = chat.chunk(chat.Event(finish_reason="eos_token"))
    fake.enqueue(
        chat.raw_script(
            [delta('{"function": {"_name": "get_weather"'), delta(', "city": "Bern"}}'), finish]
        )
    )
    with caplog.at_level("WARNING", logger="otel_toolcalls"):
        got = list(stream(client(fake)))
    assert len(got) == 3 and not isinstance(got[0].choices[0].delta.tool_calls, list)
    assert telemetry.tool_spans() == [] and telemetry.points("toolcall.internal_errors") == []
    assert not caplog.records
    assert inference(telemetry)["gen_ai.response.finish_reasons"] == ("eos_token",)
