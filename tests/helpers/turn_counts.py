"""Spans and metric points the package emits for one streamed turn, by provider and calls per
turn: the figures docs/SCALE.md sizes the pipeline with (kept true by tests/repo/test_scale_doc.py).

A turn is one streamed request through the real SDK from the package's fake server, carrying N tool
calls that all complete, then each call run through ``execute_tool``. Counted from the SDK's
in-memory exporter and a delta-temporality metric reader read once per turn, so the figures are
counts, not timings.

    PYTHONPATH=$PWD .venv/bin/python tests/helpers/turn_counts.py    # prints SCALE.md's table
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anthropic
import openai
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolcalls import ToolCallsInstrumentor, execute_tool
from otel_toolcalls._core.telemetry import REGISTRY
from otel_toolcalls.testing import FakeProvider, openai_chat
from otel_toolcalls.testing import anthropic as claude

CALLS = (0, 1, 2, 8)
PROVIDERS = ("openai", "anthropic")
ARGUMENTS = '{"location": "Zürich", "days": 3}'
DELTA = {Counter: AggregationTemporality.DELTA, Histogram: AggregationTemporality.DELTA}


@dataclass(frozen=True)
class TurnCounts:
    provider: str
    calls: int
    request_spans: int  # the inference span and one tool_call span a call
    execute_spans: int  # the execute_tool spans, one a completed call the app runs
    metric_points: int  # data points of the package's metrics for an interval holding this turn


def _openai_turn(fake: FakeProvider, calls: int, turn: int) -> list[str]:
    ids = [f"call_{turn}_{i}" for i in range(calls)]
    tools = [openai_chat.ToolCall(name="get_weather", id=i, arguments=ARGUMENTS) for i in ids]
    fake.enqueue(
        openai_chat.tool_call_script(tools)
        if calls
        else openai_chat.tool_call_script([], text="Sunny.", finish_reason="stop")
    )
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="x", max_retries=0)
    for _ in client.chat.completions.create(**openai_chat.request()):
        pass
    return ids


def _anthropic_turn(fake: FakeProvider, calls: int, turn: int) -> list[str]:
    ids = [f"toolu_{turn}_{i}" for i in range(calls)]
    blocks: list[claude.Block] = [claude.ToolUse(name="get_weather", id=i, arguments=ARGUMENTS) for i in ids]
    stop = "tool_use" if calls else "end_turn"
    fake.enqueue(claude.tool_use_script(blocks or [claude.Text("Sunny.")], stop_reason=stop))
    client = anthropic.Anthropic(api_key="x", base_url=fake.base_url, max_retries=0)
    messages = [{"role": "user", "content": "Weather in Zürich?"}]
    for _ in client.messages.create(model=claude.MODEL, max_tokens=1024, messages=messages, stream=True):
        pass
    return ids


TURNS: dict[str, Callable[[FakeProvider, int, int], list[str]]] = {
    "openai": _openai_turn,
    "anthropic": _anthropic_turn,
}


def _points(reader: InMemoryMetricReader) -> int:
    data = reader.get_metrics_data()
    if data is None:
        return 0
    return sum(
        len(metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        if scope.scope.name == "otel_toolcalls"
        for metric in scope.metrics
    )


@contextmanager
def instrumented() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader(preferred_temporality=DELTA)
    meter_provider = MeterProvider(metric_readers=[reader])
    instrumentor = ToolCallsInstrumentor()
    REGISTRY.clear()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield spans, reader
    finally:
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()
        REGISTRY.clear()


def measure(provider: str, calls: int, *, turns: int = 3) -> TurnCounts:
    """The counts of the last of ``turns`` identical turns (the first ones warm up what is created
    once a process), each asserted equal to the one before."""
    seen: list[TurnCounts] = []
    with instrumented() as (spans, reader), FakeProvider() as fake:
        for turn in range(turns):
            spans.clear()
            _points(reader)
            ids = TURNS[provider](fake, calls, turn)
            request_spans = len(spans.get_finished_spans())
            for call_id in ids:
                with execute_tool(call_id, name="get_weather"):
                    pass
            execute_spans = len(spans.get_finished_spans()) - request_spans
            seen.append(TurnCounts(provider, calls, request_spans, execute_spans, _points(reader)))
    assert len(set(seen[1:])) == 1, seen
    return seen[-1]


def table() -> list[TurnCounts]:
    return [measure(provider, calls) for provider in PROVIDERS for calls in CALLS]


if __name__ == "__main__":
    for row in table():
        print(json.dumps(row.__dict__))
