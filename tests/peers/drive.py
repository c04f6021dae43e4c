"""One process of the coexistence tests: a peer instrumentation of the same SDK, this package, or
both in one order, then the same requests against the fake provider, printed as JSON.

    python tests/peers/drive.py PEER MODE

MODE: ``peer`` (the peer alone), ``ours`` (the package alone), ``ours-first`` / ``peer-first``
(both, in that instrumentation order). The SDK module is imported only after both instrumented,
as ``opentelemetry-instrument`` does (a peer that imports it itself does so when it instruments).
Every SDK the peer instruments is instrumented and driven in the one process; a framework peer
(OpenInference's LangChain and LlamaIndex) is driven through the framework's OpenAI model, which
streams with the openai SDK. Each request runs alone (spans collected per request): sync and
async, a stream whose second tool call is cut mid-arguments, the SDK's streaming helper, a request
that fails before any stream.
What the SDK handed the caller (chunks, events, the exception's type) is printed too.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolcalls.testing.kit import FakeLLM, call, cut_mid_arguments

EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader()
CALLS = [call("get_weather", {"city": "Zürich"}), call("get_time", {"tz": "Europe/Zurich"})]
PROMPT = [{"role": "user", "content": "Weather and time in Zürich?"}]
OPENAI_MODEL, ANTHROPIC_MODEL = "gpt-4o-mini", "claude-sonnet-4-6"
BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


def _logfire(sdk: str) -> Callable[[], None]:
    import logfire

    return logfire.instrument_openai if sdk == "openai" else logfire.instrument_anthropic


def _instrumentor(module: str, name: str) -> Callable[[], None]:
    def instrument() -> None:
        __import__(module)
        getattr(sys.modules[module], name)().instrument(tracer_provider=trace.get_tracer_provider())

    return instrument


# peer -> sdk -> its instrumentor (module:class), as each peer's documentation sets it up.
PEERS: dict[str, dict[str, str]] = {
    "openinference": {
        "openai": "openinference.instrumentation.openai:OpenAIInstrumentor",
        "anthropic": "openinference.instrumentation.anthropic:AnthropicInstrumentor",
        "bedrock": "openinference.instrumentation.bedrock:BedrockInstrumentor",
    },
    "openllmetry": {
        "openai": "opentelemetry.instrumentation.openai:OpenAIInstrumentor",
        "anthropic": "opentelemetry.instrumentation.anthropic:AnthropicInstrumentor",
        "bedrock": "opentelemetry.instrumentation.bedrock:BedrockInstrumentor",
    },
    "otel-openai-v2": {"openai": "opentelemetry.instrumentation.openai_v2:OpenAIInstrumentor"},
    # openai-v2 on the experimental conventions (OPT_IN below): util-genai makes its span.
    "otel-openai-v2-latest": {"openai": "opentelemetry.instrumentation.openai_v2:OpenAIInstrumentor"},
    # One SDK of OpenInference's, at a release whose lane pins an older SDK (tests/versions/run.py).
    "openinference-anthropic": {"anthropic": "openinference.instrumentation.anthropic:AnthropicInstrumentor"},
    "openinference-openai": {"openai": "openinference.instrumentation.openai:OpenAIInstrumentor"},
    # The official GenAI instrumentations (opentelemetry-python-genai), on opentelemetry-util-genai.
    "otel-genai": {
        "openai": "opentelemetry.instrumentation.genai.openai:OpenAIInstrumentor",
        "anthropic": "opentelemetry.instrumentation.genai.anthropic:AnthropicInstrumentor",
        "bedrock": "opentelemetry.instrumentation.genai.bedrock:BedrockInstrumentor",
    },
    "otel-genai-langchain": {
        "langchain": "opentelemetry.instrumentation.genai.langchain:LangChainInstrumentor"
    },
    "otel-genai-llama-index": {
        "llama-index": "opentelemetry.instrumentation.genai.llama_index:LlamaIndexInstrumentor"
    },
    "logfire": {"openai": "logfire", "anthropic": "logfire"},
    "langfuse": {"openai": "langfuse"},
    "openinference-langchain": {"langchain": "openinference.instrumentation.langchain:LangChainInstrumentor"},
    "openinference-llama-index": {
        "llama-index": "openinference.instrumentation.llama_index:LlamaIndexInstrumentor"
    },
}
# A framework "sdk": the provider API of the fake its model streams from (through the provider SDK).
FRAMEWORKS = {"langchain": "openai", "llama-index": "openai"}


def _langfuse() -> None:
    from langfuse import Langfuse

    # Its exporter keeps what it would send; the host, never reached, is this machine's discard port.
    Langfuse(public_key="pk-lf-test", secret_key="sk-lf-test", host="http://127.0.0.1:9",
             span_exporter=InMemorySpanExporter())  # fmt: skip
    # The integration: `from langfuse.openai import openai` instead of `import openai`.
    __import__("langfuse.openai")


def _peer(peer: str, sdk: str) -> Callable[[], None]:
    target = PEERS[peer][sdk]
    if target == "langfuse":
        return _langfuse
    if target == "logfire":
        return _logfire(sdk)
    module, name = target.split(":")
    return _instrumentor(module, name)


def _ours() -> None:
    from otel_toolcalls import ToolCallsInstrumentor

    # The buffered-stream check reads the clock (a first chunk late, the rest at once): under load any
    # run can trip it, which would differ between runs for no reason of the peer's.
    ToolCallsInstrumentor().instrument(
        meter_provider=MeterProvider(metric_readers=[READER]), buffered_min_ttfc_ms=float(10**9)
    )


# peer -> the environment it is set up in, before anything is instrumented.
PEER_ENV = {"otel-openai-v2-latest": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}}


def set_up(peer: str, mode: str) -> None:
    os.environ.update(PEER_ENV.get(peer, {}))
    if peer == "logfire" and mode != "ours":
        import logfire

        # Nothing leaves the process: no Logfire backend, no console; its spans go to EXPORTER.
        logfire.configure(
            send_to_logfire=False,
            console=False,
            additional_span_processors=[SimpleSpanProcessor(EXPORTER)],
            metrics=False,
            inspect_arguments=False,
        )
    else:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)

    def theirs() -> None:
        for sdk in PEERS[peer]:
            _peer(peer, sdk)()

    steps = {"peer": [theirs], "ours": [_ours], "ours-first": [_ours, theirs], "peer-first": [theirs, _ours]}
    for step in steps[mode]:
        step()


# -- the requests: each returns what the SDK handed the caller -------------------------------------


def _dump(item: Any) -> Any:
    dump = getattr(item, "model_dump", None)
    return dump(mode="json", exclude_none=True) if dump is not None else repr(item)


def _raised(exc: BaseException) -> dict[str, Any]:
    return {"raised": type(exc).__name__, "status": getattr(exc, "status_code", None)}


def _framework_model(sdk: str, base_url: str) -> Any:
    """The framework's OpenAI chat model, pointed at the fake (imported here: after instrumenting)."""
    if sdk == "langchain":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=OPENAI_MODEL, base_url=base_url, api_key="test-key", max_retries=0)
    from llama_index.llms.openai import OpenAI

    return OpenAI(model=OPENAI_MODEL, api_base=base_url, api_key="test-key", max_retries=0)


