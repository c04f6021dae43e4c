"""A peer's inference span for a request (another instrumentation's): how the package knows one.

Only what a span or its context shows publicly (a context value, the span's kind and attributes),
never a peer's private state. Each rule is a peer's published convention (TELEMETRY.md section 6).
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from . import names as n
from .errors import guarded, report

__all__ = [
    "LLM_SPAN_IS_CURRENT",
    "OPENINFERENCE_LANGCHAIN",
    "know_peers",
    "langchain_run_ended",
    "langchain_run_started",
    "peer_inference_span",
    "peer_mark",
    "peer_span_claimed",
    "peer_span_started",
    "recorded_elsewhere",
    "started_ns",
    "suppressed_span",
]

_log = logging.getLogger(__name__)

# OpenLLMetry's convention, shared by its framework instrumentations (LangChain, LlamaIndex...): the
# one that made the LLM span for a request sets this context value while the provider SDK's call
# runs, so that the provider's instrumentation adds no second span. A context value, not a span's
# attribute: it reads the same under any tracer provider.
LLM_SPAN_IS_CURRENT = "suppress_language_model_instrumentation"

# OpenInference's span kind attribute (openinference-semantic-conventions), set at the span's start.
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
OPENINFERENCE_LLM = "LLM"

# OpenInference's LangChain instrumentation (module), and the LangChain model run in progress in
# this context: its id, None, or _AMBIGUOUS where one call started several (a batch ``generate``:
# which request is whose is unknown).
OPENINFERENCE_LANGCHAIN = "openinference.instrumentation.langchain"
_AMBIGUOUS = object()
_langchain_run: ContextVar[Any] = ContextVar("otel_toolcalls_langchain_run", default=None)

# opentelemetry-util-genai (the official GenAI instrumentations' base) publishes the inference span
# it makes in the context, for other instrumentations: ``get_current_inference_span(context)`` of
# this module, in its repository since after 1.3b0 (no release on PyPI has it yet). Never imported
# unless util-genai is loaded already; where the module is absent, its spans are known as any
# other's (current, with ``gen_ai.operation.name``).
UTIL_GENAI = "opentelemetry.util.genai"
UTIL_GENAI_CONTEXT = "opentelemetry.util.genai.context"
_util_genai_getter: list[Any] = []


class KnownPeers(Protocol):
    """What the wiring knows of peers' inference spans by how each makes them (its scope, kind,
    name: otel_toolcalls/_linking/peer_spans.py); the core knows no peer's scope."""

    def is_inference(self, span: Any) -> bool: ...

    def mark(self) -> int: ...

    def started_for(self, ctx: otel_context.Context, provider: str, mark: int) -> Any: ...

    def claim(self, span: Any) -> None: ...

    def records(self, span: Any) -> frozenset[str]: ...


_known: list[KnownPeers] = []


def know_peers(known: KnownPeers) -> None:
    if known not in _known:
        _known.append(known)


def recorded_elsewhere(span: Any) -> frozenset[str]:
    """The metrics the instrumentation that made ``span`` (an adopted span) records itself: the
    package leaves those to it."""
    if span is None:
        return frozenset()
    found: frozenset[str] = frozenset()
    for known in _known:
        try:
            found |= known.records(span)
        except Exception as exc:
            report("_core.peers.recorded_elsewhere", exc)
    return found


def peer_mark() -> tuple[int, ...]:
    """Where a stream is born among the peers' spans that start beside their requests."""
    return tuple(known.mark() for known in _known)


def peer_span_started(ctx: otel_context.Context, provider: str, marks: tuple[int, ...]) -> Any:
    """A peer's inference span started for a ``provider`` request beside it (never current where
    the SDK runs), before or after the stream's birth (``marks``) as that peer does; None where none
    is known. Taken: no other stream adopts it."""
    for known, mark in zip(_known, marks, strict=False):
        try:
            span = known.started_for(ctx, provider, mark)
        except Exception as exc:
            report("_core.peers.peer_span_started", exc)
            continue
        if span is not None:
            return span
    return None


