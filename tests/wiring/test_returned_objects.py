"""What a user can ask of what an instrumented SDK call returns answers as without instrumentation.

For every adapter, the real SDK streams from the fake provider twice, once uninstrumented and once
instrumented; each time, the returned object (and what ``iter()`` / ``aiter()`` / ``with`` give for
it) is asked every question code asks before deciding how to consume it: ``isinstance`` against
every ``collections.abc`` ABC and the ``types`` generator types, ``hasattr`` of the protocol
dunders (and of every public name the SDK object has), every one-argument ``inspect.is*``
predicate, and ``type()``. The two answer sets must be equal; the instrumented run must also have
made spans, so the comparison is between an instrumented object and a bare one.

The one answer allowed to differ: ``type()`` of an async generator handed back in place of the
SDK's (cohere, google-genai), which is the package's async-generator proxy (see
``otel_toolcalls/_sdks/returned.py`` for why that one is a proxy and the sync ones are real
generators), and of a Bedrock or Mistral event stream, which is the package's stand-in for it
(``_returned.Transparent``: see ``otel_toolcalls/_providers/bedrock/streams.py`` and
``mistral.py``). ``isinstance(x, types.AsyncGeneratorType)`` and ``inspect.isasyncgen`` stay equal.
"""

from __future__ import annotations

import asyncio
import collections.abc as abc
import copy
import gc
import inspect
import os
import pickle
import types
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import anthropic
import cohere
import groq
import litellm
import openai
import pytest
from google import genai
from google.genai import types as gtypes
from langchain_core.tools import tool
from mistralai.client import Mistral
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from otel_toolcalls._sdks.returned import AsyncGeneratorProxy, Transparent, relay
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as anthropic_wire
from otel_toolcalls.testing import bedrock as bedrock_wire
from otel_toolcalls.testing import cohere as cohere_wire
from otel_toolcalls.testing import gemini as gemini_wire
from otel_toolcalls.testing import mistral as mistral_wire
from otel_toolcalls.testing import openai_chat as chat_wire
from otel_toolcalls.testing import openai_responses as responses_wire

MESSAGES = [{"role": "user", "content": "Weather in Zürich?"}]

# -- the questions ---------------------------------------------------------------------------------

# Every ABC of collections.abc (ByteString is deprecated and says so when asked).
ABCS = [getattr(abc, name) for name in abc.__all__ if name != "ByteString"]
GENERATOR_TYPES = [
    types.GeneratorType,
    types.AsyncGeneratorType,
    types.CoroutineType,
    types.FunctionType,
    types.MethodType,
]
# The protocols code looks for, and what wrapt's ObjectProxy adds whether or not the wrapped has it.
DUNDERS = [
    "__enter__", "__exit__", "__aenter__", "__aexit__", "__iter__", "__next__", "__aiter__", "__anext__",
    "__await__", "__call__", "__len__", "__length_hint__", "__getitem__", "__setitem__", "__delitem__",
    "__contains__", "__reversed__", "__bool__", "__index__", "__int__", "__float__", "__complex__",
    "__bytes__", "__fspath__", "__round__", "__trunc__", "__floor__", "__ceil__", "__add__", "__radd__",
    "__iadd__", "__mul__", "__or__", "__and__", "__neg__", "__abs__", "__lt__", "__copy__", "__deepcopy__",
    "__get__", "__set__", "__set_name__", "__class_getitem__", "__mro_entries__", "__instancecheck__",
    "__subclasscheck__", "__buffer__", "__del__", "__dict__", "__wrapped__", "__self__", "__func__",
    "__code__", "__name__", "__qualname__",
]  # fmt: skip
# inspect's own one-argument predicates (not the names it imports, such as keyword.iskeyword).
PREDICATES = [
    getattr(inspect, name)
    for name in sorted(dir(inspect))
    if name.startswith("is") and getattr(getattr(inspect, name), "__module__", None) == "inspect"
]