def _framework_stream(sdk: str, model: Any, asynchronous: bool) -> Any:
    if sdk == "langchain":
        return model.astream(PROMPT[0]["content"]) if asynchronous else model.stream(PROMPT[0]["content"])
    from llama_index.core.llms import ChatMessage

    messages = [ChatMessage(role="user", content=PROMPT[0]["content"])]
    return model.astream_chat(messages) if asynchronous else model.stream_chat(messages)


def _framework_chunk(sdk: str, chunk: Any) -> Any:
    """What the framework hands the caller, less its run ids (new in every run)."""
    if sdk == "langchain":
        return {"content": chunk.content, "tool_call_chunks": chunk.tool_call_chunks}
    calls = chunk.message.additional_kwargs.get("tool_calls") or []
    return {"delta": chunk.delta, "tool_calls": [_dump(c) for c in calls]}


def framework_sync(sdk: str, model: Any) -> Any:
    seen: list[Any] = []
    try:
        for chunk in _framework_stream(sdk, model, asynchronous=False):
            seen.append(_framework_chunk(sdk, chunk))
    except Exception as exc:
        seen.append(_raised(exc))
    return seen


def framework_chain(sdk: str, model: Any) -> Any:
    """The model as a step of a chain (LangChain: a ``RunnableSequence``, whose config the model's
    run is made in); LlamaIndex, which has none, streams as ``framework_sync``."""
    if sdk == "langchain":
        from langchain_core.runnables import RunnableLambda

        model = RunnableLambda(lambda prompt: prompt, name="prepare") | model
    return framework_sync(sdk, model)


