"""Provider names: the conventions' well-known values (semconv_names.PROVIDERS), on the inference
span, the tool-call spans and the metrics, from the real SDK clients."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import semconv_names as sc

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import openai_chat as chat
from otel_toolcalls.testing import openai_responses as resp

API_VERSION = "2024-10-21"


def azure(fake: FakeProvider) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(
        azure_endpoint=fake.base_url, api_key="k", api_version=API_VERSION, max_retries=0
    )


def providers_seen(telemetry: Any) -> dict[str, set[Any]]:
    spans = {(s.attributes or {}).get(sc.PROVIDER_NAME) for s in telemetry.spans()}
    calls = {p.attributes.get(sc.PROVIDER_NAME) for p in telemetry.points("toolcall.calls")}
    duration = {p.attributes.get(sc.PROVIDER_NAME) for p in telemetry.points(sc.INFERENCE_DURATION)}
    return {"spans": spans, "calls": calls, "duration": duration}


def test_azure_openai_is_azure_ai_openai(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    list(azure(fake).chat.completions.create(**chat.request()))
    assert fake.requests[-1].path.startswith(f"/openai/deployments/{chat.MODEL}/chat/completions")
    assert len(telemetry.tool_spans()) == 1
    expected = {"azure.ai.openai"}
    assert providers_seen(telemetry) == {"spans": expected, "calls": expected, "duration": expected}


def test_async_azure_openai_is_azure_ai_openai(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    async def run() -> None:
        client = openai.AsyncAzureOpenAI(
            azure_endpoint=fake.base_url, api_key="k", api_version=API_VERSION, max_retries=0
        )
        async for _ in await client.chat.completions.create(**chat.request()):
            pass
        await client.close()

    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    asyncio.run(run())
    assert providers_seen(telemetry)["spans"] == {"azure.ai.openai"}


def test_openai_client_stays_openai(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    list(client.chat.completions.create(**chat.request()))
    assert providers_seen(telemetry)["spans"] == {"openai"}


def test_litellm_moonshot_is_moonshot_ai(
    telemetry: Any, instrument: Any, fake: FakeProvider, monkeypatch: Any
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    stream = litellm.completion(
        model="moonshot/kimi-k2-0711-preview",
        api_base=fake.base_url + "/v1",
        api_key="x",
        messages=[{"role": "user", "content": "w?"}],
        stream=True,
    )
    for _ in stream:
        pass
    # LiteLLM calls moonshot through the openai SDK: traced once, by the openai adapter, named by
    # LiteLLM's route.
    assert len([s for s in telemetry.spans() if s.name.startswith("chat ")]) == 1
    expected = {"moonshot_ai"}
    assert providers_seen(telemetry) == {"spans": expected, "calls": expected, "duration": expected}


def test_every_mapped_provider_is_well_known() -> None:
    import anthropic

    from otel_toolcalls._providers import anthropic as an
    from otel_toolcalls._providers import cohere, groq, litellm, mistral
    from otel_toolcalls._providers.bedrock import adapter as bedrock
    from otel_toolcalls._providers.gemini import adapter as gemini
    from otel_toolcalls._providers.openai import adapter as oa

    # anthropic's clients name their platform; the adapter takes the client's name.
    clients = (anthropic.Anthropic, anthropic.AnthropicBedrock, anthropic.AnthropicVertex)
    emitted = {
        an.SDK.provider,
        *(c._gen_ai_provider_name for c in clients),
        oa.SDK.provider,
        oa.AZURE_OPENAI,
        groq.SDK.provider,
        bedrock.PROVIDER,
        gemini.GEMINI,
        gemini.VERTEX_AI,
        mistral.PROVIDER,
        cohere.PROVIDER,
        *litellm.PROVIDERS.values(),
    }
    assert emitted <= sc.PROVIDERS, emitted - sc.PROVIDERS


def test_azure_empty_first_chunk_keeps_response_id_and_model(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    # Azure writes its prompt filter results first, in a chunk whose id and model are "".
    fake.enqueue(chat.script_for(chat.events_for([chat.WEATHER]), azure=True, usage=chat.USAGE))
    chunks = list(azure(fake).chat.completions.create(**chat.request(stream_options={"include_usage": True})))
    assert (chunks[0].id, chunks[0].model, chunks[1].id) == ("", "", "chatcmpl-fake")
    attributes = telemetry.one("chat ").attributes or {}
    assert attributes[sc.RESPONSE_ID] == "chatcmpl-fake"
    assert attributes[sc.RESPONSE_MODEL] == chat.MODEL
    assert attributes[sc.PROVIDER_NAME] == "azure.ai.openai"
    assert attributes[sc.USAGE_INPUT_TOKENS] == 19
    (duration,) = telemetry.points(sc.INFERENCE_DURATION)
    assert duration.attributes[sc.RESPONSE_MODEL] == chat.MODEL


# -- responses.retrieve(stream=True): fetch_response --------------------------------------------------


def test_retrieve_stream_is_fetch_response(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(resp.tool_call_script([resp.WEATHER], usage=resp.USAGE))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    events = list(client.responses.retrieve(resp.RESPONSE_ID, stream=True))
    assert events[-1].response.usage.input_tokens == 36  # the stored response carries its usage
    assert fake.requests[-1].path.startswith(f"/v1/responses/{resp.RESPONSE_ID}?")
    assert "fetch_response" in sc.OPERATIONS
    span = telemetry.one("fetch_response")
    attributes = span.attributes or {}
    assert attributes[sc.OPERATION_NAME] == "fetch_response"
    assert len(telemetry.tool_spans()) == 1
    # The conventions: no token usage for this operation, as attribute or metric; the older
    # operation duration, not the inference one.
    assert not set(attributes) & set(sc.USAGE_ATTRIBUTES)
    assert telemetry.points(sc.USAGE_INPUT) == [] and telemetry.points(sc.INFERENCE_DURATION) == []
    (duration,) = telemetry.points(sc.OPERATION_DURATION)
    assert duration.attributes[sc.OPERATION_NAME] == "fetch_response"


def test_responses_create_stays_chat(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(resp.tool_call_script([resp.WEATHER]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    list(client.responses.create(model=resp.MODEL, input="w?", stream=True))
    assert telemetry.one("chat ").attributes[sc.OPERATION_NAME] == "chat"
