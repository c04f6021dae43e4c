"""One driver per provider API: its real SDK client against the fake provider, how a stream is
opened and closed, how many argument fragments of each call the SDK yielded, and which outcomes
the API cannot express (with the reason, so the matrix says so instead of skipping)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sdk_compat import traces_itself

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as wire_anthropic
from otel_toolcalls.testing import bedrock as wire_bedrock
from otel_toolcalls.testing import cohere as wire_cohere
from otel_toolcalls.testing import gemini as wire_gemini
from otel_toolcalls.testing import mistral as wire_mistral
from otel_toolcalls.testing import ollama as wire_ollama
from otel_toolcalls.testing import openai_chat as wire_chat
from otel_toolcalls.testing import openai_responses as wire_responses

from .wires import Anthropic, Bedrock, Chat, Cohere, GeminiVertex, GeminiWhole, Ollama, Responses, Wire
from .wires import Mistral as MistralWire


def sdk(name: str) -> Any:
    """The SDK, imported when a case uses it: a version-lane venv holds one SDK, and its lane runs
    only that SDK's drivers (``OTEL_TOOLCALLS_MATRIX``)."""
    return importlib.import_module(name)


MESSAGES = [{"role": "user", "content": "Weather in Zürich, and the time?"}]
OUTCOMES = (
    "completed",
    "awkward_fragments",
    "parallel",
    "parallel_cut",
    "cut",
    "truncated",
    "filtered",
    "closed",
    "cancelled",
    "abandoned",
    "incomplete",
)

SYNC_ONLY = (
    "sync client: no asyncio task consumes the stream, so nothing can cancel it (the async twin has the case)"
)
WHOLE = (
    "Developer API function calls arrive whole in one part (TELEMETRY section 6): "
    "no fragments, no moment inside a call"
)


@dataclass
class Driver:
    id: str
    provider: str
    model: str
    wire: Wire
    # fake -> the SDK client; (client) -> the stream (a coroutine for async drivers).
    client: Callable[[FakeProvider], Any]
    open: Callable[[Any], Any]
    # The SDK's chunks -> fragments yielded per call index.
    delivered: Callable[[list[Any]], dict[int, int]]
    asynchronous: bool = False
    inference: str = "chat "  # prefix of the inference span's name
    # The first call survives a cut during the second: it had its own completion event.
    stopped_blocks: bool = False
    # The inference span is the SDK's own: it gets toolcall.* only when the stream reached its
    # final event (the SDK ends its span with the body, before the package could write them).
    sdk_span: bool = False
    # Outcome -> why this API cannot express it.
    cannot: dict[str, str] = field(default_factory=dict)
    # The SDK traces itself: its span, made with the test's tracer provider, is the inference span.
    sdk_tracing: bool = False
    # The module of an SDK that only a version lane's venv holds (aiobotocore pins botocore below
    # the main venv's): the driver is generated where it is installed, or where a lane names it.
    lane_sdk: str | None = None
    # The client is an async context manager the driver's ``open`` entered: exited at the case's
    # end, inside its loop (aiobotocore's aiohttp session must not outlive the loop).
    exit_client: bool = False

    def installed(self) -> bool:
        return self.lane_sdk is None or importlib.util.find_spec(self.lane_sdk) is not None

    def make(self, fake: FakeProvider, tracer_provider: Any) -> Any:
        return self.client(fake, tracer_provider) if self.sdk_tracing else self.client(fake)

    async def aclose(self, stream: Any) -> None:
        closer = getattr(stream, "aclose", None) or stream.close
        closing = closer()
        if inspect.isawaitable(closing):  # aiobotocore's event stream closes synchronously
            await closing


def _count(pairs: Any) -> dict[int, int]:
    counts: dict[int, int] = {}
    for index, fragment in pairs:
        if fragment:
            counts[index] = counts.get(index, 0) + 1
    return counts


