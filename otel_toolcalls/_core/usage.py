"""Token usage of one streamed response, read from the event that carries the provider's final count.

Each reader takes the usage object (or dict, for botocore) the SDK already parsed, once per stream,
and returns a ``Usage``, or None when the event carried no count: a stream cut before that event
keeps ``state.usage`` None (no attribute, no metric point, never a 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import names as n


# Totals follow the GenAI conventions: input includes cached input (added where the provider's
# count excludes it), output includes reasoning (added where reported apart), billed counts win.
@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None


# Usage field -> (span attribute, counter): one table for the span and the metrics.
FIELDS = (
    ("input_tokens", n.GEN_AI_USAGE_INPUT_TOKENS, n.METRIC_USAGE_INPUT_TOKENS),
    ("output_tokens", n.GEN_AI_USAGE_OUTPUT_TOKENS, n.METRIC_USAGE_OUTPUT_TOKENS),
    ("cache_read", n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, n.METRIC_USAGE_CACHE_READ_INPUT_TOKENS),
    ("cache_write", n.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, n.METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS),
    ("reasoning", n.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, n.METRIC_USAGE_REASONING_OUTPUT_TOKENS),
)


def count(value: Any) -> int | None:
    """A token count as the provider sent it: a non-negative whole number (Cohere's are floats)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value < 0 or value != value or (isinstance(value, float) and not value.is_integer()):
        return None
    return int(value)


def _sum(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def make(
    *,
    input_tokens: Any = None,
    output_tokens: Any = None,
    cache_read: Any = None,
    cache_write: Any = None,
    reasoning: Any = None,
) -> Usage | None:
    usage = Usage(
        count(input_tokens), count(output_tokens), count(cache_read), count(cache_write), count(reasoning)
    )
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    return usage


def span_attributes(usage: Usage) -> dict[str, int]:
    attributes: dict[str, int] = {}
    for field, attribute, _ in FIELDS:
        value = getattr(usage, field)
        if value is not None:
            attributes[attribute] = value
    return attributes


def _get(obj: Any, name: str) -> Any:
    return getattr(obj, name, None) if obj is not None else None


# -- one reader per provider's usage shape ---------------------------------------------------------


def openai_chat(usage: Any) -> Usage | None:
    # {"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,
    #  "prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}
    # Also Mistral's UsageInfo and Groq's x_groq.usage: the same field names.
    return _openai(usage, "prompt_tokens", "completion_tokens")


def openai_responses(usage: Any) -> Usage | None:
    # {"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,
    #  "output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}
    return _openai(usage, "input_tokens", "output_tokens")


def _openai(usage: Any, inputs: str, outputs: str) -> Usage | None:
    """OpenAI's two APIs name their counts apart but shape them alike: ``<inputs>`` with its
    ``<inputs>_details`` (cached, cache-write), ``<outputs>`` with its ``<outputs>_details`` (reasoning)."""
    if usage is None:
        return None
    details_in = _get(usage, f"{inputs}_details")
    return make(
        input_tokens=_get(usage, inputs),
        output_tokens=_get(usage, outputs),
        cache_read=_get(details_in, "cached_tokens"),
        cache_write=_get(details_in, "cache_write_tokens"),
        reasoning=_get(_get(usage, f"{outputs}_details"), "reasoning_tokens"),
    )


def anthropic(start: Any, delta: Any) -> Usage | None:
    """``message_start``'s usage completed by ``message_delta``'s (cumulative; any field it carries
    wins). Anthropic's ``input_tokens`` excludes cache reads and writes: the total adds them."""

    def latest(name: str) -> Any:
        value = _get(delta, name)
        return value if value is not None else _get(start, name)

    uncached = count(latest("input_tokens"))
    cache_read = count(latest("cache_read_input_tokens"))
    cache_write = count(latest("cache_creation_input_tokens"))
    details = latest("output_tokens_details")
    return make(
        input_tokens=_sum(uncached, cache_read, cache_write),
        output_tokens=latest("output_tokens"),
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=_get(details, "thinking_tokens"),
    )


def bedrock(metadata: Any) -> Usage | None:
    # {"metadata":{"usage":{"inputTokens":12,"outputTokens":34,"totalTokens":46,
    #  "cacheReadInputTokens":0,"cacheWriteInputTokens":0},"metrics":{"latencyMs":321}}}
    usage = metadata.get("usage") if isinstance(metadata, dict) else None
    if not isinstance(usage, dict):
        return None
    cache_read = count(usage.get("cacheReadInputTokens"))
    cache_write = count(usage.get("cacheWriteInputTokens"))
    return make(
        input_tokens=_sum(count(usage.get("inputTokens")), cache_read, cache_write),
        output_tokens=usage.get("outputTokens"),
        cache_read=cache_read,
        cache_write=cache_write,
    )


def gemini(metadata: Any) -> Usage | None:
    # {"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":30,"thoughtsTokenCount":5,
    #  "cachedContentTokenCount":4,"toolUsePromptTokenCount":2,"totalTokenCount":49}}
    if metadata is None:
        return None
    thoughts = count(_get(metadata, "thoughts_token_count"))
    prompt = count(_get(metadata, "prompt_token_count"))
    candidates = count(_get(metadata, "candidates_token_count"))
    return make(
        input_tokens=_sum(prompt, count(_get(metadata, "tool_use_prompt_token_count"))),
        output_tokens=_sum(candidates, thoughts) if candidates is not None else None,
        cache_read=_get(metadata, "cached_content_token_count"),
        reasoning=thoughts,
    )


def cohere(usage: Any) -> Usage | None:
    # {"billed_units":{"input_tokens":12,"output_tokens":40},"tokens":{"input_tokens":900,...},
    #  "cached_tokens":0}: the billed units are what the customer pays for.
    if usage is None:
        return None
    billed, tokens = _get(usage, "billed_units"), _get(usage, "tokens")
    source = billed if _get(billed, "input_tokens") is not None else tokens
    return make(
        input_tokens=_get(source, "input_tokens"),
        output_tokens=_get(source, "output_tokens"),
        cache_read=_get(usage, "cached_tokens"),
    )
