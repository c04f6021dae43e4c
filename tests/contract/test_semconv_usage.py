"""Token usage on the inference span, from each provider's real stream through its real SDK.

The fake provider writes usage in each provider's wire shape; the SDK parses it; the package reads
the parsed object. A stream that never asked for usage, or was cut before the usage arrived, has no
``gen_ai.usage.*`` attribute at all (never a 0). Names are the conventions' (semconv_names).
"""

from __future__ import annotations

from typing import Any

import anthropic
import cohere
import httpx2
import openai
import pytest
import semconv_names as sc
from google import genai
from google.genai import types
from mistralai.client import Mistral

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as claude
from otel_toolcalls.testing import bedrock as br
from otel_toolcalls.testing import cohere as co
from otel_toolcalls.testing import gemini as g
from otel_toolcalls.testing import mistral as mi
from otel_toolcalls.testing import openai_chat as chat
from otel_toolcalls.testing import openai_responses as resp


def usage_of(span: Any) -> dict[str, Any]:
    attributes = span.attributes or {}
    return {name: attributes[name] for name in sc.USAGE_ATTRIBUTES if name in attributes}


def inference(telemetry: Any, prefix: str = "chat ") -> Any:
    return telemetry.one(prefix)


# -- OpenAI Chat Completions ----------------------------------------------------------------------


@pytest.fixture
def oai(fake: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)


def test_openai_chat_usage_chunk(telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any) -> None:
    fake.enqueue(chat.script_for(chat.events_for([chat.WEATHER]), usage=chat.USAGE))
    chunks = list(oai.chat.completions.create(**chat.request(stream_options={"include_usage": True})))
    assert chunks[-1].usage.prompt_tokens == 19  # the SDK parsed the usage chunk
    assert usage_of(inference(telemetry)) == {
        sc.USAGE_INPUT_TOKENS: 19,
        sc.USAGE_OUTPUT_TOKENS: 10,
        sc.USAGE_CACHE_READ_INPUT_TOKENS: 6,
        sc.USAGE_REASONING_OUTPUT_TOKENS: 4,
    }


def test_openai_chat_without_usage_has_none(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any
) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    list(oai.chat.completions.create(**chat.request()))
    assert usage_of(inference(telemetry)) == {}


def test_openai_chat_cut_before_usage_has_none(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any
) -> None:
    events = chat.events_for([chat.WEATHER])
    # The finish chunk arrived, the usage chunk after it did not.
    fake.enqueue(chat.script_for(events, usage=chat.USAGE, cut_after=len(events)))
    with pytest.raises(openai.APIError):
        list(oai.chat.completions.create(**chat.request(stream_options={"include_usage": True})))
    assert usage_of(inference(telemetry)) == {}


# -- OpenAI Responses -----------------------------------------------------------------------------


def test_responses_completed_usage(telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any) -> None:
    fake.enqueue(resp.tool_call_script([resp.WEATHER], usage=resp.USAGE))
    list(oai.responses.create(model=resp.MODEL, input="weather?", stream=True))
    assert usage_of(inference(telemetry)) == {
        sc.USAGE_INPUT_TOKENS: 36,
        sc.USAGE_OUTPUT_TOKENS: 87,
        sc.USAGE_CACHE_READ_INPUT_TOKENS: 12,
        sc.USAGE_REASONING_OUTPUT_TOKENS: 64,
    }


def test_responses_incomplete_usage(telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any) -> None:
    fake.enqueue(resp.tool_call_script([resp.WEATHER], end="incomplete", usage=resp.USAGE))
    list(oai.responses.create(model=resp.MODEL, input="weather?", stream=True))
    assert usage_of(inference(telemetry))[sc.USAGE_OUTPUT_TOKENS] == 87


def test_responses_cut_before_completed_has_none(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any
) -> None:
    events = resp.events_for([resp.WEATHER], usage=resp.USAGE)
    fake.enqueue(resp.script_for(events, cut_after=len(events) - 1))
    with pytest.raises(openai.APIError):
        list(oai.responses.create(model=resp.MODEL, input="weather?", stream=True))
    assert usage_of(inference(telemetry)) == {}


# -- Anthropic --------------------------------------------------------------------------------------

