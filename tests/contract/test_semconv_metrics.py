"""The conventions' inference metrics, recorded for every stream the package sees, from real SDKs.

``gen_ai.client.inference.duration``, ``.time_to_first_chunk`` and the ``.usage.*`` token
counters, with the attributes, units, instruments and advised buckets of the conventions' files
(semconv_names). Also when the SDK traces itself (anthropic 2.x), when inference spans are off, and
not when the instrumentation that made the adopted span records the metric itself.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
import semconv_names as sc
from google import genai
from google.genai import types
from opentelemetry.sdk.metrics.export import Histogram, Sum
from opentelemetry.trace import SpanKind

from otel_toolcalls._core import metrics as _metrics
from otel_toolcalls._linking import peer_spans
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as claude
from otel_toolcalls.testing import gemini as g
from otel_toolcalls.testing import openai_chat as chat


def metric(telemetry: Any, name: str) -> Any:
    data = telemetry.reader.get_metrics_data()
    found = [
        m
        for rm in (data.resource_metrics if data else [])
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == name
    ]
    return found[0] if found else None


def one_point(telemetry: Any, name: str) -> Any:
    points = telemetry.points(name)
    assert len(points) == 1, (name, points)
    return points[0]


@pytest.fixture
def oai(fake: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)


def chat_with_usage(fake: FakeProvider, oai: Any) -> None:
    fake.enqueue(chat.script_for(chat.events_for([chat.WEATHER]), usage=chat.USAGE))
    list(oai.chat.completions.create(**chat.request(stream_options={"include_usage": True})))


def expected_attributes(fake: FakeProvider, **extra: Any) -> dict[str, Any]:
    return {
        sc.OPERATION_NAME: "chat",
        sc.PROVIDER_NAME: "openai",
        sc.REQUEST_MODEL: chat.MODEL,
        sc.RESPONSE_MODEL: chat.MODEL,
        sc.SERVER_ADDRESS: "127.0.0.1",
        sc.SERVER_PORT: fake.port,
        **extra,
    }


def test_instruments_units_and_buckets(telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any) -> None:
    chat_with_usage(fake, oai)
    for name in (sc.INFERENCE_DURATION, sc.TIME_TO_FIRST_CHUNK, sc.USAGE_INPUT, sc.USAGE_OUTPUT):
        kind, unit = sc.METRICS[name]
        found = metric(telemetry, name)
        assert found is not None, name
        assert found.unit == unit
        if kind == "counter":
            assert isinstance(found.data, Sum) and found.data.is_monotonic
        else:
            assert isinstance(found.data, Histogram)
            assert tuple(found.data.data_points[0].explicit_bounds) == sc.SECONDS_BUCKETS


def test_duration_ttfc_and_tokens_carry_the_conventions_attributes(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any
) -> None:
    chat_with_usage(fake, oai)
    attributes = expected_attributes(fake)
    assert dict(one_point(telemetry, sc.INFERENCE_DURATION).attributes) == attributes
    assert dict(one_point(telemetry, sc.TIME_TO_FIRST_CHUNK).attributes) == attributes
    tokens = {**attributes, sc.TOKEN_MODALITY: sc.TOKEN_MODALITY_UNKNOWN}
    for name, value in (
        (sc.USAGE_INPUT, 19),
        (sc.USAGE_OUTPUT, 10),
        (sc.USAGE_CACHE_READ, 6),
        (sc.USAGE_REASONING, 4),
    ):
        point = one_point(telemetry, name)
        assert (point.value, dict(point.attributes)) == (value, tokens)
    assert telemetry.points(sc.USAGE_CACHE_WRITE) == []  # OpenAI chat reported none
    assert telemetry.points(sc.OPERATION_DURATION) == []  # not for inference operations


def test_duration_is_the_span_duration(telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any) -> None:
    chat_with_usage(fake, oai)
    span = telemetry.one("chat ")
    assert span.end_time is not None and span.start_time is not None
    assert one_point(telemetry, sc.INFERENCE_DURATION).sum == pytest.approx(
        (span.end_time - span.start_time) / 1e9, abs=1e-9
    )


def test_failed_stream_duration_has_error_type(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any
) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER], cut_after=3))
    with pytest.raises(openai.APIError):
        list(oai.chat.completions.create(**chat.request()))
    span_error = (telemetry.one("chat ").attributes or {})[sc.ERROR_TYPE]
    point = one_point(telemetry, sc.INFERENCE_DURATION)
    assert point.attributes[sc.ERROR_TYPE] == span_error
    assert telemetry.points(sc.USAGE_INPUT) == []  # cut: no usage, and no 0 either


def test_no_usage_no_token_points(telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any) -> None:
    fake.enqueue(chat.tool_call_script([chat.WEATHER]))
    list(oai.chat.completions.create(**chat.request()))
    assert one_point(telemetry, sc.INFERENCE_DURATION).count == 1
    assert telemetry.points(sc.USAGE_INPUT) == [] and telemetry.points(sc.USAGE_OUTPUT) == []


def test_recorded_with_inference_spans_off(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any
) -> None:
    instrument(inference_spans=False)
    chat_with_usage(fake, oai)
    assert [s for s in telemetry.spans() if s.name.startswith("chat ")] == []
    assert dict(one_point(telemetry, sc.INFERENCE_DURATION).attributes) == expected_attributes(fake)
    assert one_point(telemetry, sc.USAGE_OUTPUT).value == 10


# -- anthropic, with and without its own tracing -----------------------------------------------------


@pytest.mark.parametrize("sdk_tracing", [True, False], ids=["sdk-traces", "package-span"])
def test_anthropic_metrics(telemetry: Any, instrument: Any, fake: FakeProvider, sdk_tracing: bool) -> None:
    option: Any = {"tracer_provider": telemetry.tracer_provider} if sdk_tracing else False
    c = anthropic.Anthropic(api_key="k", base_url=fake.base_url, max_retries=0, open_telemetry=option)
    fake.enqueue(claude.tool_use_script([claude.WEATHER]))
    list(
        c.messages.create(
            model=claude.MODEL, max_tokens=64, messages=[{"role": "user", "content": "w"}], stream=True
        )
    )
    inference = [s for s in telemetry.spans() if s.kind is SpanKind.CLIENT]
    assert len(inference) == 1  # the SDK's span or the package's, never both
    scope = inference[0].instrumentation_scope.name
    assert (scope == "com.anthropic.sdk.python") is sdk_tracing
    attributes = {
        sc.OPERATION_NAME: "chat",
        sc.PROVIDER_NAME: "anthropic",
        sc.REQUEST_MODEL: claude.MODEL,
        sc.RESPONSE_MODEL: claude.MODEL,
        sc.SERVER_ADDRESS: "127.0.0.1",
        sc.SERVER_PORT: fake.port,
    }
    assert dict(one_point(telemetry, sc.INFERENCE_DURATION).attributes) == attributes
    assert one_point(telemetry, sc.TIME_TO_FIRST_CHUNK).count == 1
    assert one_point(telemetry, sc.USAGE_INPUT).value == 25
    assert one_point(telemetry, sc.USAGE_OUTPUT).value == 42
    # The stream's cache counts are 0: no point on the cache counters (adding 0 changes no total).
    assert telemetry.points(sc.USAGE_CACHE_READ) == [] and telemetry.points(sc.USAGE_CACHE_WRITE) == []


def test_gemini_operation_name(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fake.base_url))
    fake.enqueue(g.script_for(g.one_part_each([g.whole_call("get_weather", {"city": "Bern"}, "fc_1")])))
    list(client.models.generate_content_stream(model=g.MODEL, contents="w?"))
    point = one_point(telemetry, sc.USAGE_INPUT)
    assert point.attributes[sc.OPERATION_NAME] == "generate_content"
    assert point.attributes[sc.PROVIDER_NAME] == "gcp.gemini"
    assert point.value == 12


# -- an instrumentation that records a metric itself ---------------------------------------------------

SCOPE = "test.instrumentation.recording_duration"


def test_left_to_the_instrumentation_that_records_it(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any, monkeypatch: Any
) -> None:
    monkeypatch.setitem(peer_spans.RECORDED_BY_SCOPE, SCOPE, frozenset({sc.INFERENCE_DURATION}))
    tracer = telemetry.tracer_provider.get_tracer(SCOPE)
    # Another GenAI instrumentation's inference span for this request, current when it is made.
    with tracer.start_as_current_span(
        f"chat {chat.MODEL}", kind=SpanKind.CLIENT, attributes={sc.OPERATION_NAME: "chat"}
    ):
        chat_with_usage(fake, oai)
    assert [s.instrumentation_scope.name for s in telemetry.spans() if s.kind is SpanKind.CLIENT] == [SCOPE]
    assert telemetry.points(sc.INFERENCE_DURATION) == []  # it records that one
    assert one_point(telemetry, sc.USAGE_INPUT).value == 19  # not this one


def test_unknown_instrumentation_span_still_gets_metrics(
    telemetry: Any, instrument: Any, fake: FakeProvider, oai: Any
) -> None:
    tracer = telemetry.tracer_provider.get_tracer("test.instrumentation.spans_only")
    with tracer.start_as_current_span(
        f"chat {chat.MODEL}", kind=SpanKind.CLIENT, attributes={sc.OPERATION_NAME: "chat"}
    ):
        chat_with_usage(fake, oai)
    assert one_point(telemetry, sc.INFERENCE_DURATION).count == 1


def test_package_metric_names_are_the_conventions() -> None:
    from otel_toolcalls._core import names as n

    assert {
        n.METRIC_INFERENCE_DURATION,
        n.METRIC_OPERATION_DURATION,
        n.METRIC_TIME_TO_FIRST_CHUNK,
        n.METRIC_USAGE_INPUT_TOKENS,
        n.METRIC_USAGE_OUTPUT_TOKENS,
        n.METRIC_USAGE_CACHE_READ_INPUT_TOKENS,
        n.METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS,
        n.METRIC_USAGE_REASONING_OUTPUT_TOKENS,
    } == set(sc.METRICS)
    assert _metrics.INFERENCE_SECONDS_BUCKETS == sc.SECONDS_BUCKETS
    assert n.GEN_AI_TOKEN_MODALITY == sc.TOKEN_MODALITY
    assert n.TOKEN_MODALITY_UNKNOWN == sc.TOKEN_MODALITY_UNKNOWN