def framework_batch(sdk: str, model: Any) -> Any:
    """LangChain's ``generate`` of two prompts, streamed: one call, two model runs."""
    from langchain_core.messages import HumanMessage

    prompts = [[HumanMessage(content=PROMPT[0]["content"])]] * 2
    result = model.generate(prompts, stream=True)
    return [[g.message.tool_calls for g in generations] for generations in result.generations]


async def framework_async(sdk: str, model: Any) -> Any:
    seen: list[Any] = []
    try:
        stream = _framework_stream(sdk, model, asynchronous=True)
        async for chunk in await stream if sdk == "llama-index" else stream:
            seen.append(_framework_chunk(sdk, chunk))
    except Exception as exc:
        seen.append(_raised(exc))
    return seen


def _create(sdk: str, client: Any) -> Any:
    if sdk == "openai":
        return client.chat.completions.create(model=OPENAI_MODEL, messages=PROMPT, stream=True)
    if sdk == "bedrock":
        messages = [{"role": "user", "content": [{"text": PROMPT[0]["content"]}]}]
        return client.converse_stream(modelId=BEDROCK_MODEL, messages=messages)["stream"]
    return client.messages.create(model=ANTHROPIC_MODEL, max_tokens=256, messages=PROMPT, stream=True)


def _respond(client: Any) -> Any:
    """A Responses stream (the fake's ``responses`` API), with a function tool declared."""
    tools = [{"type": "function", "name": c.name, "parameters": {"type": "object"}} for c in CALLS]
    return client.responses.create(model=OPENAI_MODEL, input=PROMPT[0]["content"], tools=tools, stream=True)


def sync_responses(sdk: str, client: Any) -> Any:
    seen: list[Any] = []
    try:
        for event in _respond(client):
            seen.append(_dump(event))
    except Exception as exc:
        seen.append(_raised(exc))
    return seen


async def async_responses(sdk: str, client: Any) -> Any:
    seen: list[Any] = []
    try:
        async for event in await _respond(client):
            seen.append(_dump(event))
    except Exception as exc:
        seen.append(_raised(exc))
    return seen


def _helper(sdk: str, client: Any) -> Any:
    if sdk == "openai":
        return client.chat.completions.stream(model=OPENAI_MODEL, messages=PROMPT)
    return client.messages.stream(model=ANTHROPIC_MODEL, max_tokens=256, messages=PROMPT)


def sync_stream(sdk: str, client: Any) -> Any:
    seen: list[Any] = []
    try:
        for chunk in _create(sdk, client):
            seen.append(_dump(chunk))
    except Exception as exc:
        seen.append(_raised(exc))
    return seen


async def async_stream(sdk: str, client: Any) -> Any:
    seen: list[Any] = []
    try:
        async for chunk in await _create(sdk, client):
            seen.append(_dump(chunk))
    except Exception as exc:
        seen.append(_raised(exc))
    return seen


def sync_helper(sdk: str, client: Any) -> Any:
    with _helper(sdk, client) as stream:
        seen = [event.type for event in stream]
        final = stream.get_final_completion() if sdk == "openai" else stream.get_final_message()
    return [*seen, _dump(final)]


async def async_helper(sdk: str, client: Any) -> Any:
    async with _helper(sdk, client) as stream:
        seen = [event.type async for event in stream]
        final = await (stream.get_final_completion() if sdk == "openai" else stream.get_final_message())
    return [*seen, _dump(final)]


def sync_fails(sdk: str, client: Any) -> Any:
    try:
        _create(sdk, client)
    except Exception as exc:
        return _raised(exc)
    return "no error"


async def async_fails(sdk: str, client: Any) -> Any:
    try:
        await _create(sdk, client)
    except Exception as exc:
        return _raised(exc)
    return "no error"


# name -> (request, its reply: a fault, or None for none queued: the fake answers 500)
REQUESTS: dict[str, tuple[Callable[..., Any], Any]] = {
    "sync-cut": (sync_stream, cut_mid_arguments(call=1, after=2)),
    "async-cut": (async_stream, cut_mid_arguments(call=1, after=2)),
    "sync-helper": (sync_helper, "whole"),
    "async-helper": (async_helper, "whole"),
    "sync-fails": (sync_fails, None),
    "async-fails": (async_fails, None),
}


# -- what was recorded ------------------------------------------------------------------------------


