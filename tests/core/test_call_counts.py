"""``toolcall.calls`` and the token usage counters are counted in the package and reported by
observable counters (_counts): the same series, with the synchronous counter's semantics, whatever
instrument() is called again."""

from __future__ import annotations

import openai
import pytest
from opentelemetry.sdk.metrics.export import AggregationTemporality, Sum

from otel_toolcalls._core import names as n
from otel_toolcalls.testing.openai_chat import USAGE, WEATHER, events_for, request, script_for


def run_one(fake) -> None:
    fake.enqueue(script_for(events_for([WEATHER]), usage=USAGE))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    for _ in client.chat.completions.create(**request(stream_options={"include_usage": True})):
        pass


def metric_named(telemetry, name):
    data = telemetry.reader.get_metrics_data()
    found = [
        m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics if m.name == name
    ]
    assert len(found) == 1, found
    return found[0]


def tokens(telemetry, name):
    return sum(point.value for point in metric_named(telemetry, name).data.data_points)


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        (n.METRIC_TOOLCALL_CALLS, "{call}"),
        (n.METRIC_USAGE_INPUT_TOKENS, "{token}"),
        (n.METRIC_USAGE_OUTPUT_TOKENS, "{token}"),
    ],
)
def test_a_monotonic_cumulative_sum_like_the_synchronous_counter(telemetry, instrument, fake, name, unit):
    run_one(fake)
    metric = metric_named(telemetry, name)
    assert metric.unit == unit
    assert isinstance(metric.data, Sum)
    assert metric.data.is_monotonic
    assert metric.data.aggregation_temporality == AggregationTemporality.CUMULATIVE


def test_totals_add_up_across_streams(telemetry, instrument, fake):
    run_one(fake)
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    first = tokens(telemetry, n.METRIC_USAGE_INPUT_TOKENS), tokens(telemetry, n.METRIC_USAGE_OUTPUT_TOKENS)
    assert first == (USAGE["prompt_tokens"], USAGE["completion_tokens"])
    run_one(fake)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}
    assert tokens(telemetry, n.METRIC_USAGE_INPUT_TOKENS) == 2 * first[0]
    assert tokens(telemetry, n.METRIC_USAGE_OUTPUT_TOKENS) == 2 * first[1]
    # The token series carry the conventions' attributes, as the synchronous counter's did.
    (point,) = metric_named(telemetry, n.METRIC_USAGE_INPUT_TOKENS).data.data_points
    assert point.attributes[n.GEN_AI_TOKEN_MODALITY] == n.TOKEN_MODALITY_UNKNOWN
    assert point.attributes[n.GEN_AI_PROVIDER_NAME] == "openai"


def test_instrumenting_again_on_the_same_provider_counts_on(telemetry, instrument, fake):
    # The SDK hands the second instrumentation the meter and the instrument the first one made (a
    # synchronous counter's aggregation, here the first counts): the totals go on, none is lost.
    run_one(fake)
    instrument()  # uninstrument, then instrument again on the same providers
    run_one(fake)
    assert telemetry.calls_by_outcome() == {("completed", None): 2}
    assert tokens(telemetry, n.METRIC_USAGE_INPUT_TOKENS) == 2 * USAGE["prompt_tokens"]


def test_counts_are_still_reported_after_uninstrument(telemetry, instrument, fake):
    instrumentor = instrument()
    run_one(fake)
    instrumentor.uninstrument()
    run_one(fake)  # not instrumented: not counted
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