def has(obj: Any, name: str) -> Any:
    # A property may raise something other than AttributeError (openai's snapshot before the
    # first chunk): that answer is compared too.
    try:
        return hasattr(obj, name)
    except Exception as exc:
        return type(exc)


def answers(obj: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"type": type(obj), "__class__": obj.__class__}
    found.update({f"isinstance {c.__name__}": isinstance(obj, c) for c in ABCS})
    found.update({f"isinstance types.{t.__name__}": isinstance(obj, t) for t in GENERATOR_TYPES})
    found.update({f"inspect.{p.__name__}": p(obj) for p in PREDICATES})
    found.update({f"hasattr {name}": has(obj, name) for name in DUNDERS})
    found["public names"] = sorted(n for n in dir(obj) if not n.startswith("_"))
    found.update({f"hasattr {name}": has(obj, name) for name in found["public names"]})
    return found


def ask(obj: Any, label: str = "returned") -> dict[str, dict[str, Any]]:
    """The answers for ``obj`` and for what a ``for`` / ``async for`` loop would get from it."""
    out = {label: answers(obj)}
    if isinstance(obj, abc.Iterable):
        out[f"{label} iter()"] = answers(iter(obj))
    if isinstance(obj, abc.AsyncIterable):
        out[f"{label} aiter()"] = answers(obj.__aiter__())
    return out


# -- one case per adapter and return shape ---------------------------------------------------------
# Each takes the fake provider, queues what it will stream, makes the call, asks, and drains the
# stream (so the instrumented run finishes its spans).


def _openai(fake: FakeProvider, kind: Any = openai.OpenAI, path: str = "/v1") -> Any:
    return kind(base_url=fake.base_url + path, api_key="x", max_retries=0)