# The fake's port, different in each process: written as PORT wherever an attribute carries it.
PORT: list[str] = []
# A framework's run ids (LangChain's in the messages OpenInference records), new in every run.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _value(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if PORT and isinstance(value, str):
        return UUID.sub("UUID", value.replace(f":{PORT[0]}", ":PORT"))
    return "PORT" if PORT and value == int(PORT[0]) else value


def span_record(span: Any) -> dict[str, Any]:
    return {
        "name": span.name,
        "kind": span.kind.name,
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
        "id": span.context.span_id,
        "parent": span.parent.span_id if span.parent is not None else None,
        "status": span.status.status_code.name,
        "attributes": {k: _value(v) for k, v in (span.attributes or {}).items()},
    }


def metrics() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if mode_of() == "peer":
        return out  # the package's reader was never registered
    data = READER.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    attributes = {k: _value(v) for k, v in (point.attributes or {}).items()}
                    key = json.dumps(attributes, sort_keys=True, default=str)
                    value = getattr(point, "count", None)
                    out.setdefault(metric.name, {})[key] = value if value is not None else point.value
    return out


def mode_of() -> str:
    return sys.argv[2]


# boto3 has no async client and ConverseStream no streaming helper; a framework's model streams
# (cut, or failing before any stream) as the SDK's create does, whole in a chain, and has no SDK
# helper; LangChain's batch makes two streamed requests in one call (two replies queued).
BEDROCK_REQUESTS = ("sync-cut", "sync-fails")
FRAMEWORK_REQUESTS = ("sync-cut", "async-cut", "sync-fails", "async-fails")
FRAMEWORK_EXTRA: dict[str, dict[str, tuple[Callable[..., Any], Any]]] = {
    "langchain": {"sync-chain": (framework_chain, "whole"), "sync-batch": (framework_batch, "twice")},
    "llama-index": {"sync-chain": (framework_chain, "whole")},
}


# Responses streams (the fake's ``responses`` API), driven where a peer traces them with an inference
# span of its own that is never current (OpenLLMetry's ``openai.response``).
RESPONSES_REQUESTS: dict[str, tuple[Callable[..., Any], Any]] = {
    "sync-responses-cut": (sync_responses, cut_mid_arguments(call=1, after=2)),
    "async-responses-cut": (async_responses, cut_mid_arguments(call=1, after=2)),
    "sync-responses": (sync_responses, "whole"),
}
RESPONSES_PEERS = {"openllmetry"}


def _runs(sdk: str) -> dict[str, tuple[Callable[..., Any], Any]]:
    if sdk == "openai" and sys.argv[1] in RESPONSES_PEERS:
        return {**REQUESTS, **RESPONSES_REQUESTS}
    if sdk in FRAMEWORKS:
        runs = {name: (framework_async if name.startswith("async") else framework_sync, REQUESTS[name][1])
                for name in FRAMEWORK_REQUESTS}  # fmt: skip
        return {**runs, **FRAMEWORK_EXTRA[sdk]}
    if sdk == "bedrock":
        return {name: REQUESTS[name] for name in BEDROCK_REQUESTS}
    return REQUESTS


def requests(llm: FakeLLM, sdk: str) -> dict[str, Any]:
    results = {}
    for name, (run, reply) in _runs(sdk).items():
        api = llm.responses if name in RESPONSES_REQUESTS else getattr(llm, FRAMEWORKS.get(sdk, sdk))
        for _ in range(2 if reply == "twice" else 1 if reply is not None else 0):
            api.reply(tool_calls=CALLS, fault=None if reply in ("whole", "twice") else reply)
        asynchronous = name.startswith("async")
        if sdk in FRAMEWORKS:
            client = _framework_model(sdk, api.base_url)
        else:
            client = api.make_client(asynchronous=asynchronous)
        EXPORTER.clear()
        seen = asyncio.run(run(sdk, client)) if asynchronous else run(sdk, client)
        results[name] = {"sdk": seen, "spans": [span_record(s) for s in EXPORTER.get_finished_spans()]}
    return results


def main(peer: str, mode: str) -> None:
    set_up(peer, mode)
    llm = FakeLLM().start()
    PORT.append(str(llm.port))
    by_sdk = {sdk: requests(llm, sdk) for sdk in PEERS[peer]}
    llm.stop()
    # Metrics by SDK: the provider name tells them apart.
    print(json.dumps({"requests": by_sdk, "metrics": metrics()}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