def peer_span_claimed(span: Any) -> None:
    """``span`` is adopted (current at its request): no later stream takes it as started beside it."""
    for known in _known:
        guarded(known.claim, span)


def peer_inference_span(ctx: otel_context.Context) -> Any:
    """A peer's inference span for this request, still recording: the current span of
    ``ctx`` when it is one (a span of another tracer provider that shows neither kind nor
    attributes is not one, for the package), else OpenInference's span of the LangChain model run
    in progress; None otherwise.

    Not known, for nothing public shows them at the request: Langfuse's generation and
    OpenLLMetry's ConverseStream span (never current); OpenInference's LlamaIndex span (reset from
    the context and LlamaIndex's active span id before the stream's first read makes the request)."""
    span = trace.get_current_span(ctx)
    if span.is_recording() and _is_inference(span, ctx):
        return span
    return _util_genai_span(ctx) or _langchain_span()


def _util_genai_span(ctx: otel_context.Context) -> Any:
    """The inference span util-genai published in ``ctx``, still recording; None where util-genai
    is not loaded, or its release publishes none."""
    if UTIL_GENAI not in sys.modules:
        return None
    if not _util_genai_getter:
        try:
            module = importlib.import_module(UTIL_GENAI_CONTEXT)
            _util_genai_getter.append(getattr(module, "get_current_inference_span", None))
        except ImportError:
            _util_genai_getter.append(None)
    getter = _util_genai_getter[0]
    if getter is None:
        return None
    try:
        span = getter(ctx)
        return span if span is not None and span.is_recording() else None
    except Exception as exc:  # its API changed: its span is known only when current
        report("_core.peers._util_genai_span", exc)
        return None


def _is_inference(span: Any, ctx: otel_context.Context) -> bool:
    if otel_context.get_value(LLM_SPAN_IS_CURRENT, ctx):
        return True
    attributes = getattr(span, "attributes", None)
    if not isinstance(attributes, Mapping):
        _log.debug("otel_toolcalls: %r shows no attributes; not taken as an inference span", type(span))
        return False
    # The conventions' inference span, of any kind (TELEMETRY.md section 2): a framework's model
    # call span (Strands' ``chat``, Google ADK's ``generate_content``) is INTERNAL.
    return (
        attributes.get(OPENINFERENCE_SPAN_KIND) == OPENINFERENCE_LLM
        or attributes.get(n.GEN_AI_OPERATION_NAME) in n.INFERENCE_OPERATIONS
        or any(known.is_inference(span) for known in _known)
    )


def langchain_run_started(run_id: object) -> None:
    """LangChain's callbacks say a model run started here: remembered for the request it makes,
    where OpenInference's LangChain instrumentation is loaded (never imported here)."""
    if OPENINFERENCE_LANGCHAIN in sys.modules:
        _langchain_run.set(run_id if _langchain_run.get() is None else _AMBIGUOUS)


def langchain_run_ended() -> None:
    """LangChain's callbacks say a model run ended (or failed) here."""
    if _langchain_run.get() is not None:
        _langchain_run.set(None)


def _langchain_span() -> Any:
    """OpenInference's span of the LangChain model run in progress, by its public
    ``LangChainInstrumentor().get_span(run_id)``; None where there is none, or no one run."""
    run_id = _langchain_run.get()
    module = sys.modules.get(OPENINFERENCE_LANGCHAIN)
    if run_id is None or run_id is _AMBIGUOUS or module is None:
        return None
    try:
        instrumentor = module.LangChainInstrumentor()
        # Not instrumented, get_span prints a hint to stdout: not asked then.
        if not instrumentor.is_instrumented_by_opentelemetry:
            return None
        span = instrumentor.get_span(run_id)
        return span if span is not None and span.is_recording() else None
    except Exception as exc:  # a peer's API changed: its span is not known, nothing else
        report("_core.peers._langchain_span", exc)
        return None


def suppressed_span(ctx: otel_context.Context) -> Any:
    """Under instrumentation suppressed (in the current context), the current span of ``ctx`` when
    it stands in for a span a peer records: not recording itself, local (not a propagated
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