CACHED_START = {
    "input_tokens": 25,
    "cache_creation_input_tokens": 50,
    "cache_read_input_tokens": 100,
    "output_tokens": 1,
}
THINKING_DELTA = {"output_tokens": 42, "output_tokens_details": {"thinking_tokens": 7}}


def claude_client(fake: FakeProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="k", base_url=fake.base_url, max_retries=0, open_telemetry=False)


def claude_stream(c: Any) -> Any:
    return c.messages.create(
        model=claude.MODEL, max_tokens=1024, messages=[{"role": "user", "content": "w?"}], stream=True
    )


def test_anthropic_usage_adds_cache_to_input(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    events = claude.events_for([claude.WEATHER], start_usage=CACHED_START, delta_usage=THINKING_DELTA)
    fake.enqueue(claude.script_for(events))
    list(claude_stream(claude_client(fake)))
    # input = input_tokens + cache_read + cache_creation, as the conventions' Anthropic notes say.
    assert usage_of(inference(telemetry)) == {
        sc.USAGE_INPUT_TOKENS: 175,
        sc.USAGE_OUTPUT_TOKENS: 42,
        sc.USAGE_CACHE_READ_INPUT_TOKENS: 100,
        sc.USAGE_CACHE_WRITE_INPUT_TOKENS: 50,
        sc.USAGE_REASONING_OUTPUT_TOKENS: 7,
    }


def test_anthropic_cut_before_message_delta_has_none(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    events = claude.events_for([claude.WEATHER], start_usage=CACHED_START)
    # message_start (with its input counts) arrived; the message_delta with the final counts did not.
    fake.enqueue(claude.script_for(events, cut_after=len(events) - 2))
    # anthropic to 2.16 lets httpx2's error through, 2.17 wraps it: this test is about the usage.
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)):
        list(claude_stream(claude_client(fake)))
    assert usage_of(inference(telemetry)) == {}


# -- Bedrock ConverseStream ------------------------------------------------------------------------


def bedrock_client(fake: FakeProvider) -> Any:
    return br.client(fake.base_url)


def converse(fake: FakeProvider) -> list[Any]:
    messages = [{"role": "user", "content": [{"text": "w?"}]}]
    return list(bedrock_client(fake).converse_stream(modelId=br.MODEL, messages=messages)["stream"])


def test_bedrock_metadata_usage(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    cached = {**br.USAGE, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 8, "totalTokens": 154}
    fake.enqueue(br.script_for(br.frames_for([br.WEATHER], usage=cached)))
    events = converse(fake)
    assert events[-1]["metadata"]["usage"]["cacheReadInputTokens"] == 100
    # Bedrock's inputTokens excludes the cache reads and writes, like Anthropic's.
    assert usage_of(inference(telemetry)) == {
        sc.USAGE_INPUT_TOKENS: 120,
        sc.USAGE_OUTPUT_TOKENS: 34,
        sc.USAGE_CACHE_READ_INPUT_TOKENS: 100,
        sc.USAGE_CACHE_WRITE_INPUT_TOKENS: 8,
    }


def test_bedrock_without_metadata_has_none(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(br.script_for(br.frames_for([br.WEATHER], with_metadata=False)))
    converse(fake)
    assert usage_of(inference(telemetry)) == {}


# -- Gemini -----------------------------------------------------------------------------------------


def gemini_stream(fake: FakeProvider) -> list[Any]:
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fake.base_url))
    return list(client.models.generate_content_stream(model=g.MODEL, contents="w?"))


