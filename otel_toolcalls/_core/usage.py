"""Token usage of one streamed response: the provider-neutral record and its span attributes.

Each translator reads its provider's usage shape (beside it, in ``_providers``) from the event that
carries the final count, once per stream, and returns ``make(...)``: None when the event carried no
count, so a stream cut before that event keeps ``state.usage`` None (no attribute, no metric point,
never a 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import names as n


# Totals follow the GenAI conventions: input includes cached input (added where the provider's
# count excludes it), output includes reasoning (added where reported apart), billed counts win.
# Not frozen: made per stream, and a frozen dataclass sets each field through object.__setattr__.
@dataclass
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


def total(*values: int | None) -> int | None:
    """The sum of the counts present (a provider's count that excludes a part), or None."""
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