def chat_delivered(chunks: list[Any]) -> dict[int, int]:
    return _count(
        (call.index, call.function.arguments if call.function else None)
        for c in chunks
        for choice in (getattr(c, "choices", None) or ())
        for call in ((choice.delta.tool_calls if choice.delta else None) or ())
    )


def mistral_delivered(events: list[Any]) -> dict[int, int]:
    return _count(
        (call.index, call.function.arguments)
        for e in events
        for choice in e.data.choices
        for call in (choice.delta.tool_calls or ())
    )


def responses_delivered(events: list[Any]) -> dict[int, int]:
    return _count(
        (e.output_index, e.delta) for e in events if e.type == "response.function_call_arguments.delta"
    )


def anthropic_delivered(events: list[Any]) -> dict[int, int]:
    return _count(
        (e.index, e.delta.partial_json)
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    )


def bedrock_delivered(events: list[dict[str, Any]]) -> dict[int, int]:
    return _count(
        (e["contentBlockDelta"]["contentBlockIndex"], e["contentBlockDelta"]["delta"]["toolUse"]["input"])
        for e in events
        if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})
    )


def invoke_delivered(events: list[dict[str, Any]]) -> dict[int, int]:
    """Claude's events, decoded from each chunk's bytes as a caller of the Invoke API does."""
    payloads = [json.loads(e["chunk"]["bytes"]) for e in events if "chunk" in e]
    return _count(
        (p["index"], p["delta"].get("partial_json"))
        for p in payloads
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "input_json_delta"
    )


def cohere_delivered(events: list[Any]) -> dict[int, int]:
    return _count(
        (e.index, e.delta.message.tool_calls.function.arguments)
        for e in events
        if e.type == "tool-call-delta"
    )


def gemini_delivered(chunks: list[Any]) -> dict[int, int]:
    """Calls in order of their first part; each partial_args entry is one fragment."""
    counts: dict[int, int] = {}
    index = -1
    for c in chunks:
        for part in (
            c.candidates[0].content.parts if c.candidates and c.candidates[0].content else None
        ) or ():
            call = part.function_call
            if call is None:
                continue
            if call.name:
                index += 1
            if call.partial_args:
                counts[index] = counts.get(index, 0) + len(call.partial_args)
    return counts


def _openai(fake: FakeProvider, kind: str = "OpenAI", path: str = "/v1") -> Any:
    return getattr(sdk("openai"), kind)(base_url=fake.base_url + path, api_key="test-key", max_retries=0)


def _anthropic(fake: FakeProvider, kind: str = "Anthropic", tracer_provider: Any = None) -> Any:
    cls = getattr(sdk("anthropic"), kind)
    # open_telemetry= exists from anthropic 1.14 (the SDK's own tracing); before, nothing to turn off.
    tracing = {"open_telemetry": {"tracer_provider": tracer_provider} if tracer_provider else False}
    options = tracing if traces_itself(cls) else {}
    return cls(api_key="test-key", base_url=fake.base_url, max_retries=0, **options)


def _anthropic_bedrock(fake: FakeProvider) -> Any:
    return sdk("anthropic").AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE",
        aws_secret_key="secret",
        aws_region="us-east-1",
        base_url=fake.base_url,
        max_retries=0,
        **({"open_telemetry": False} if traces_itself(sdk("anthropic").AnthropicBedrock) else {}),
    )


def _bedrock(fake: FakeProvider) -> Any:
    return wire_bedrock.client(fake.base_url)  # imports boto3 when a case uses it, as sdk() does


def _aiobotocore(fake: FakeProvider) -> Any:
    """The client's async context manager, entered by the driver's ``open`` (inside the loop)."""
    return wire_bedrock.aio_client(fake.base_url)


def invoke_stream(c: Any) -> Any:
    return c.invoke_model_with_response_stream(modelId=wire_anthropic.MODEL, body="{}")["body"]


async def aio_converse(creator: Any) -> Any:
    c = await creator.__aenter__()
    return (await c.converse_stream(modelId=wire_bedrock.MODEL, messages=BEDROCK_MESSAGES))["stream"]