def test_gemini_usage_metadata(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    usage = {
        "promptTokenCount": 12,
        "candidatesTokenCount": 30,
        "thoughtsTokenCount": 5,
        "cachedContentTokenCount": 4,
        "totalTokenCount": 47,
    }
    parts = [g.text("Checking."), g.whole_call("get_weather", {"city": "Zürich"}, "fc_1")]
    fake.enqueue(g.script_for(g.one_part_each(parts, usage=usage)))
    gemini_stream(fake)
    # Gemini counts thoughts apart from the candidates: output includes them.
    assert usage_of(inference(telemetry, "generate_content ")) == {
        sc.USAGE_INPUT_TOKENS: 12,
        sc.USAGE_OUTPUT_TOKENS: 35,
        sc.USAGE_CACHE_READ_INPUT_TOKENS: 4,
        sc.USAGE_REASONING_OUTPUT_TOKENS: 5,
    }


def test_gemini_partial_counts_of_a_cut_stream_are_not_usage(
    telemetry: Any, instrument: Any, fake: FakeProvider
) -> None:
    # Gemini writes the counts so far on every chunk; only the finishing chunk's are the usage.
    running = {"promptTokenCount": 12, "totalTokenCount": 12}
    chunks = [g.chunk([g.text("Checking")], usage=running), g.chunk([g.text(" now")], usage=running)]
    fake.enqueue(g.script_for([*chunks, g.chunk(finish_reason="STOP", usage=g.USAGE)], cut_after=2))
    with pytest.raises(Exception):  # noqa: B017 - the SDK's own error for a cut body is not public
        gemini_stream(fake)
    assert usage_of(inference(telemetry, "generate_content ")) == {}


# -- Cohere and Mistral -----------------------------------------------------------------------------


def test_cohere_message_end_billed_usage(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(co.tool_call_script([chat.WEATHER]))
    client = cohere.ClientV2(base_url=fake.base_url, api_key="x")
    list(client.chat_stream(model=co.MODEL, messages=[{"role": "user", "content": "w?"}]))
    # Billed units, not the model-consumed tokens (900 in), as the conventions ask.
    assert usage_of(inference(telemetry)) == {sc.USAGE_INPUT_TOKENS: 12, sc.USAGE_OUTPUT_TOKENS: 40}


def test_mistral_finish_chunk_usage(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(mi.tool_call_script([chat.WEATHER], usage=mi.USAGE))
    client = Mistral(api_key="x", server_url=fake.base_url)
    list(client.chat.stream(model=mi.MODEL, messages=[{"role": "user", "content": "w?"}]))
    assert usage_of(inference(telemetry)) == {sc.USAGE_INPUT_TOKENS: 20, sc.USAGE_OUTPUT_TOKENS: 9}


def test_mistral_without_usage_has_none(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(mi.tool_call_script([chat.WEATHER]))
    client = Mistral(api_key="x", server_url=fake.base_url)
    list(client.chat.stream(model=mi.MODEL, messages=[{"role": "user", "content": "w?"}]))
    assert usage_of(inference(telemetry)) == {}


def test_package_names_are_the_conventions() -> None:
    from otel_toolcalls._core import names as n

    assert (
        n.GEN_AI_USAGE_INPUT_TOKENS,
        n.GEN_AI_USAGE_OUTPUT_TOKENS,
        n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        n.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
        n.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    ) == sc.USAGE_ATTRIBUTES


# -- Groq and LiteLLM (OpenAI-chat-shaped) ------------------------------------------------------------

GROQ_USAGE = {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42, "queue_time": 0.01}


def test_groq_x_groq_usage(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    import groq

    events = chat.events_for([chat.WEATHER])
    # Groq puts the usage in x_groq on the finish chunk.
    events[-1].extra = {"x_groq": {"id": "req_fake", "usage": GROQ_USAGE}}
    fake.enqueue(chat.script_for(events))
    client = groq.Groq(base_url=fake.base_url, api_key="k", max_retries=0)
    list(client.chat.completions.create(**chat.request()))
    assert usage_of(inference(telemetry)) == {sc.USAGE_INPUT_TOKENS: 30, sc.USAGE_OUTPUT_TOKENS: 12}


def test_litellm_include_usage(telemetry: Any, instrument: Any, fake: FakeProvider, monkeypatch: Any) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    fake.enqueue(chat.script_for(chat.events_for([chat.WEATHER]), usage=chat.USAGE))
    stream = litellm.completion(
        model="hosted_vllm/qwen3-8b",
        api_base=fake.base_url + "/v1",
        api_key="x",
        messages=[{"role": "user", "content": "w?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    for _ in stream:
        pass
    found = usage_of(inference(telemetry))
    assert (found[sc.USAGE_INPUT_TOKENS], found[sc.USAGE_OUTPUT_TOKENS]) == (19, 10)
