"""Someone else's inference span for a request: how the package knows one when it sees it.

Only what a span or its context shows publicly: a context value, the span's kind and attributes
(the OpenTelemetry SDK's ``ReadableSpan`` shows both; the API has no reader), never a peer's private
state. Each rule is a peer's published convention (docs/TELEMETRY.md section 6):

- OpenLLMetry's frameworks set ``LLM_SPAN_IS_CURRENT`` in the context while the SDK's call runs
  inside the LLM span they made (any span class);
- the GenAI conventions' inference span, of any kind: ``gen_ai.operation.name`` an inference
  operation (OTel openai-v2 / genai-openai, OpenLLMetry, Logfire: CLIENT; Strands' and Google
  ADK's model spans: INTERNAL);
- OpenInference's LLM span (kind INTERNAL): ``openinference.span.kind`` ``LLM``.

Not known, for nothing public shows them at the request (docs/TELEMETRY.md section 6): Langfuse's
generation and OpenLLMetry's ConverseStream span (never current); OpenInference's LangChain span
(never current, no attributes before it ends; its ``get_current_span()`` gives the enclosing run's)
and LlamaIndex span (reset from the context and LlamaIndex's active span id before the stream's
first read makes the request).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from . import names as n

__all__ = ["LLM_SPAN_IS_CURRENT", "foreign_inference_span", "started_ns", "suppressed_span"]

_log = logging.getLogger(__name__)

# OpenLLMetry's convention, shared by its framework instrumentations (LangChain, LlamaIndex...): the
# one that made the LLM span for a request sets this context value while the provider SDK's call
# runs, so that the provider's instrumentation adds no second span. A context value, not a span's
# attribute: it reads the same under any tracer provider.
LLM_SPAN_IS_CURRENT = "suppress_language_model_instrumentation"

# OpenInference's span kind attribute (openinference-semantic-conventions), set at the span's start.
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
OPENINFERENCE_LLM = "LLM"


def foreign_inference_span(ctx: otel_context.Context) -> Any:
    """The current span of ``ctx`` when it is already this request's inference span, made by
    someone else, and still recording; None otherwise (a span of another tracer provider that
    shows neither kind nor attributes is not one, for the package)."""
    span = trace.get_current_span(ctx)
    if not span.is_recording():
        return None
    if otel_context.get_value(LLM_SPAN_IS_CURRENT, ctx):
        return span
    attributes = getattr(span, "attributes", None)
    if not isinstance(attributes, Mapping):
        _log.debug("otel_toolcalls: %r shows no attributes; not taken as an inference span", type(span))
        return None
    if attributes.get(OPENINFERENCE_SPAN_KIND) == OPENINFERENCE_LLM:
        return span
    # The conventions' inference span, of any kind (TELEMETRY.md section 2): a framework's model
    # call span (Strands' ``chat``, Google ADK's ``generate_content``) is INTERNAL.
    if attributes.get(n.GEN_AI_OPERATION_NAME) in n.INFERENCE_OPERATIONS:
        return span
    return None


def suppressed_span(ctx: otel_context.Context) -> Any:
    """Under instrumentation suppressed (in the current context), the current span of ``ctx`` when
    it stands in for a span someone else records: not recording itself, local (not a propagated
    parent), of a sampled trace. Logfire hands out such spans while it suppresses other
    instrumentation of the SDK's call (the anthropic SDK's own span, there), sharing the context
    of its own recording span."""
    if is_instrumentation_enabled():
        return None
    span = trace.get_current_span(ctx)
    span_context = span.get_span_context()
    if span.is_recording() or not span_context.is_valid or span_context.is_remote:
        return None
    if not span_context.trace_flags.sampled:
        return None
    return span


def started_ns(span: Any) -> int | None:
    """When ``span`` started (``ReadableSpan.start_time``), where its class shows it."""
    start = getattr(span, "start_time", None)
    return start if isinstance(start, int) and start > 0 else None