async def aio_invoke(creator: Any) -> Any:
    c = await creator.__aenter__()
    return (await c.invoke_model_with_response_stream(modelId=wire_anthropic.MODEL, body="{}"))["body"]


def _gemini(fake: FakeProvider, *, vertex: bool) -> Any:
    genai, types = sdk("google.genai"), sdk("google.genai.types")
    options = types.HttpOptions(base_url=fake.base_url)
    if not vertex:
        return genai.Client(api_key="fake-key", http_options=options)
    # A token that never expires: the SDK sends it as is and asks no auth server.
    token = sdk("google.oauth2.credentials").Credentials(token="fake-token")
    return genai.Client(
        vertexai=True, project="fake-project", location="us-central1", credentials=token, http_options=options
    )


def _litellm_options(fake: FakeProvider) -> dict[str, Any]:
    return {
        "model": "hosted_vllm/qwen3-8b",
        "api_base": f"{fake.base_url}/v1",
        "api_key": "x",
        "messages": MESSAGES,
        "stream": True,
    }


def chat_create(c: Any) -> Any:
    return c.chat.completions.create(**wire_chat.request())


def responses_create(c: Any) -> Any:
    return c.responses.create(model=wire_responses.MODEL, input="weather?", stream=True)


def anthropic_create(c: Any) -> Any:
    return c.messages.create(
        model=wire_anthropic.MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": "weather?"}],
        stream=True,
    )


def gemini_stream(c: Any) -> Any:
    return c.models.generate_content_stream(model=wire_gemini.MODEL, contents="weather?")


def gemini_astream(c: Any) -> Any:
    return c.aio.models.generate_content_stream(model=wire_gemini.MODEL, contents="weather?")


BEDROCK_MESSAGES = [{"role": "user", "content": [{"text": "Weather in Zürich?"}]}]
NO_FILTER_COHERE = (
    "Cohere v2's finish reasons (COMPLETE, STOP_SEQUENCE, MAX_TOKENS, TOOL_CALL, ERROR, TIMEOUT) "
    "have no filter"
)
NO_FILTER_MISTRAL = "Mistral's finish reasons (stop, length, model_length, error, tool_calls) have no filter"
LITELLM_GC = (
    "LiteLLM's logging keeps a reference to its stream wrapper, so collection never comes; the exit hook "
    "ends it as abandoned (test_litellm.test_dropped_stream_is_abandoned_at_the_latest_at_exit)"
)
OLLAMA_WHOLE = (
    "Ollama's tool calls arrive whole, arguments parsed, each in a chunk of its own (TELEMETRY section 6): "
    "no fragments, no moment inside a call"
)
OLLAMA_CANNOT = {
    **{
        o: OLLAMA_WHOLE
        for o in ("awkward_fragments", "parallel_cut", "cut", "closed", "abandoned", "incomplete")
    },
    "truncated": (
        "a whole call completes at its own chunk; the done_reason 'length' after it cuts none "
        "(test_ollama.test_a_later_done_reason_does_not_cut_a_whole_call)"
    ),
    "filtered": "Ollama's done_reason values (stop, length, load, unload) have no filter",
    "cancelled": OLLAMA_WHOLE,
}


HF_AIOHTTP_GC = (
    "before 1.0 AsyncInferenceClient streams with aiohttp, whose ClientResponse.__del__ raises 'Event loop "
    "is closed' when a stream dropped mid-iteration is collected after asyncio.run; under pytest that "
    "leaves CPython 3.11's AST recursion counter off (SystemError at the next compile), as with cohere"
)