def openai_chat(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(chat_wire.tool_call_script([chat_wire.WEATHER]))
    stream = _openai(fake).chat.completions.create(model=chat_wire.MODEL, messages=MESSAGES, stream=True)
    found = ask(stream)
    list(stream)
    return found


def openai_chat_helper(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(chat_wire.tool_call_script([chat_wire.WEATHER]))
    manager = _openai(fake).chat.completions.stream(model=chat_wire.MODEL, messages=MESSAGES)
    found = ask(manager, "manager")
    with manager as stream:
        found |= ask(stream, "entered")
        list(stream)
    return found


async def openai_chat_async(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(chat_wire.tool_call_script([chat_wire.WEATHER]))
    client = _openai(fake, openai.AsyncOpenAI)
    stream = await client.chat.completions.create(model=chat_wire.MODEL, messages=MESSAGES, stream=True)
    found = ask(stream)
    [c async for c in stream]
    return found


def openai_responses(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(responses_wire.tool_call_script([responses_wire.WEATHER]))
    stream = _openai(fake, path="").responses.create(model=responses_wire.MODEL, input="x", stream=True)
    found = ask(stream)
    list(stream)
    return found


def groq_chat(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(chat_wire.tool_call_script([chat_wire.WEATHER]))
    client = groq.Groq(base_url=fake.base_url, api_key="x", max_retries=0)
    stream = client.chat.completions.create(model=chat_wire.MODEL, messages=MESSAGES, stream=True)
    found = ask(stream)
    list(stream)
    return found


def _anthropic(fake: FakeProvider, kind: Any = anthropic.Anthropic) -> Any:
    return kind(api_key="x", base_url=fake.base_url, max_retries=0, open_telemetry=False)


def anthropic_messages(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(anthropic_wire.tool_use_script([anthropic_wire.WEATHER]))
    request = {"model": anthropic_wire.MODEL, "max_tokens": 64, "messages": MESSAGES}
    stream = _anthropic(fake).messages.create(**request, stream=True)
    found = ask(stream)
    list(stream)
    fake.enqueue(anthropic_wire.tool_use_script([anthropic_wire.WEATHER]))
    manager = _anthropic(fake).messages.stream(**request)
    found |= ask(manager, "manager")
    with manager as helper:
        found |= ask(helper, "entered")
        list(helper)
    return found


async def anthropic_async(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(anthropic_wire.tool_use_script([anthropic_wire.WEATHER]))
    client = _anthropic(fake, anthropic.AsyncAnthropic)
    stream = await client.messages.create(
        model=anthropic_wire.MODEL, max_tokens=64, messages=MESSAGES, stream=True
    )
    found = ask(stream)
    [c async for c in stream]
    return found


def mistral_stream(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(mistral_wire.tool_call_script([chat_wire.WEATHER]))
    client = Mistral(api_key="x", server_url=fake.base_url)
    stream = client.chat.stream(model=mistral_wire.MODEL, messages=MESSAGES)
    found = ask(stream)
    list(stream)
    return found


async def mistral_async(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(mistral_wire.tool_call_script([chat_wire.WEATHER]))
    client = Mistral(api_key="x", server_url=fake.base_url)
    stream = await client.chat.stream_async(model=mistral_wire.MODEL, messages=MESSAGES)
    found = ask(stream)
    [c async for c in stream]
    return found


def cohere_stream(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(cohere_wire.tool_call_script([chat_wire.WEATHER]))
    stream = cohere.ClientV2(base_url=fake.base_url, api_key="x").chat_stream(
        model=cohere_wire.MODEL, messages=MESSAGES
    )
    found = ask(stream)
    list(stream)
    return found


async def cohere_async(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(cohere_wire.tool_call_script([chat_wire.WEATHER]))
    stream = cohere.AsyncClientV2(base_url=fake.base_url, api_key="x").chat_stream(
        model=cohere_wire.MODEL, messages=MESSAGES
    )
    found = ask(stream)
    [c async for c in stream]
    return found


def _gemini_script() -> Any:
    call = gemini_wire.whole_call("get_weather", {"q": 1})
    return gemini_wire.script_for(gemini_wire.one_part_each([call]))


def _gemini(fake: FakeProvider) -> genai.Client:
    return genai.Client(api_key="x", http_options=gtypes.HttpOptions(base_url=fake.base_url))


def gemini_stream(fake: FakeProvider) -> dict[str, Any]:
    client = _gemini(fake)
    fake.enqueue(_gemini_script(), _gemini_script())
    stream = client.models.generate_content_stream(model=gemini_wire.MODEL, contents="x")
    found = ask(stream)
    list(stream)
    chat_stream = client.chats.create(model=gemini_wire.MODEL).send_message_stream("x")
    found |= ask(chat_stream, "chat")
    list(chat_stream)
    return found


async def gemini_async(fake: FakeProvider) -> dict[str, Any]:
    client = _gemini(fake)
    fake.enqueue(_gemini_script(), _gemini_script())
    stream = await client.aio.models.generate_content_stream(model=gemini_wire.MODEL, contents="x")
    found = ask(stream)
    [c async for c in stream]
    chat_stream = await client.aio.chats.create(model=gemini_wire.MODEL).send_message_stream("x")
    found |= ask(chat_stream, "chat")
    [c async for c in chat_stream]
    return found


def bedrock_converse(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(bedrock_wire.tool_use_script([bedrock_wire.WEATHER]))
    client = bedrock_wire.client(fake.base_url)
    messages = [{"role": "user", "content": [{"text": "x"}]}]
    result = client.converse_stream(modelId=bedrock_wire.MODEL, messages=messages)
    found = ask(result, "result") | ask(result["stream"], "stream")
    list(result["stream"])
    return found


def bedrock_invoke(fake: FakeProvider) -> dict[str, Any]:
    events = anthropic_wire.events_for([anthropic_wire.WEATHER])
    fake.enqueue(bedrock_wire.script_for(bedrock_wire.anthropic_chunks(events)))
    client = bedrock_wire.client(fake.base_url)
    result = client.invoke_model_with_response_stream(modelId=bedrock_wire.MODEL, body="{}")
    found = ask(result, "result") | ask(result["body"], "body")
    list(result["body"])
    return found


def _litellm_options(fake: FakeProvider) -> dict[str, Any]:
    return {
        "model": "hosted_vllm/qwen3-8b",
        "api_base": f"{fake.base_url}/v1",
        "api_key": "x",
        "messages": MESSAGES,
        "stream": True,
    }


def litellm_completion(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(chat_wire.tool_call_script([chat_wire.WEATHER]))
    stream = litellm.completion(**_litellm_options(fake))
    found = ask(stream)
    list(stream)
    return found


async def litellm_acompletion(fake: FakeProvider) -> dict[str, Any]:
    fake.enqueue(chat_wire.tool_call_script([chat_wire.WEATHER]))
    stream = await litellm.acompletion(**_litellm_options(fake))
    found = ask(stream)
    [c async for c in stream]
    return found


@tool
def lookup(q: str) -> str:
    """Looks q up."""
    return f"found {q}"


async def langchain_tool(fake: FakeProvider) -> dict[str, Any]:
    result = lookup.run({"q": "a"}, tool_call_id="call_rt_1")
    found = {"run": answers(result)}
    coroutine = lookup.arun({"q": "b"}, tool_call_id="call_rt_2")
    found["arun"] = answers(coroutine)
    await coroutine
    return found


CASES: list[Callable[[FakeProvider], Any]] = [
    openai_chat,
    openai_chat_helper,
    openai_chat_async,
    openai_responses,
    groq_chat,
    anthropic_messages,
    anthropic_async,
    mistral_stream,
    mistral_async,
    cohere_stream,
    cohere_async,
    gemini_stream,
    gemini_async,
    bedrock_converse,
    bedrock_invoke,
    litellm_completion,
    litellm_acompletion,
    langchain_tool,
]


def run(case: Callable[[FakeProvider], Any], fake: FakeProvider) -> dict[str, dict[str, Any]]:
    found = case(fake)
    if inspect.iscoroutine(found):
        found = asyncio.run(found)
    return found  # type: ignore[no-any-return]


def differences(bare: dict[str, Any], instrumented: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    keys = bare.keys() | instrumented.keys()
    return {k: (bare.get(k), instrumented.get(k)) for k in sorted(keys) if bare.get(k) != instrumented.get(k)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_returned_objects_answer_as_without_instrumentation(
    case: Any, instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    instrumentor = instrument()
    instrumentor.uninstrument()
    bare = run(case, fake)
    assert telemetry.spans() == []
    instrument()
    instrumented = run(case, fake)
    assert telemetry.spans(), "the instrumented run made no span: nothing was compared"
    assert bare.keys() == instrumented.keys()
    for label in bare:
        diff = differences(bare[label], instrumented[label])
        if isinstance(instrumented[label]["type"], type) and issubclass(
            instrumented[label]["type"], AsyncGeneratorProxy
        ):
            # The one allowed difference, and only where the SDK returned an async generator.
            assert bare[label]["type"] is types.AsyncGeneratorType, label
            assert diff.pop("type") == (types.AsyncGeneratorType, instrumented[label]["type"])
        elif isinstance(instrumented[label]["type"], type) and issubclass(
            instrumented[label]["type"], Transparent
        ):
            # A stand-in for the SDK's stream (Bedrock's event stream, Mistral's): type() names it,
            # everything else is the SDK's.
            assert diff.pop("type") == (bare[label]["__class__"], instrumented[label]["type"])
        assert diff == {}, f"{case.__name__} {label}: {diff}"


# -- a real consumer: Starlette picks sync or async iteration by isinstance ------------------------


def _cohere_stream(fake: FakeProvider) -> Any:
    fake.enqueue(cohere_wire.tool_call_script([chat_wire.WEATHER]))
    client = cohere.ClientV2(base_url=fake.base_url, api_key="x")
    return client.chat_stream(model=cohere_wire.MODEL, messages=MESSAGES)


async def _body(response: StreamingResponse) -> list[Any]:
    return [chunk async for chunk in response.body_iterator]


def test_starlette_streaming_response_iterates_a_sync_cohere_stream(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    # StreamingResponse iterates an AsyncIterable directly and anything else in a thread pool; the
    # instrumented stream must be taken for what the SDK returned (a sync generator).
    events = asyncio.run(_body(StreamingResponse(_cohere_stream(fake))))
    assert [e.type for e in events][-1] == "message-end"
    assert telemetry.one("tool_call get_weather").attributes["toolcall.outcome"] == "completed"


def test_sse_starlette_serves_a_sync_cohere_stream_end_to_end(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    async def endpoint(request: Any) -> EventSourceResponse:
        return EventSourceResponse(_cohere_stream(fake))

    app = Starlette(routes=[Route("/events", endpoint)])
    with TestClient(app) as client:
        body = client.get("/events").text
    assert body.count("data: ") >= 5 and "message-end" in body
    assert telemetry.one("tool_call get_weather").attributes["toolcall.outcome"] == "completed"


# -- the relay is ``yield from``; close() is told from collection ------------------------------------


def _echo() -> Any:
    """A generator using all of the protocol: send, throw, close and a return value."""
    received = []
    try:
        while True:
            try:
                value = yield len(received)
            except KeyError as exc:
                value = f"caught {exc}"
            if value == "stop":
                return received
            received.append(value)
    finally:
        received.append("finally")


def _drive(gen: Any) -> list[Any]:
    out: list[Any] = [next(gen), gen.send("a"), gen.throw(KeyError("k")), gen.send("b")]
    try:
        gen.send("stop")
    except StopIteration as stop:
        out.append(("returned", stop.value))
    try:
        gen.throw(ValueError("after the end"))
    except ValueError as exc:
        out.append(("raised", str(exc)))
    return out


def test_relay_answers_send_throw_and_return_as_the_generator_it_relays() -> None:
    closes: list[str] = []
    relayed = relay(_echo(), on_close=lambda: closes.append("closed"))
    assert _drive(relayed) == _drive(_echo())
    assert relayed.__name__ == "_echo" and relayed.__qualname__ == "_echo"
    assert closes == []  # a generator that ended is not closed


def test_relay_sees_close_but_not_collection() -> None:
    seen: list[str] = []
    inner = _echo()
    relayed = relay(inner, on_close=lambda: seen.append("close"))
    next(relayed)
    relayed.close()
    assert seen == ["close"] and inner.gi_frame is None  # the SDK's generator was closed after

    dropped = relay(_echo(), on_close=lambda: seen.append("refcount"))
    next(dropped)
    del dropped
    cycle: list[Any] = [relay(_echo(), on_close=lambda: seen.append("cycle"))]
    next(cycle[0])
    cycle.append(cycle)
    del cycle
    gc.collect()
    assert seen == ["close"]


def test_a_cohere_stream_collected_in_a_cycle_is_abandoned_and_a_closed_one_closed(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    held: list[Any] = [_cohere_stream(fake)]
    for _ in range(3):
        next(held[0])
    held.append(held)
    del held
    gc.collect()
    stream = _cohere_stream(fake)
    for _ in range(3):
        next(stream)
    stream.close()
    reasons = [s.attributes["toolcall.abort_reason"] for s in telemetry.tool_spans()]
    assert reasons == ["abandoned", "closed"]


async def test_the_async_proxy_refuses_copy_as_the_sdk_generator_does(
    instrument: Any, fake: FakeProvider
) -> None:
    def chat_stream() -> Any:
        client = cohere.AsyncClientV2(base_url=fake.base_url, api_key="x")
        return client.chat_stream(model=cohere_wire.MODEL, messages=MESSAGES)

    instrument().uninstrument()
    bare = chat_stream()
    instrument()
    proxied = chat_stream()
    assert type(proxied) is AsyncGeneratorProxy and type(bare) is types.AsyncGeneratorType
    for probe in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError):
            probe(bare)
        with pytest.raises(TypeError):
            probe(proxied)
    await bare.aclose()
    await proxied.aclose()
