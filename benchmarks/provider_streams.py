"""Every adapter's workload for ``providers.py``: the wire script the fake provider writes, the real
SDK client that reads it, and the translator the replay feeds the parsed chunks to.

Each stream carries one tool call of ``FRAGMENTS`` argument fragments, one socket write per
fragment, in the provider's own wire format (the ``otel_toolcalls.testing.<provider>`` builders).
Gemini's Developer API sends calls whole, never fragmented: its workload is ``FRAGMENTS`` chunks
each holding one whole ``function_call`` part (so one call per chunk, the cost of a span per chunk:
an upper bound), next to a stream of text chunks ending in one whole call (what a long Gemini
answer costs per chunk).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from otel_toolcalls.testing import Script
from otel_toolcalls.testing import anthropic as anthropic_wire
from otel_toolcalls.testing import bedrock as bedrock_wire
from otel_toolcalls.testing import cohere as cohere_wire
from otel_toolcalls.testing import gemini as gemini_wire
from otel_toolcalls.testing import mistral as mistral_wire
from otel_toolcalls.testing import ollama as ollama_wire
from otel_toolcalls.testing import openai_chat as chat_wire
from otel_toolcalls.testing import openai_responses as responses_wire

FRAGMENTS = 4000
MESSAGES = [{"role": "user", "content": "What is the weather in Zurich?"}]


def pieces(count: int = FRAGMENTS) -> list[str]:
    # Short fragments, as models emit them (a token or two each); the same text as streams.py.
    body = [f"w{i % 97} " for i in range(max(0, count - 2))]
    return ['{"query": "', *body, '"}'][:count]


# -- wire scripts (run in the server process) --------------------------------------------------------


def _chat() -> Script:
    call = chat_wire.ToolCall(name="search", id="call_bench", arguments="", fragments=pieces())
    return chat_wire.script_for(chat_wire.events_for([call]), split_characters=False)


def _anthropic() -> Script:
    use = anthropic_wire.ToolUse(name="search", arguments="", id="toolu_bench", fragments=pieces())
    return anthropic_wire.script_for(anthropic_wire.events_for([use]), split_characters=False)


def _responses() -> Script:
    call = responses_wire.ToolCall(name="search", arguments="".join(pieces()), fragments=pieces())
    return responses_wire.script_for(responses_wire.events_for([call]), split_characters=False)


def _bedrock_invoke() -> Script:
    # Claude on InvokeModelWithResponseStream: each Messages event a `chunk` frame, its JSON in base64.
    use = anthropic_wire.ToolUse(name="search", arguments="", id="toolu_bench", fragments=pieces())
    return bedrock_wire.script_for(bedrock_wire.anthropic_chunks(anthropic_wire.events_for([use])))


def _mistral() -> Script:
    call = chat_wire.ToolCall(name="search", id="bench0001", arguments="", fragments=pieces())
    return mistral_wire.tool_call_script([call])


def _cohere() -> Script:
    call = chat_wire.ToolCall(name="search", id="search_bench", arguments="", fragments=pieces())
    return cohere_wire.tool_call_script([call])


def _gemini_whole() -> Script:
    parts = [gemini_wire.whole_call("search", {"query": f"w{i % 97}"}, f"fc_{i}") for i in range(FRAGMENTS)]
    return gemini_wire.script_for(gemini_wire.one_part_each(parts), split_characters=False)


def _gemini_text() -> Script:
    parts = [gemini_wire.text(f"w{i % 97} ") for i in range(FRAGMENTS - 1)]
    parts.append(gemini_wire.whole_call("search", {"query": "Zurich"}, "fc_1"))
    return gemini_wire.script_for(gemini_wire.one_part_each(parts), split_characters=False)


def _gemini_partial() -> Script:
    text = pieces()
    partials = [gemini_wire.Partial("$.query", p, i < len(text) - 1) for i, p in enumerate(text)]
    parts = gemini_wire.streamed_call("search", partials, "fc_v1")
    return gemini_wire.script_for(gemini_wire.one_part_each(parts), split_characters=False)


def _ollama_whole() -> Script:
    calls = [ollama_wire.ToolCall("search", {"query": f"w{i % 97}"}, None) for i in range(FRAGMENTS)]
    return ollama_wire.script_for(ollama_wire.chunks_for(calls, text=None), split_characters=False)


def _ollama_text() -> Script:
    bodies = [ollama_wire.chunk(content=f"w{i % 97} ") for i in range(FRAGMENTS - 2)]
    bodies += ollama_wire.chunks_for([ollama_wire.ToolCall("search", {"query": "Zurich"}, None)], text=None)
    return ollama_wire.script_for(bodies, split_characters=False)


def _bedrock() -> Script:
    use = bedrock_wire.ToolUse(name="search", input="", id="tooluse_bench", fragments=pieces())
    return bedrock_wire.tool_use_script([use])


# -- clients (run in the measured process) -----------------------------------------------------------

Opener = Callable[[], Any]


def _open_chat(url: str) -> Opener:
    import openai

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="bench", max_retries=0)
    return lambda: client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)


def _open_anthropic(url: str) -> Opener:
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key="bench", max_retries=0)
    return lambda: client.messages.create(
        model="claude-sonnet-4-6", max_tokens=1024, messages=MESSAGES, stream=True
    )


def _open_responses(url: str) -> Opener:
    import openai

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="bench", max_retries=0)
    return lambda: client.responses.create(model=responses_wire.MODEL, input="weather?", stream=True)


def _open_groq(url: str) -> Opener:
    import groq

    client = groq.Groq(base_url=url, api_key="bench", max_retries=0)
    return lambda: client.chat.completions.create(model="llama-3.3-70b", messages=MESSAGES, stream=True)


def _open_mistral(url: str) -> Opener:
    from mistralai.client import Mistral

    client = Mistral(api_key="bench", server_url=url)
    return lambda: client.chat.stream(model=mistral_wire.MODEL, messages=MESSAGES)


def _open_cohere(url: str) -> Opener:
    import cohere

    client = cohere.ClientV2(base_url=url, api_key="bench")
    return lambda: client.chat_stream(model=cohere_wire.MODEL, messages=MESSAGES)


def _genai(url: str, *, vertex: bool) -> Opener:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=url)
    if vertex:
        from google.oauth2.credentials import Credentials

        # A token that never expires: the SDK sends it as is and asks no auth server.
        token = Credentials(token="bench")  # type: ignore[no-untyped-call]
        client = genai.Client(
            vertexai=True, project="bench", location="us-central1", credentials=token, http_options=options
        )
    else:
        client = genai.Client(api_key="bench", http_options=options)
    return lambda: client.models.generate_content_stream(model=gemini_wire.MODEL, contents="weather?")


def _open_bedrock(url: str) -> Opener:
    client = bedrock_wire.client(url)
    messages = [{"role": "user", "content": [{"text": "What is the weather in Zurich?"}]}]
    return lambda: client.converse_stream(modelId=bedrock_wire.MODEL, messages=messages)["stream"]


def _open_bedrock_invoke(url: str) -> Opener:
    client = bedrock_wire.client(url)
    body = '{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 4096, "messages": []}'
    return lambda: client.invoke_model_with_response_stream(modelId=bedrock_wire.MODEL, body=body)["body"]


def _open_hf(url: str) -> Opener:
    from huggingface_hub import InferenceClient

    client = InferenceClient(base_url=f"{url}/v1", api_key="bench")
    return lambda: client.chat_completion(messages=MESSAGES, model="tgi", stream=True)


def _open_ollama(url: str) -> Opener:
    import ollama

    client = ollama.Client(host=url)
    return lambda: client.chat(model=ollama_wire.MODEL, messages=MESSAGES, stream=True)


def _open_litellm(url: str) -> Opener:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    options = {"api_base": f"{url}/v1", "api_key": "bench", "messages": MESSAGES, "stream": True}
    return lambda: litellm.completion(model="hosted_vllm/qwen3-8b", **options)


# -- the table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    name: str
    label: str
    script: Callable[[], Script]
    opener: Callable[[str], Opener]
    # "<module under otel_toolcalls._wiring.adapters>.<function>": what the replay feeds the parsed chunks.
    translator_path: str
    # Calls the stream is expected to trace (a check that the variant really traced).
    calls: int = 1


def _vertex(url: str) -> Opener:
    return _genai(url, vertex=True)


def _dev(url: str) -> Opener:
    return _genai(url, vertex=False)


PROVIDERS: list[Provider] = [
    Provider("openai", "openai chat", _chat, _open_chat, "formats.chat_completions.translate_chunk"),
    Provider(
        "anthropic", "anthropic", _anthropic, _open_anthropic, "formats.anthropic_messages.translate_event"
    ),
    Provider(
        "responses", "openai responses", _responses, _open_responses, "formats.responses.translate_event"
    ),
    Provider("groq", "groq", _chat, _open_groq, "formats.chat_completions.translate_chunk"),
    Provider("mistral", "mistral", _mistral, _open_mistral, "mistral.translate_event"),
    Provider("cohere", "cohere v2", _cohere, _open_cohere, "cohere.translate_event"),
    Provider(
        "gemini_whole",
        "gemini dev API, whole calls (1 per chunk)",
        _gemini_whole,
        _dev,
        "gemini.chunks.translate_chunk",
        calls=FRAGMENTS,
    ),
    Provider(
        "gemini_text",
        "gemini dev API, text chunks + 1 whole call",
        _gemini_text,
        _dev,
        "gemini.chunks.translate_chunk",
    ),
    Provider(
        "gemini_vertex",
        "gemini vertex, partial_args",
        _gemini_partial,
        _vertex,
        "gemini.chunks.translate_chunk",
    ),
    Provider(
        "bedrock", "bedrock converse_stream", _bedrock, _open_bedrock, "bedrock.converse.translate_event"
    ),
    Provider(
        "bedrock_invoke",
        "bedrock invoke_model_with_response_stream (Claude)",
        _bedrock_invoke,
        _open_bedrock_invoke,
        "bedrock.invoke.translate_event",
    ),
    Provider(
        "litellm", "litellm hosted_vllm", _chat, _open_litellm, "formats.chat_completions.translate_chunk"
    ),
    Provider(
        "huggingface", "huggingface_hub InferenceClient", _chat, _open_hf, "huggingface.translate_chunk"
    ),
    Provider(
        "ollama_whole",
        "ollama, whole calls (1 per chunk)",
        _ollama_whole,
        _open_ollama,
        "ollama.translate_chunk",
        calls=FRAGMENTS,
    ),
    Provider(
        "ollama_text", "ollama, text + 1 whole call", _ollama_text, _open_ollama, "ollama.translate_chunk"
    ),
]
BY_NAME = {p.name: p for p in PROVIDERS}


def translator(provider: Provider) -> Any:
    from importlib import import_module

    module, name = provider.translator_path.rsplit(".", 1)
    return getattr(import_module(f"otel_toolcalls._providers.{module}"), name)
