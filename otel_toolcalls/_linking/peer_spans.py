"""Peers' inference spans known by how each peer makes them: its instrumentation scope, the span's
kind and name. The core asks through ``_core.peers`` (``know_peers``) and knows no peer's scope.

Two ways a peer's span escapes the core's reading of the current span: it is current at the request
but carries no attributes yet (util-genai starts its span bare), or it is never current where the
SDK sends the request (OpenLLMetry's Responses stream span, started once the SDK returned the
stream; OpenInference's ``messages.stream()`` span, current only while the stream manager is
made). The second are remembered when they start (a span processor on the tracer provider the
package was given) in the context that started them, and adopted by the next stream of that
context under the same parent.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from otel_toolcalls._core import names as n
from otel_toolcalls._core import peers
from otel_toolcalls._core.errors import report

__all__ = ["RECORDED_BY_SCOPE", "RULES", "Rule", "watch"]


def _inference_name(name: str) -> bool:
    return name.split(" ", 1)[0] in n.INFERENCE_OPERATIONS


@dataclass(frozen=True)
class Rule:
    """A peer's inference span: its kind and a test of its name. Where it is not current at the
    request (``beside``), which provider's request it is for and whether it starts ``before`` the
    stream exists (else after it: the SDK returned the stream to the peer's wrapper)."""

    kind: SpanKind
    named: Callable[[str], bool]
    beside: str | None = None
    before: bool = False


# instrumentation scope -> the rule of its inference spans.
RULES: dict[str, Rule] = {
    # util-genai (openai-v2 on the experimental conventions, the official GenAI instrumentations):
    # ``{operation} {model}``, current, attributes set only at its end.
    "opentelemetry.util.genai.handler": Rule(SpanKind.CLIENT, _inference_name),
    # OpenLLMetry openai: a Responses stream's span, started after the SDK returned the stream.
    "opentelemetry.instrumentation.openai.v1": Rule(
        SpanKind.CLIENT, {"openai.response"}.__contains__, beside="openai"
    ),
    # OpenInference anthropic: the span of messages.stream(), whose request is made at ``__enter__``.
    "openinference.instrumentation.anthropic": Rule(
        SpanKind.INTERNAL,
        {"messages.stream", "beta.messages.stream"}.__contains__,
        beside="anthropic",
        before=True,
    ),
}

# Instrumentation scopes that record some of the inference metrics themselves, by metric name: where
# one of them made the inference span the package adopted, the package leaves those metrics to it.
# One not listed records none of them.
RECORDED_BY_SCOPE: dict[str, frozenset[str]] = {
    # anthropic 2.x tracing itself: spans only (anthropic/_tracing.py and anthropic/lib/_tracing
    # import opentelemetry.trace and no meter), so the package records every metric.
    "com.anthropic.sdk.python": frozenset(),
    # opentelemetry-instrumentation-openai-v2 records these two, older names for other signals.
    "opentelemetry.instrumentation.openai_v2": frozenset(
        {n.METRIC_OPERATION_DURATION, "gen_ai.client.token.usage"}
    ),
}

# The peers' spans started beside their request in this context, oldest first, not yet adopted:
# (the order they started in, the span).
_started: ContextVar[tuple[tuple[int, weakref.ref[Any]], ...]] = ContextVar(
    "otel_toolcalls_peer_spans", default=()
)
_order = itertools.count(1)
# How many of them are remembered: a span whose stream is never read must not be kept for long.
_KEPT = 4
# Tracer providers watched already (a provider keeps its processors for its life), by identity:
# a provider may be unhashable (Logfire's is a dataclass).
_watched: list[weakref.ref[Any]] = []
_on: list[bool] = [False]


def _rule(span: Any) -> Rule | None:
    scope = getattr(span, "instrumentation_scope", None)
    rule = RULES.get(getattr(scope, "name", None) or "")
    if rule is None or getattr(span, "kind", None) != rule.kind or not rule.named(getattr(span, "name", "")):
        return None
    return rule


class _Known:
    """What ``_core.peers`` asks."""

    def is_inference(self, span: Any) -> bool:
        return _rule(span) is not None

    def mark(self) -> int:
        return next(_order)

    def started_for(self, ctx: otel_context.Context, provider: str, mark: int) -> Any:
        """The span a peer started beside a ``provider`` request under ``ctx``'s span, still
        recording: the last before ``mark`` (a stream's birth), or the first after it, as the peer's
        rule says. Taken: no other stream adopts it."""
        parent = trace.get_current_span(ctx).get_span_context()
        parent_id = parent.span_id if parent.is_valid else None
        for order, ref in sorted(_started.get(), key=lambda entry: abs(entry[0] - mark)):
            span: Any = ref()
            rule = _rule(span) if span is not None else None
            if rule is None or rule.beside != provider or rule.before != (order < mark):
                continue
            own_parent = getattr(span, "parent", None)
            if span.is_recording() and (own_parent.span_id if own_parent is not None else None) == parent_id:
                self.claim(span)
                return span
        return None

    def records(self, span: Any) -> frozenset[str]:
        scope = getattr(span, "instrumentation_scope", None)
        return RECORDED_BY_SCOPE.get(getattr(scope, "name", None) or "", frozenset())

    def claim(self, span: Any) -> None:
        started = _started.get()
        if any(ref() is span for _, ref in started):
            _started.set(tuple(entry for entry in started if entry[1]() is not span))


_KNOWN = _Known()


def _remember(span: Any) -> None:
    if not _on[0]:
        return
    try:
        rule = _rule(span)
        if rule is not None and rule.beside is not None:
            _started.set((*_started.get()[1 - _KEPT :], (next(_order), weakref.ref(span))))
    except Exception as exc:  # a span of a class that shows less: not remembered, nothing else
        report("_linking.peer_spans._remember", exc)


def _processor() -> Any:
    from opentelemetry.sdk.trace import SpanProcessor

    class Remember(SpanProcessor):  # type: ignore[misc]
        def on_start(self, span: Any, parent_context: otel_context.Context | None = None) -> None:
            _remember(span)

    return Remember()


def watch(tracer_provider: Any) -> None:
    """Known from now on: peers' spans that start on ``tracer_provider`` (an SDK provider; another
    shows no starts, and only current spans are known there)."""
    _on[0] = True
    peers.know_peers(_KNOWN)
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    add = getattr(provider, "add_span_processor", None)
    _watched[:] = [ref for ref in _watched if ref() is not None]
    if add is None or any(ref() is provider for ref in _watched):
        return
    try:
        add(_processor())
        _watched.append(weakref.ref(provider))
    except Exception as exc:  # not the SDK's provider after all: current spans only
        report("_linking.peer_spans.watch", exc)


def unwatch() -> None:
    """Uninstrumented: the processors stay on their providers (none can be removed), idle."""
    _on[0] = False
