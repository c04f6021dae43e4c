"""collector-config/grafana's dashboard: its queries read only known metrics and labels, it covers
the issue's panels, and it links to the aborted traces in Tempo and Jaeger."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

import yaml
from collector_kit import CC, DASHBOARD, metrics_for, promql_problems

from otel_toolcalls._core import names as N


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def all_panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for panel in panels:
        out.append(panel)
        out += all_panels(panel.get("panels") or [])
    return out


def test_dashboard_queries_read_only_known_metrics_and_labels() -> None:
    known = metrics_for("toolcalls.rules.yaml")
    known["ALERTS"] = {"alertname", "alertstate", "severity", "source"}
    board = dashboard()
    exprs = [t["expr"] for p in all_panels(board["panels"]) for t in p.get("targets") or [] if "expr" in t]
    exprs += [a["expr"] for a in board["annotations"]["list"] if "expr" in a]
    assert len(exprs) >= 15
    for expr in exprs:
        expr = expr.replace("$__rate_interval", "5m")
        problems = promql_problems(expr, known)
        assert not problems, f"{expr}: {problems}"
    for variable in board["templating"]["list"]:
        metric, lab = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["definition"]).groups()
        assert metric in known and lab in known[metric]


def test_dashboard_covers_what_the_issue_asks_for() -> None:
    board = dashboard()
    exprs = " ".join(t["expr"] for p in all_panels(board["panels"]) for t in p.get("targets") or [])
    for needle in (
        "reason:toolcall_aborted:ratio_rate5m",  # aborted ratio by reason
        "sum by (gen_ai_tool_name, toolcall_outcome) (rate(toolcall_calls_total",  # by tool and outcome
        "toolcall_arguments_size_bytes_bucket",
        "toolcall_arguments_deltas_bucket",
        "toolcall_duration_seconds_bucket",
        "gen_ai_client_inference_time_to_first_chunk_seconds_bucket",
        "gen_ai_client_inference_duration_seconds_bucket",  # inference duration (issue 15)
        "gen_ai_client_inference_usage_input_tokens_total",  # token usage
        "gen_ai_client_inference_usage_output_tokens_total",
    ):
        assert needle in exprs, needle
    sources = yaml.safe_load((CC / "grafana/provisioning/datasources/datasources.yaml").read_text())[
        "datasources"
    ]
    uids = {s["uid"] for s in sources}
    for panel in all_panels(board["panels"]):
        if "datasource" in panel:
            assert panel["datasource"]["uid"] in uids


def test_dashboard_links_to_aborted_traces_in_tempo_and_jaeger() -> None:
    board = dashboard()
    links = [link["url"] for link in board["links"]]
    tempo = [u for u in links if "%22tempo%22" in u]
    jaeger_grafana = [u for u in links if u.startswith("/explore") and "%22jaeger%22" in u]
    jaeger_ui = [u for u in links if ":16686/search" in u]
    assert tempo and jaeger_grafana and jaeger_ui
    panes = json.loads(urllib.parse.unquote(tempo[0].split("panes=", 1)[1]))
    query = panes["a"]["queries"][0]
    assert query["datasource"]["uid"] == "tempo" and query["queryType"] == "traceql"
    attribute, value = re.fullmatch(r'\{ span\.([\w.]+) = "(\w+)" \}', query["query"]).groups()
    assert (attribute, value) == (N.TOOLCALL_OUTCOME, N.ABORTED)
    panes = json.loads(urllib.parse.unquote(jaeger_grafana[0].split("panes=", 1)[1]))
    assert panes["a"]["queries"][0]["tags"] == f"{N.TOOLCALL_OUTCOME}={N.ABORTED}"
    tags = urllib.parse.parse_qs(urllib.parse.urlsplit(jaeger_ui[0]).query)["tags"][0]
    assert json.loads(tags) == {N.TOOLCALL_OUTCOME: N.ABORTED}
    # The aborted-ratio panels carry the same links, one click from the number to the traces.
    ratio_panels = [p for p in all_panels(board["panels"]) if p["title"].startswith("Aborted ratio")]
    assert len(ratio_panels) == 4
    assert all(p["fieldConfig"]["defaults"].get("links") for p in ratio_panels)
