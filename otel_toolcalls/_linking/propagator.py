"""The ``toolcalls`` propagator: a call's outcome, id and tool_call span ride along with whatever
OpenTelemetry already propagates (HTTP, gRPC, Celery, Kafka, MCP ``_meta``).

It injects only inside a call's context (``execute_tool``, ``tool_call_context``, a framework
adapter's execution) and only for a call this process saw; it extracts into the context what
``execute_tool`` and ``tool_call_outcome`` then read (``_linking.carried``). Turned on by
``OTEL_PROPAGATORS=tracecontext,baggage,toolcalls`` or ``install_propagator()``.
"""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.propagators.textmap import (
    CarrierT,
    Getter,
    Setter,
    TextMapPropagator,
    default_getter,
    default_setter,
)

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import REGISTRY

from . import carried, spans
from .context import current_tool_call_id


def _candidates(context: Context | None) -> list[str]:
    ids: list[str] = []
    # tool_call_context (and a framework adapter) name the call in the running context only.
    if context is None or context is otel_context.get_current():
        call_id = current_tool_call_id()
        if call_id:
            ids.append(call_id)
    span = trace.get_current_span(context)
    if span.is_recording() and spans.is_execution(span):
        call_id = spans.call_id_of(span)
        if isinstance(call_id, str) and call_id:
            ids.append(call_id)
    return ids


def header_for(context: Context | None = None) -> str | None:
    """The ``toolcall`` header value for the call being executed in ``context``, if this process
    saw that call; None everywhere else."""
    for call_id in _candidates(context):
        record = REGISTRY.get(call_id)
        if record is not None and record.span_context is not None:
            return carried.encode(record.outcome, call_id, record.span_context)
    return None


class ToolCallsPropagator(TextMapPropagator):
    """Carries a streamed call's outcome in the ``toolcall`` header (docs/TELEMETRY.md section 8)."""

    def inject(
        self, carrier: CarrierT, context: Context | None = None, setter: Setter[CarrierT] = default_setter
    ) -> None:
        try:
            value = header_for(context)
            if value is not None:
                setter.set(carrier, carried.HEADER, value)
        except Exception as exc:
            report("_linking.propagator.inject", exc)

    def extract(
        self, carrier: CarrierT, context: Context | None = None, getter: Getter[CarrierT] = default_getter
    ) -> Context:
        if context is None:
            context = otel_context.get_current()
        try:
            values = getter.get(carrier, carried.HEADER)
            # One value or none: a repeated header is no statement about one call.
            call = carried.decode(values[0]) if values and len(values) == 1 else None
        except Exception as exc:
            report("_linking.propagator.extract", exc)
            return context
        return carried.carrying(call, context) if call is not None else context

    @property
    def fields(self) -> set[str]:
        return {carried.HEADER}


def install_propagator() -> None:
    """Add the ``toolcalls`` propagator to the global one (what ``OTEL_PROPAGATORS`` would do);
    once, however often it is called."""
    # Here, not at the top: importing opentelemetry.propagate loads the configured propagators,
    # this class among them (OTEL_PROPAGATORS=...,toolcalls), which must be defined by then.
    from opentelemetry import propagate

    textmap = propagate.get_global_textmap()
    if carried.HEADER in textmap.fields:
        return
    propagate.set_global_textmap(CompositePropagator([textmap, ToolCallsPropagator()]))
