"""The process's own span drops are counted where docs/GUIDE.md ("When the span queue is full")
says: with ``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED=true`` the SDK's BatchSpanProcessor counts
every span it drops for a full queue in ``otel.sdk.processor.span.processed`` with
``error.type="queue_full"``. The package counts nothing itself: the SDK's count is exact, and the
package could only count by reading the processor's private queue.

Real turns (the openai SDK from the fake server) exported by the standard OTLP/HTTP exporter
through a BatchSpanProcessor with a queue of 4 to a local receiver that holds the first export
request until the test lets it go: while it is held, the queue fills and the next turn's spans are
dropped. No timing: the test waits on the receiver having the request in hand.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otlp_receiver import Receiver, running

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls._core.telemetry import REGISTRY
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, request, tool_call_script

QUEUE = 4
PROCESSED = "otel.sdk.processor.span.processed"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running(hold_first=True) as held:
        yield held


def queue_full_drops(reader: InMemoryMetricReader) -> dict[str, int]:
    """The SDK's processed-span counter, by error.type ("" for the spans handed to the exporter)."""
    counts: dict[str, int] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in (m for m in scope.metrics if m.name == PROCESSED):
                for point in metric.data.data_points:
                    key = str(point.attributes.get("error.type", ""))
                    counts[key] = counts.get(key, 0) + int(point.value)
    return counts


def turn(fake: FakeProvider, client: openai.OpenAI, prefix: str, calls: int) -> None:
    args = '{"location": "Zürich"}'
    fake.enqueue(
        tool_call_script(
            [ToolCall(name="get_weather", id=f"{prefix}_{i}", arguments=args) for i in range(calls)]
        )
    )
    for _ in client.chat.completions.create(**request()):
        pass


def test_the_sdk_counts_every_span_of_the_package_it_drops(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED", "true")
    reader = InMemoryMetricReader()
    sdk_meters = MeterProvider(metric_readers=[reader])
    tracer_provider = TracerProvider()
    # A batch of one: the worker wakes at the first span and hangs on the held request.
    processor = BatchSpanProcessor(
        OTLPSpanExporter(endpoint=receiver.endpoint, timeout=60),
        max_queue_size=QUEUE,
        max_export_batch_size=1,
        schedule_delay_millis=60_000,
        meter_provider=sdk_meters,
    )
    tracer_provider.add_span_processor(processor)
    instrumentor = ToolCallsInstrumentor()
    REGISTRY.clear()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider())
    try:
        with FakeProvider() as fake:
            client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="x", max_retries=0)
            turn(fake, client, "a", 2)  # 3 spans: one in the held request, two queued
            assert receiver.holding.wait(30), "the exporter never reached the receiver"
            turn(fake, client, "b", 8)  # 9 spans: two fit the queue, seven are dropped
        receiver.release.set()
        assert tracer_provider.force_flush(30_000)
        counts = queue_full_drops(reader)
    finally:
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        sdk_meters.shutdown()
        REGISTRY.clear()
    produced = 3 + 9
    received = len(receiver.spans())
    assert received == 1 + QUEUE
    assert counts.get("queue_full", 0) == produced - received == 7
    assert counts.get("", 0) == received
