"""`make demo`: the real openai SDK against the embedded fake provider, no API key.

Four streamed tool calls: one completes and runs inside `execute_tool`; one is cut by the server
mid-arguments; one is truncated by the token limit; one is closed early by the client. Strict mode
refuses to execute the aborted ones. The trace tree is printed; with OTEL_EXPORTER_OTLP_ENDPOINT set
the spans and metrics are exported over OTLP as well.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import openai
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolcalls import IncompleteToolCallError, ToolCallsInstrumentor, execute_tool, tool_call_outcome
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as fake_anthropic
from otel_toolcalls.testing.openai_chat import WEATHER, ToolCall, events_for, script_for

ARGS = WEATHER.arguments


def providers() -> tuple[TracerProvider, MeterProvider, InMemorySpanExporter, InMemoryMetricReader]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    metrics = InMemoryMetricReader()
    readers: list[MetricReader] = [metrics]
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return tracer_provider, MeterProvider(metric_readers=readers), spans, metrics


def get_weather(location: str, **_: Any) -> str:
    return f"14 days of sun in {location}"


def run_turn(client: openai.OpenAI, consume: Callable[[Any], None]) -> None:
    calls: dict[int, dict[str, str]] = {}
    try:
        # Leaving the `with` block closes the stream, whether or not it was read to the end.
        with client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Zürich?"}], stream=True
        ) as stream:
            consume(_accumulate(stream, calls))
    except openai.APIConnectionError as exc:
        print(f"   stream failed: {type(exc).__name__}")
    for call in calls.values():
        outcome = tool_call_outcome(call["id"])
        print(f"   call {call['id']} ({call['name']}): {outcome}")
        # Execute only what the stream completed; strict mode refuses the rest.
        try:
            with execute_tool(call["id"], name=call["name"], strict=True):
                # Parse once, only now that the call is known complete.
                import json

                print("   ->", get_weather(**json.loads(call["arguments"])))
        except IncompleteToolCallError as exc:
            print(f"   refused: {exc}")


def _accumulate(stream: Any, calls: dict[int, dict[str, str]]) -> Any:
    """Accumulate deltas (concatenation only), as the seed document says."""
    for chunk in stream:
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = tc.id or call["id"]
                call["name"] = (tc.function and tc.function.name) or call["name"]
                call["arguments"] += (tc.function and tc.function.arguments) or ""
        yield chunk


def consume_all(chunks: Any) -> None:
    for _ in chunks:
        pass


def close_after(n: int) -> Callable[[Any], None]:
    def consume(chunks: Any) -> None:
        for i, _ in enumerate(chunks):
            if i + 1 >= n:
                break  # the consumer stops reading; the `with` block then closes the stream

    return consume


def run_anthropic(client: anthropic.Anthropic) -> None:
    """The messages.stream() helper; the SDK traces itself, so its span is the inference span."""
    with client.messages.stream(
        model=fake_anthropic.MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": "Weather in Zürich?"}],
    ) as stream:
        message = stream.get_final_message()
    for block in message.content:
        if block.type != "tool_use":
            continue
        print(f"   call {block.id} ({block.name}): {tool_call_outcome(block.id)}")
        try:
            with execute_tool(block.id, name=block.name, strict=True):
                print("   ->", get_weather(**block.input))
        except IncompleteToolCallError as exc:
            print(f"   refused: {exc}")


def print_tree(spans: Sequence[ReadableSpan]) -> None:
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent and span.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(span)
    names = {s.context.span_id: s.name for s in spans}

    def show(span: ReadableSpan, depth: int) -> None:
        a = span.attributes or {}
        bits = [
            f"{k.split('.')[-1]}={a[k]}"
            for k in (
                "toolcall.outcome",
                "toolcall.abort_reason",
                "toolcall.arguments.deltas",
                "toolcall.arguments.size",
                "toolcall.call.id",
                "gen_ai.tool.call.id",
            )
            if k in a
        ]
        links = [f"link->{names.get(link.context.span_id, '?')}" for link in span.links]
        print("   " * depth + f"- {span.name} [{span.status.status_code.name}] " + " ".join(bits + links))
        for child in by_parent.get(span.context.span_id, []):
            show(child, depth + 1)

    for root in by_parent.get(None, []):
        show(root, 0)


def scenarios(fake: FakeProvider) -> list[tuple[str, Callable[[], None]]]:
    """The demo's turns, each a title and a function that scripts the fake and runs one turn."""
    client = openai.OpenAI(base_url=f"{fake.base_url}/v1", api_key="not-needed", max_retries=0)
    anthropic_client = anthropic.Anthropic(base_url=fake.base_url, api_key="not-needed", max_retries=0)

    def chat(
        call_id: str, consume: Callable[[Any], None], finish_reason: str = "tool_calls", **script: Any
    ) -> Callable[[], None]:
        def run() -> None:
            call = ToolCall(name="get_weather", id=call_id, arguments=ARGS)
            fake.enqueue(script_for(events_for([call], finish_reason=finish_reason), **script))
            run_turn(client, consume)

        return run

    def messages(block_id: str, **script: Any) -> Callable[[], None]:
        def run() -> None:
            block = fake_anthropic.ToolUse(name="get_weather", id=block_id, arguments=ARGS)
            fake.enqueue(fake_anthropic.tool_use_script([block], **script))
            run_anthropic(anthropic_client)

        return run

    return [
        ("completed: the call is executed", chat("call_ok", consume_all, pace=0.002)),
        ("server cut mid-arguments: refused", chat("call_cut", consume_all, cut_after=5)),
        ("truncated by the token limit: refused", chat("call_len", consume_all, finish_reason="length")),
        ("client stops reading early: refused", chat("call_closed", close_after(4), pace=0.002)),
        ("anthropic, completed: the call is executed", messages("toolu_ok", pace=0.002)),
        (
            "anthropic, max_tokens cut the last tool block: refused",
            messages("toolu_max", stop_reason="max_tokens"),
        ),
    ]


def main() -> int:
    tracer_provider, meter_provider, spans, metrics = providers()
    # Global too: the anthropic SDK traces itself through the global provider.
    trace.set_tracer_provider(tracer_provider)
    ToolCallsInstrumentor().instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    with FakeProvider() as fake:
        for title, run in scenarios(fake):
            print(f"\n== {title}")
            run()

    print("\nTrace tree:")
    print_tree(spans.get_finished_spans())
    print("\ntoolcall.calls:")
    data = metrics.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == "toolcall.calls":
                    for p in m.data.data_points:
                        a = p.attributes
                        print(
                            f"   {a.get('gen_ai.provider.name')} {a.get('toolcall.outcome')}"
                            f"/{a.get('toolcall.abort_reason', '-')}: {p.value}"
                        )
    tracer_provider.shutdown()
    meter_provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
