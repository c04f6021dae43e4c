"""Traces end to end over OTLP: what the package exports, as a collector receives it.

An in-process OTLP/HTTP receiver (tests/helpers/otlp_receiver.py, on 127.0.0.1) decodes the
``ExportTraceServiceRequest`` protobufs that the standard ``OTLPSpanExporter`` (http/protobuf)
sends. The app streams tool calls through the real ``openai`` SDK from the package's fake provider
and executes them with ``execute_tool``. The test reads the tool-call spans, their attributes, their
parent, and the execution spans' links back out of the received protobufs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otlp_receiver import Receiver, attributes, running, typed

from otel_toolcalls import ToolCallsInstrumentor, execute_tool, tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls._core.telemetry import REGISTRY
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import MODEL, ToolCall, request, tool_call_script

SERVICE = "otlp-e2e-agent"
# Explicit fragments, so that the counts are known: 4 fragments, multi-byte text included.
COMPLETED = ToolCall(
    name="get_weather",
    id="call_ok",
    arguments='{"location": "Zürich", "days": 3}',
    fragments=['{"loca', 'tion": "Zü', 'rich", "da', 'ys": 3}'],
)
CUT = ToolCall(
    name="get_weather",
    id="call_cut",
    arguments='{"location": "Genève", "days": 5}',
    fragments=['{"loca', 'tion": "Ge', 'nève", "da', 'ys": 5}'],
)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running() as server:
        yield server


@contextlib.contextmanager
def exporting_app(endpoint: str) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=10)))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    instrumentor = ToolCallsInstrumentor()
    REGISTRY.clear()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield tracer_provider
    finally:
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()
        REGISTRY.clear()


def test_tool_call_spans_attributes_and_links_arrive_over_otlp(receiver: Receiver) -> None:
    with exporting_app(receiver.endpoint) as tracer_provider, FakeProvider() as fake:
        client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="x", max_retries=0)
        fake.enqueue(tool_call_script([COMPLETED]))
        list(client.chat.completions.create(**request()))
        # Cut after the block start and two fragments: a stream error mid-arguments.
        fake.enqueue(tool_call_script([CUT], cut_after=3))
        with pytest.raises(openai.APIConnectionError):
            list(client.chat.completions.create(**request()))
        assert tool_call_outcome("call_ok") == n.COMPLETED
        assert tool_call_outcome("call_cut") == n.ABORTED
        with execute_tool("call_ok", name="get_weather") as span:
            span.set_attribute("app.step", 1)
        with execute_tool("call_cut", name="get_weather"):
            pass
        assert tracer_provider.force_flush(10_000)

    assert receiver.requests, "nothing arrived over OTLP"
    assert all(ct == "application/x-protobuf" for ct in receiver.content_types)
    received = receiver.spans()
    assert {resource["service.name"] for resource, _, _ in received} == {SERVICE}
    assert {scope for _, scope, _ in received} == {"otel_toolcalls"}
    spans = [span for _, _, span in received]
    by_name: dict[str, list[Span]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    assert sorted(by_name) == [f"chat {MODEL}", "execute_tool get_weather", "tool_call get_weather"]

    # -- the tool-call spans -----------------------------------------------------------------------
    calls = {attributes(s.attributes)[n.TOOLCALL_CALL_ID]: s for s in by_name["tool_call get_weather"]}
    assert set(calls) == {"call_ok", "call_cut"}
    ok, cut = calls["call_ok"], calls["call_cut"]
    for span in (ok, cut):
        attrs = attributes(span.attributes)
        assert span.kind == Span.SpanKind.SPAN_KIND_INTERNAL
        assert attrs[n.GEN_AI_PROVIDER_NAME] == "openai"
        assert attrs[n.TOOLCALL_REQUEST_MODEL] == MODEL
        assert attrs[n.TOOLCALL_TOOL_NAME] == "get_weather"
        assert attrs[n.TOOLCALL_TOOL_TYPE] == "function"
        assert attrs[n.TOOLCALL_INDEX] == 0
        assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs  # content capture is off
        kinds = typed(span.attributes)
        assert kinds[n.TOOLCALL_ARGUMENTS_DELTAS] == "int_value"
        assert kinds[n.TOOLCALL_ARGUMENTS_SIZE] == "int_value"
        assert kinds[n.TOOLCALL_OUTCOME] == "string_value"
        assert span.end_time_unix_nano >= span.start_time_unix_nano > 0

    ok_attrs = attributes(ok.attributes)
    assert ok_attrs[n.TOOLCALL_OUTCOME] == n.COMPLETED
    assert ok_attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == 4
    assert ok_attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len(COMPLETED.arguments.encode("utf-8"))
    assert n.TOOLCALL_ABORT_REASON not in ok_attrs and n.ERROR_TYPE not in ok_attrs
    assert ok.status.code == Status.StatusCode.STATUS_CODE_UNSET

    cut_attrs = attributes(cut.attributes)
    assert cut_attrs[n.TOOLCALL_OUTCOME] == n.ABORTED
    assert cut_attrs[n.TOOLCALL_ABORT_REASON] == n.STREAM_ERROR
    assert cut_attrs[n.ERROR_TYPE] == "openai.APIConnectionError"
    assert cut_attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == 2
    assert cut_attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(CUT.fragments[:2]).encode("utf-8"))
    assert cut.status.code == Status.StatusCode.STATUS_CODE_ERROR
    assert cut.status.message == n.ABORT_DESCRIPTIONS[n.STREAM_ERROR]

    # -- each tool-call span is a child of its inference span ------------------------------------
    inference = by_name[f"chat {MODEL}"]
    assert len(inference) == 2
    for chat in inference:
        assert chat.kind == Span.SpanKind.SPAN_KIND_CLIENT
    parents = {chat.span_id: chat for chat in inference}
    for span in (ok, cut):
        assert span.parent_span_id in parents
        assert parents[span.parent_span_id].trace_id == span.trace_id
    assert ok.parent_span_id != cut.parent_span_id
    cut_chat = attributes(parents[cut.parent_span_id].attributes)
    assert cut_chat[n.TOOLCALL_OUTCOME] == n.ABORTED and cut_chat[n.TOOLCALL_ABORT_REASON] == n.STREAM_ERROR

    # -- execution spans: a link only to the completed call ---------------------------------------
    executions = {
        attributes(s.attributes)[n.GEN_AI_TOOL_CALL_ID]: s for s in by_name["execute_tool get_weather"]
    }
    assert set(executions) == {"call_ok", "call_cut"}
    run_ok, run_cut = executions["call_ok"], executions["call_cut"]
    run_ok_attrs = attributes(run_ok.attributes)
    assert run_ok_attrs[n.GEN_AI_OPERATION_NAME] == n.OPERATION_EXECUTE_TOOL
    assert run_ok_attrs[n.TOOLCALL_OUTCOME] == n.COMPLETED
    assert run_ok_attrs["app.step"] == 1
    assert len(run_ok.links) == 1
    (link,) = run_ok.links
    assert (link.trace_id, link.span_id) == (ok.trace_id, ok.span_id)
    assert attributes(link.attributes) == {n.GEN_AI_ATTRIBUTION_LINK_TYPE: n.LINK_TYPE_CAUSED_BY_GENERATION}
    assert run_ok.trace_id != ok.trace_id  # the link crosses traces: the execution is not its child

    assert attributes(run_cut.attributes)[n.TOOLCALL_OUTCOME] == n.ABORTED
    assert len(run_cut.links) == 0
