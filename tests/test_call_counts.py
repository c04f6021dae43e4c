"""``toolcall.calls`` is counted in the package and reported by an observable counter (_counts):
the same series, with the synchronous counter's semantics, whatever instrument() is called again."""

from __future__ import annotations

import openai
from opentelemetry.sdk.metrics.export import AggregationTemporality, Sum

from otel_toolcalls import _names as n
from otel_toolcalls.testing.openai_chat import WEATHER, request, tool_call_script


def run_one(fake) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    for _ in client.chat.completions.create(**request()):
        pass


def calls_metric(telemetry):
    data = telemetry.reader.get_metrics_data()
    found = [
        m
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == n.METRIC_CALLS
    ]
    assert len(found) == 1, found
    return found[0]


def test_a_monotonic_cumulative_sum_like_the_synchronous_counter(telemetry, instrument, fake):
    run_one(fake)
    metric = calls_metric(telemetry)
    assert metric.unit == "{call}"
    assert isinstance(metric.data, Sum)
    assert metric.data.is_monotonic
    assert metric.data.aggregation_temporality == AggregationTemporality.CUMULATIVE
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    run_one(fake)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_instrumenting_again_on_the_same_provider_counts_on(telemetry, instrument, fake):
    # The SDK hands the second instrumentation the meter and the instrument the first one made (a
    # synchronous counter's aggregation, here the first counts): the totals go on, none is lost.
    run_one(fake)
    instrument()  # uninstrument, then instrument again on the same providers
    run_one(fake)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_counts_are_still_reported_after_uninstrument(telemetry, instrument, fake):
    instrumentor = instrument()
    run_one(fake)
    instrumentor.uninstrument()
    run_one(fake)  # not instrumented: not counted
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
