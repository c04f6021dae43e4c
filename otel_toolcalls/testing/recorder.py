"""The instrumentor on in-memory exporters for one test, and assertions that tie an agent loop's
behaviour to what the package saw: what the ``toolcalls`` pytest fixture hands a test.

Every assertion names the call id, the tool, the abort reason and the offending span, so a failure
says which turn the loop mishandled without a trace viewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otel_toolcalls._core import names as n
from otel_toolcalls._core.telemetry import REGISTRY
from otel_toolcalls._wiring.instrumentor import ToolCallsInstrumentor

_REFUSED = "otel_toolcalls.IncompleteToolCallError"
_ROLL_BACK = (
    "The call never completed (its reason says why), so its arguments are partial: the loop "
    "must roll the turn back (not execute it, not keep it as an assistant turn, not answer it) and retry."
)


@dataclass(frozen=True)
class CallView:
    """One streamed tool call as its ``tool_call`` span recorded it."""

    id: str | None
    tool: str
    outcome: str
    reason: str | None
    deltas: int
    size: int
    span: ReadableSpan


def describe(span: ReadableSpan) -> str:
    ctx = span.context
    ident = f"span_id={ctx.span_id:016x} trace_id={ctx.trace_id:032x}" if ctx else "no context"
    return f"{span.name!r} ({ident})"


def _describe_call(call: CallView) -> str:
    return (
        f"call span: {describe(call.span)}: {call.outcome} ({call.reason}), "
        f"{call.deltas} argument fragment(s), {call.size} bytes before it ended"
    )


class ToolCalls:
    """``ToolCalls(**settings)`` instruments at once (settings as ``instrument()`` takes them);
    ``close()`` uninstruments and forgets every call."""

    def __init__(self, **settings: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.instrumentor = ToolCallsInstrumentor()
        if self.instrumentor.is_instrumented_by_opentelemetry:
            raise RuntimeError(
                "otel_toolcalls is already instrumented in this process; the toolcalls fixture "
                "instruments for one test with its own exporters: uninstrument first"
            )
        REGISTRY.clear()
        self.instrumentor.instrument(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **settings
        )

    def close(self) -> None:
        if self.instrumentor.is_instrumented_by_opentelemetry:
            self.instrumentor.uninstrument()
        REGISTRY.clear()
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()

    # Accessors.

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    @property
    def calls(self) -> list[CallView]:
        """Every streamed tool call, in the order their spans ended."""
        return [_call_view(s) for s in self.spans() if s.name.startswith(n.TOOL_CALL_SPAN_PREFIX)]

    def call(self, call_id: str) -> CallView:
        found = [c for c in self.calls if c.id == call_id]
        if not found:
            seen = [c.id for c in self.calls]
            raise LookupError(f"no streamed tool call with id {call_id!r} (calls seen: {seen})")
        return found[-1]

    def outcome(self, call_id: str) -> str:
        return self.call(call_id).outcome

    def reason(self, call_id: str) -> str | None:
        return self.call(call_id).reason

    @property
    def aborted(self) -> list[CallView]:
        return [c for c in self.calls if c.outcome == n.ABORTED]

    @property
    def completed(self) -> list[CallView]:
        return [c for c in self.calls if c.outcome == n.COMPLETED]

    @property
    def executions(self) -> list[ReadableSpan]:
        """Execution spans: the package's ``execute_tool`` spans and frameworks' own ones it annotated."""
        return [s for s in self.spans() if _is_execution(s)]

    @property
    def inference_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.kind is SpanKind.CLIENT]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        return [
            point
            for rm in (data.resource_metrics if data else [])
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == metric
            for point in m.data.data_points
        ]

    def counts(self) -> dict[tuple[str, str | None], int]:
        """``toolcall.calls`` by (outcome, abort reason)."""
        counts: dict[tuple[str, str | None], int] = {}
        for point in self.points(n.METRIC_TOOLCALL_CALLS):
            key = (point.attributes[n.TOOLCALL_OUTCOME], point.attributes.get(n.TOOLCALL_ABORT_REASON))
            counts[key] = counts.get(key, 0) + point.value
        return counts

    # Assertions.

    def assert_no_aborted_call_executed(self) -> None:
        """No execution span ran a tool for a call whose stream broke (a strict refusal, whose
        tool body never ran, does not count)."""
        problems = []
        for span in self.executions:
            call = self._aborted_call_of(span)
            if call is None or (span.attributes or {}).get(n.ERROR_TYPE) == _REFUSED:
                continue
            problems.append(
                f"aborted tool call executed: call_id={call.id!r} tool={call.tool!r} reason={call.reason}\n"
                f"  offending span: {describe(span)}\n  {_describe_call(call)}"
            )
        _fail(problems, _ROLL_BACK)

    def assert_no_aborted_call_replayed(self) -> None:
        """No request sent an aborted call back in its history (``toolcall.replayed_aborted``)."""
        problems = []
        for span in self.spans():
            for event in span.events:
                if event.name != n.EVENT_REPLAYED_ABORTED:
                    continue
                attrs = event.attributes or {}
                problems.append(
                    f"aborted tool call replayed: call_id={attrs.get(n.GEN_AI_TOOL_CALL_ID)!r} "
                    f"tool={attrs.get(n.GEN_AI_TOOL_NAME)!r} reason={attrs.get(n.TOOLCALL_ABORT_REASON)}\n"
                    f"  offending span: {describe(span)}: the request carried the call in its history"
                )
        _fail(
            problems,
            "The loop kept a broken turn: it persisted the partial assistant message or answered it "
            "with a tool result, then sent it back. Roll back to the last complete turn instead.",
        )

    def assert_all_completed_calls_linked(self) -> None:
        """Every completed call was executed under its own id: an execution span links to it."""
        problems = []
        executions = self.executions
        for call in self.completed:
            if call.id is None or any(_links_to(span, call.span) for span in executions):
                continue
            same_id = [describe(s) for s in executions if _call_id(s) == call.id]
            problems.append(
                f"completed tool call not linked: call_id={call.id!r} tool={call.tool!r}\n"
                f"  {_describe_call(call)}\n"
                f"  execution spans with this id: {', '.join(same_id) or 'none'}"
            )
        _fail(
            problems,
            "Execute completed calls through otel_toolcalls.execute_tool(call_id, name=...) (or a "
            "framework the package hooks) with the provider's call id, so the span links to its call.",
        )

    def _aborted_call_of(self, span: ReadableSpan) -> CallView | None:
        call_id = _call_id(span)
        matches = [c for c in self.calls if c.id == call_id and call_id is not None]
        if matches:
            return matches[-1] if matches[-1].outcome == n.ABORTED else None
        if (span.attributes or {}).get(n.TOOLCALL_OUTCOME) == n.ABORTED:  # its call span is not ours
            tool = str((span.attributes or {}).get(n.GEN_AI_TOOL_NAME))
            return CallView(call_id, tool, n.ABORTED, None, 0, 0, span)
        return None


def _call_view(span: ReadableSpan) -> CallView:
    attrs = span.attributes or {}
    call_id = attrs.get(n.TOOLCALL_CALL_ID)
    return CallView(
        id=str(call_id) if call_id is not None else None,
        tool=str(attrs.get(n.TOOLCALL_TOOL_NAME, span.name[len(n.TOOL_CALL_SPAN_PREFIX) :])),
        outcome=str(attrs.get(n.TOOLCALL_OUTCOME)),
        reason=attrs.get(n.TOOLCALL_ABORT_REASON),  # type: ignore[arg-type]
        deltas=int(attrs.get(n.TOOLCALL_ARGUMENTS_DELTAS, 0)),  # type: ignore[arg-type]
        size=int(attrs.get(n.TOOLCALL_ARGUMENTS_SIZE, 0)),  # type: ignore[arg-type]
        span=span,
    )


def _call_id(span: ReadableSpan) -> str | None:
    """The call id an execution span carries (the conventions' name, unlike the tool-call span's)."""
    value = (span.attributes or {}).get(n.GEN_AI_TOOL_CALL_ID)
    return str(value) if value is not None else None


def _is_execution(span: ReadableSpan) -> bool:
    attrs = span.attributes or {}
    if span.name.startswith(n.TOOL_CALL_SPAN_PREFIX) or span.kind is SpanKind.CLIENT:
        return False
    return attrs.get(n.GEN_AI_OPERATION_NAME) == n.OPERATION_EXECUTE_TOOL or (
        n.TOOLCALL_OUTCOME in attrs and n.GEN_AI_TOOL_CALL_ID in attrs
    )


def _links_to(span: ReadableSpan, target: ReadableSpan) -> bool:
    ctx = target.context
    return ctx is not None and any(
        link.context.span_id == ctx.span_id and link.context.trace_id == ctx.trace_id for link in span.links
    )


def _fail(problems: list[str], advice: str) -> None:
    if problems:
        raise AssertionError("\n".join([*problems, advice]))