def _hf_async_cannot() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        major = int(version("huggingface_hub").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return {}
    return {"abandoned": HF_AIOHTTP_GC} if major < 1 else {}


def _hf(fake: FakeProvider, kind: str = "InferenceClient") -> Any:
    return getattr(sdk("huggingface_hub"), kind)(base_url=f"{fake.base_url}/v1", api_key="test-key")


def hf_create(c: Any) -> Any:
    return c.chat_completion(messages=MESSAGES, model=wire_chat.MODEL, stream=True)


def ollama_chat(c: Any) -> Any:
    return c.chat(model=wire_ollama.MODEL, messages=MESSAGES, stream=True)


def no_fragments(chunks: list[Any]) -> dict[int, int]:
    """Whole calls: the SDK yields no argument fragment."""
    return {}


LITELLM_FINISH = (
    "LiteLLM's stream wrapper writes finish_reason 'tool_calls' on the last chunk when the server sent "
    "none, so the stream the caller reads has a completion event"
)


def _whole_cannot() -> dict[str, str]:
    return {
        o: WHOLE
        for o in (
            "awkward_fragments",
            "parallel_cut",
            "cut",
            "closed",
            "cancelled",
            "abandoned",
            "incomplete",
        )
    }


def _openai_drivers(chat: Chat) -> list[Driver]:
    """The OpenAI SDK's chat and Responses streams."""
    return [
        Driver(
            "openai_chat",
            "openai",
            wire_chat.MODEL,
            chat,
            _openai,
            chat_create,
            chat_delivered,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "openai_chat_async",
            "openai",
            wire_chat.MODEL,
            chat,
            lambda f: _openai(f, "AsyncOpenAI"),
            chat_create,
            chat_delivered,
            asynchronous=True,
        ),
        Driver(
            "openai_responses",
            "openai",
            wire_responses.MODEL,
            Responses(),
            lambda f: _openai(f, path=""),
            responses_create,
            responses_delivered,
            stopped_blocks=True,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "openai_responses_async",
            "openai",
            wire_responses.MODEL,
            Responses(),
            lambda f: _openai(f, "AsyncOpenAI", ""),
            responses_create,
            responses_delivered,
            asynchronous=True,
            stopped_blocks=True,
        ),
    ]


def _groq_drivers(chat: Chat) -> list[Driver]:
    """Groq's SDK on the chat wire."""
    return [
        Driver(
            "groq",
            "groq",
            wire_chat.MODEL,
            chat,
            lambda f: sdk("groq").Groq(base_url=f.base_url, api_key="k", max_retries=0),
            chat_create,
            chat_delivered,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "groq_async",
            "groq",
            wire_chat.MODEL,
            chat,
            lambda f: sdk("groq").AsyncGroq(base_url=f.base_url, api_key="k", max_retries=0),
            chat_create,
            chat_delivered,
            asynchronous=True,
        ),
    ]


def _anthropic_drivers() -> list[Driver]:
    """Anthropic's Messages: direct, with the SDK's own tracing, and through Bedrock."""
    return [
        Driver(
            "anthropic",
            "anthropic",
            wire_anthropic.MODEL,
            Anthropic(),
            _anthropic,
            anthropic_create,
            anthropic_delivered,
            stopped_blocks=True,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "anthropic_sdk_tracing",
            "anthropic",
            wire_anthropic.MODEL,
            Anthropic(),
            lambda f, tp: _anthropic(f, tracer_provider=tp),
            anthropic_create,
            anthropic_delivered,
            inference="anthropic.messages.create",
            stopped_blocks=True,
            sdk_tracing=True,
            sdk_span=True,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "anthropic_async",
            "anthropic",
            wire_anthropic.MODEL,
            Anthropic(),
            lambda f: _anthropic(f, "AsyncAnthropic"),
            anthropic_create,
            anthropic_delivered,
            asynchronous=True,
            stopped_blocks=True,
        ),
        Driver(
            "anthropic_bedrock",
            "aws.bedrock",
            wire_anthropic.MODEL,
            Anthropic(bedrock=True),
            _anthropic_bedrock,
            anthropic_create,
            anthropic_delivered,
            stopped_blocks=True,
            cannot={"cancelled": SYNC_ONLY},
        ),
    ]


def _bedrock_drivers() -> list[Driver]:
    """Bedrock's runtime through boto3 and aiobotocore: Converse and InvokeModel."""
    return [
        Driver(
            "bedrock_converse",
            "aws.bedrock",
            wire_bedrock.MODEL,
            Bedrock(),
            _bedrock,
            lambda c: c.converse_stream(modelId=wire_bedrock.MODEL, messages=BEDROCK_MESSAGES)["stream"],
            bedrock_delivered,
            stopped_blocks=True,
            cannot={
                "cancelled": "boto3 has no asyncio client: nothing awaits the stream, so nothing cancels it"
            },
        ),
        Driver(
            "bedrock_invoke",
            "aws.bedrock",
            wire_anthropic.MODEL,
            Anthropic(bedrock=True),
            _bedrock,
            invoke_stream,
            invoke_delivered,
            stopped_blocks=True,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "aiobotocore_converse",
            "aws.bedrock",
            wire_bedrock.MODEL,
            Bedrock(),
            _aiobotocore,
            aio_converse,
            bedrock_delivered,
            asynchronous=True,
            stopped_blocks=True,
            lane_sdk="aiobotocore",
            exit_client=True,
        ),
        Driver(
            "aiobotocore_invoke",
            "aws.bedrock",
            wire_anthropic.MODEL,
            Anthropic(bedrock=True),
            _aiobotocore,
            aio_invoke,
            invoke_delivered,
            asynchronous=True,
            stopped_blocks=True,
            lane_sdk="aiobotocore",
            exit_client=True,
        ),
    ]


def _gemini_drivers() -> list[Driver]:
    """google-genai on the Developer API (whole calls) and on Vertex AI."""
    return [
        Driver(
            "gemini_dev",
            "gcp.gemini",
            wire_gemini.MODEL,
            GeminiWhole(),
            lambda f: _gemini(f, vertex=False),
            gemini_stream,
            gemini_delivered,
            inference="generate_content ",
            cannot=_whole_cannot(),
        ),
        Driver(
            "gemini_dev_async",
            "gcp.gemini",
            wire_gemini.MODEL,
            GeminiWhole(),
            lambda f: _gemini(f, vertex=False),
            gemini_astream,
            gemini_delivered,
            asynchronous=True,
            inference="generate_content ",
            cannot=_whole_cannot(),
        ),
        Driver(
            "gemini_vertex",
            "gcp.vertex_ai",
            wire_gemini.MODEL,
            GeminiVertex(),
            lambda f: _gemini(f, vertex=True),
            gemini_stream,
            gemini_delivered,
            inference="generate_content ",
            stopped_blocks=True,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "gemini_vertex_async",
            "gcp.vertex_ai",
            wire_gemini.MODEL,
            GeminiVertex(),
            lambda f: _gemini(f, vertex=True),
            gemini_astream,
            gemini_delivered,
            asynchronous=True,
            inference="generate_content ",
            stopped_blocks=True,
        ),
    ]


def _mistral_cohere_drivers() -> list[Driver]:
    """Mistral's and Cohere's own SDKs."""
    return [
        Driver(
            "mistral",
            "mistral_ai",
            wire_mistral.MODEL,
            MistralWire(),
            lambda f: sdk("mistralai.client").Mistral(api_key="x", server_url=f.base_url),
            lambda c: c.chat.stream(model=wire_mistral.MODEL, messages=MESSAGES),
            mistral_delivered,
            cannot={"cancelled": SYNC_ONLY, "filtered": NO_FILTER_MISTRAL},
        ),
        Driver(
            "mistral_async",
            "mistral_ai",
            wire_mistral.MODEL,
            MistralWire(),
            lambda f: sdk("mistralai.client").Mistral(api_key="x", server_url=f.base_url),
            lambda c: c.chat.stream_async(model=wire_mistral.MODEL, messages=MESSAGES),
            mistral_delivered,
            asynchronous=True,
            cannot={"filtered": NO_FILTER_MISTRAL},
        ),
        Driver(
            "cohere",
            "cohere",
            wire_cohere.MODEL,
            Cohere(),
            lambda f: sdk("cohere").ClientV2(base_url=f.base_url, api_key="x"),
            lambda c: c.chat_stream(model=wire_cohere.MODEL, messages=MESSAGES),
            cohere_delivered,
            stopped_blocks=True,
            cannot={"cancelled": SYNC_ONLY, "filtered": NO_FILTER_COHERE},
        ),
        Driver(
            "cohere_async",
            "cohere",
            wire_cohere.MODEL,
            Cohere(),
            lambda f: sdk("cohere").AsyncClientV2(base_url=f.base_url, api_key="x"),
            lambda c: _aiter(c.chat_stream(model=wire_cohere.MODEL, messages=MESSAGES)),
            cohere_delivered,
            asynchronous=True,
            stopped_blocks=True,
            cannot={"filtered": NO_FILTER_COHERE},
        ),
    ]


def _litellm_hf_drivers(chat: Chat) -> list[Driver]:
    """LiteLLM and Hugging Face's clients on the chat wire."""
    return [
        Driver(
            "litellm",
            "hosted_vllm",
            "qwen3-8b",
            chat,
            _litellm_options,
            lambda o: sdk("litellm").completion(**o),
            chat_delivered,
            cannot={"cancelled": SYNC_ONLY, "abandoned": LITELLM_GC, "incomplete": LITELLM_FINISH},
        ),
        Driver(
            "litellm_async",
            "hosted_vllm",
            "qwen3-8b",
            chat,
            _litellm_options,
            lambda o: sdk("litellm").acompletion(**o),
            chat_delivered,
            asynchronous=True,
            cannot={"abandoned": LITELLM_GC, "incomplete": LITELLM_FINISH},
        ),
        Driver(
            "huggingface",
            "huggingface",
            wire_chat.MODEL,
            chat,
            _hf,
            hf_create,
            chat_delivered,
            cannot={"cancelled": SYNC_ONLY},
        ),
        Driver(
            "huggingface_async",
            "huggingface",
            wire_chat.MODEL,
            chat,
            lambda f: _hf(f, "AsyncInferenceClient"),
            hf_create,
            chat_delivered,
            asynchronous=True,
            cannot=_hf_async_cannot(),
        ),
    ]


def _ollama_drivers() -> list[Driver]:
    """Ollama's own client."""
    return [
        Driver(
            "ollama",
            "ollama",
            wire_ollama.MODEL,
            Ollama(),
            lambda f: sdk("ollama").Client(host=f.base_url),
            ollama_chat,
            no_fragments,
            cannot=OLLAMA_CANNOT,
        ),
        Driver(
            "ollama_async",
            "ollama",
            wire_ollama.MODEL,
            Ollama(),
            lambda f: sdk("ollama").AsyncClient(host=f.base_url),
            ollama_chat,
            no_fragments,
            asynchronous=True,
            cannot=OLLAMA_CANNOT,
        ),
    ]


def drivers() -> list[Driver]:
    # One chat wire for every driver on it.
    chat = Chat()
    return [
        *_openai_drivers(chat),
        *_groq_drivers(chat),
        *_anthropic_drivers(),
        *_bedrock_drivers(),
        *_gemini_drivers(),
        *_mistral_cohere_drivers(),
        *_litellm_hf_drivers(chat),
        *_ollama_drivers(),
    ]


async def _aiter(stream: Any) -> Any:
    """Cohere's async chat_stream is an async generator, not a coroutine: await-able like the others."""
    return stream


DRIVERS = {d.id: d for d in drivers()}


def selected() -> list[Driver]:
    """The drivers whose cases run: all, or those named (ids, comma-separated) in
    ``OTEL_TOOLCALLS_MATRIX``, as a version lane whose venv holds one SDK sets it."""
    wanted = {w.strip() for w in os.environ.get("OTEL_TOOLCALLS_MATRIX", "").split(",") if w.strip()}
    unknown = wanted - set(DRIVERS)
    if unknown:
        raise ValueError(f"OTEL_TOOLCALLS_MATRIX names no driver: {sorted(unknown)}")
    return [d for d in DRIVERS.values() if d.id in wanted or (not wanted and d.installed())]
