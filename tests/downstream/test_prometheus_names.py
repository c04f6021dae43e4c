"""The Prometheus names the package's metrics get (from ``otel_toolcalls._core.names``, the
contract's constants), and the small PromQL reader the rules and dashboard checks use: it must catch
a name the package does not emit (tests/helpers/collector_kit.py)."""

from __future__ import annotations

from collector_kit import METRICS, PROM_METRICS, promql_problems

from otel_toolcalls._core import names as N


def test_the_metric_table_covers_every_metric_the_package_defines() -> None:
    defined = {v for k, v in vars(N).items() if k.startswith("METRIC_")}
    assert defined == set(METRICS)


def test_metric_names_follow_the_contract() -> None:
    # The names TELEMETRY.md section 4 spells out for Prometheus.
    for name in (
        "toolcall_calls_total",
        "toolcall_duration_seconds_bucket",
        "toolcall_arguments_size_bytes_bucket",
        "toolcall_arguments_deltas_bucket",
        "gen_ai_client_inference_time_to_first_chunk_seconds_count",
        "toolcall_replayed_aborted_total",
        "toolcall_stream_buffered_total",
        "toolcall_internal_errors_total",
    ):
        assert name in PROM_METRICS


def test_the_promql_reader_catches_unknown_names() -> None:
    good = 'sum by (gen_ai_tool_name) (rate(toolcall_calls_total{toolcall_outcome="aborted"}[5m]))'
    assert promql_problems(good, PROM_METRICS) == []
    assert promql_problems("sum(rate(toolcall_call_total[5m]))", PROM_METRICS) == [
        "unknown metric toolcall_call_total"
    ]
    assert promql_problems('rate(toolcall_calls_total{outcome="aborted"}[5m])', PROM_METRICS) == [
        "label outcome not on toolcall_calls_total"
    ]
    assert promql_problems('rate(toolcall_calls_total{toolcall_outcome="failed"}[5m])', PROM_METRICS) == [
        "unknown outcome failed"
    ]
    assert promql_problems(
        'rate(toolcall_calls_total{toolcall_outcome="aborted", toolcall_abort_reason="timeout"}[5m])',
        PROM_METRICS,
    ) == ["unknown abort reason timeout"]
    assert promql_problems(
        "sum by (gen_ai_tool_name) (rate(gen_ai_client_inference_time_to_first_chunk_seconds_count[5m]))",
        PROM_METRICS,
    ) == [
        "grouping label gen_ai_tool_name not on ['gen_ai_client_inference_time_to_first_chunk_seconds_count']"
    ]
