"""collector-config/prometheus/rules: they read only metrics, labels and values the package emits,
use the contract's aborted-ratio expression, and every alert has a window, a severity and a runbook
section in docs/observability.md. Nothing here runs Prometheus (test_prometheus_rules.py does)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from collector_kit import CC, DOCS, github_anchor, metrics_for, parse_promql, promql_problems, rules

from otel_toolcalls._core import names as N

RULE_FILES = ["toolcalls.rules.yaml", "toolcalls-spanmetrics.rules.yaml"]


ALERTS = {
    "ToolCallsAbortedRateHigh",
    "ToolCallsTruncationRateHigh",
    "ToolCallsStreamErrorsSpiking",
    "ToolCallsReplayedAbortedCalls",
    "ToolCallsBufferedStreamsRising",
}


# Spans carry no count of the package's own failures: on its own metrics only.
OWN_METRICS_ALERTS = {"ToolCallsInternalErrors"}


CONTRACT_ABORTED_RATIO = (
    'sum(rate(toolcall_calls_total{toolcall_outcome="aborted"}[5m])) / sum(rate(toolcall_calls_total[5m]))'
)


@pytest.mark.parametrize("file", RULE_FILES)
def test_rules_read_only_metrics_labels_and_values_the_package_emits(file: str) -> None:
    known = metrics_for(file)
    for rule in rules(file):
        problems = promql_problems(rule["expr"], known)
        assert not problems, f"{rule.get('record') or rule.get('alert')}: {problems}"


@pytest.mark.parametrize("file", RULE_FILES)
def test_every_alert_has_a_window_a_severity_and_a_runbook_section(file: str) -> None:
    docs = DOCS.read_text()
    anchors = {github_anchor(h) for h in re.findall(r"^#+\s+(.+?)\s*$", docs, re.M)}
    alerts = [r for r in rules(file) if "alert" in r]
    assert {a["alert"] for a in alerts} == ALERTS | (set() if "spanmetrics" in file else OWN_METRICS_ALERTS)
    for alert in alerts:
        assert re.fullmatch(r"\d+[smh]", alert["for"]), alert["alert"]
        assert alert["labels"]["severity"] in {"critical", "warning"}
        notes = alert["annotations"]
        assert notes["summary"].strip() and notes["description"].strip()
        url = notes["runbook_url"]
        assert url.startswith(
            "https://github.com/otel-toolcalls/otel-toolcalls/blob/main/docs/observability.md#"
        )
        anchor = url.rsplit("#", 1)[1]
        assert anchor in anchors, f"{alert['alert']}: no heading for #{anchor} in docs/observability.md"
        assert anchor == alert["alert"].lower()
        for ref in re.findall(r"\$labels\.([a-zA-Z_]+)", notes["summary"] + notes["description"]):
            _, _, grouping = parse_promql(alert["expr"])
            assert ref in grouping, (
                f"{alert['alert']} annotation uses $labels.{ref}, not kept by the expression"
            )


def test_truncation_is_lower_severity_than_aborts_and_stream_errors() -> None:
    for file in RULE_FILES:
        severity = {r["alert"]: r["labels"]["severity"] for r in rules(file) if "alert" in r}
        assert severity["ToolCallsTruncationRateHigh"] == "warning"
        assert severity["ToolCallsAbortedRateHigh"] == "critical"
        assert severity["ToolCallsStreamErrorsSpiking"] == "critical"


def _normalize(expr: str) -> str:
    return re.sub(r"\s+", "", expr)


def test_the_aborted_ratio_is_the_contracts_expression() -> None:
    recorded = {r["record"]: r["expr"] for r in rules("toolcalls.rules.yaml") if "record" in r}
    assert _normalize(recorded["toolcall:aborted:ratio_rate5m"]) == _normalize(CONTRACT_ABORTED_RATIO)
    alert = next(r for r in rules("toolcalls.rules.yaml") if r.get("alert") == "ToolCallsAbortedRateHigh")
    assert "toolcall:aborted:ratio_rate5m" in alert["expr"]
    # The recorded ratios by provider / model / tool exist.
    for name in (
        "provider:toolcall_aborted:ratio_rate5m",
        "provider_model:toolcall_aborted:ratio_rate5m",
        "tool:toolcall_aborted:ratio_rate5m",
    ):
        assert name in recorded


def test_spanmetrics_rules_count_tool_call_spans_only() -> None:
    prefix = N.TOOL_CALL_SPAN_PREFIX
    for rule in rules("toolcalls-spanmetrics.rules.yaml"):
        selectors, _, _ = parse_promql(rule["expr"])
        for metric, matchers in selectors:
            if metric != "traces_span_metrics_calls_total":
                continue
            names = {m[0] for m in matchers}
            if "span_kind" in names:  # inference spans (replay / buffered alerts)
                assert ("span_kind", "=", "SPAN_KIND_CLIENT") in matchers
                continue
            span = [m for m in matchers if m[0] == "span_name"]
            assert span == [("span_name", "=~", prefix + ".+")], (
                rule.get("record") or rule.get("alert"),
                matchers,
            )


def test_compose_prometheus_loads_one_rule_variant_only() -> None:
    prom = yaml.safe_load((CC / "prometheus" / "prometheus.yml").read_text())
    assert [Path(f).name for f in prom["rule_files"]] == ["toolcalls.rules.yaml"]
