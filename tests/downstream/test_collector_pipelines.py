"""collector-config/'s Collector configurations (single collector, agent, gateway): every component a
pipeline names is defined, connectors bridge pipelines, sampling keeps aborted calls, agents route
by trace id. Nothing here runs a collector (test_collector_validate.py does)."""

from __future__ import annotations

from typing import Any

import pytest
from collector_kit import ATTRIBUTES, CC, COLLECTOR_CONFIGS, OUTCOMES, load

from otel_toolcalls._core import names as N


def component_type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


@pytest.mark.parametrize("name", COLLECTOR_CONFIGS)
def test_every_component_a_pipeline_names_is_defined_and_every_defined_one_is_used(name: str) -> None:
    conf = load(name)
    pipelines = conf["service"]["pipelines"]
    connectors = set(conf.get("connectors") or {})
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    for pipeline_id, pipeline in pipelines.items():
        assert component_type(pipeline_id) in {"traces", "metrics", "logs"}, pipeline_id
        assert pipeline.get("receivers") and pipeline.get("exporters"), pipeline_id
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind) or []:
                defined = set(conf.get(kind) or {}) | (connectors if kind != "processors" else set())
                assert component in defined, f"{name}: {pipeline_id} names undefined {kind[:-1]} {component}"
                used[kind].add(component)
    for kind in ("receivers", "processors", "exporters"):
        unused = set(conf.get(kind) or {}) - used[kind]
        assert not unused, f"{name}: {kind} defined but in no pipeline: {unused}"


@pytest.mark.parametrize("name", COLLECTOR_CONFIGS)
def test_connectors_are_exporter_of_one_pipeline_and_receiver_of_another(name: str) -> None:
    conf = load(name)
    pipelines = conf["service"]["pipelines"]
    for connector in conf.get("connectors") or {}:
        exporting = {p for p, v in pipelines.items() if connector in (v.get("exporters") or [])}
        receiving = {p for p, v in pipelines.items() if connector in (v.get("receivers") or [])}
        assert exporting and receiving, f"{connector}: exported by {exporting}, received by {receiving}"
        assert not exporting & receiving, connector
        if component_type(connector) == "spanmetrics":
            assert all(component_type(p) == "traces" for p in exporting)
            assert all(component_type(p) == "metrics" for p in receiving)


@pytest.mark.parametrize("name", COLLECTOR_CONFIGS)
def test_memory_limiter_comes_first_and_batching_happens(name: str) -> None:
    conf = load(name)
    for pipeline_id, pipeline in conf["service"]["pipelines"].items():
        processors = pipeline.get("processors") or []
        assert processors and processors[0] == "memory_limiter", pipeline_id
        if "tail_sampling" in processors:
            assert processors.index("batch") > processors.index("tail_sampling"), pipeline_id
    assert any("batch" in (p.get("processors") or []) for p in conf["service"]["pipelines"].values())


@pytest.mark.parametrize("name", ["otelcol.yaml", "agent.yaml", "gateway.yaml"])
def test_otlp_receiver_listens_on_the_standard_ports(name: str) -> None:
    protocols = load(name)["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")


@pytest.mark.parametrize("name", ["otelcol.yaml", "gateway.yaml"])
def test_traces_go_to_jaeger_and_tempo_with_the_old_otlp_exporter_names(name: str) -> None:
    conf = load(name)
    text = (CC / name).read_text()
    # `otlp`, not `otlp_grpc` (v0.144+): Jaeger v2.12 (Collector v0.139) knows only the old name.
    assert {"otlp/jaeger", "otlp/tempo"} <= set(conf["exporters"])
    assert "v0.144" in text and "`otlp_grpc`" in text  # the newer name is documented where it matters
    sampled = [
        p for p in conf["service"]["pipelines"].values() if "tail_sampling" in (p.get("processors") or [])
    ]
    assert len(sampled) == 1
    assert set(sampled[0]["exporters"]) == {"otlp/jaeger", "otlp/tempo"}


@pytest.mark.parametrize("name", ["otelcol.yaml", "gateway.yaml"])
def test_spanmetrics_sees_every_span_and_records_the_package_dimensions_in_seconds(name: str) -> None:
    conf = load(name)
    spanmetrics = conf["connectors"]["spanmetrics"]
    assert spanmetrics["histogram"]["unit"] == "s"
    dims = [d["name"] for d in spanmetrics["dimensions"]]
    assert len(dims) == len(set(dims))
    required = {
        N.GEN_AI_PROVIDER_NAME,
        N.GEN_AI_REQUEST_MODEL,
        N.GEN_AI_TOOL_NAME,
        N.TOOLCALL_OUTCOME,
        N.TOOLCALL_ABORT_REASON,
    }
    assert required <= set(dims)
    unknown = set(dims) - ATTRIBUTES
    assert not unknown, f"spanmetrics dimensions the package never emits: {unknown}"
    # Unsampled: no pipeline feeding spanmetrics samples.
    for pipeline_id, pipeline in conf["service"]["pipelines"].items():
        if "spanmetrics" in (pipeline.get("exporters") or []):
            samplers = [p for p in pipeline.get("processors") or [] if "sampl" in p]
            assert not samplers, f"{pipeline_id} samples before spanmetrics: rates would be wrong"
    # Its metrics leave through the prometheus exporter, together with the app's OTLP metrics.
    metrics = [
        p for p in conf["service"]["pipelines"].values() if "spanmetrics" in (p.get("receivers") or [])
    ]
    assert metrics and all("prometheus" in p["exporters"] and "otlp" in p["receivers"] for p in metrics)


def _policies(policies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flattens and / composite sub-policies."""
    out: list[dict[str, Any]] = []
    for policy in policies:
        out.append(policy)
        for nested in ("and", "composite"):
            sub = (policy.get(nested) or {}).get(f"{nested}_sub_policy") or []
            out += _policies(sub)
    return out


@pytest.mark.parametrize("name", ["otelcol.yaml", "gateway.yaml"])
def test_tail_sampling_keeps_aborted_calls_and_errors_plus_a_baseline(name: str) -> None:
    policies = _policies(load(name)["processors"]["tail_sampling"]["policies"])
    kinds = {p["type"] for p in policies}
    keeps_aborted = [
        p
        for p in policies
        if p["type"] == "string_attribute"
        and p["string_attribute"]["key"] == N.TOOLCALL_OUTCOME
        and N.ABORTED in p["string_attribute"]["values"]
        and not p["string_attribute"].get("invert_match", False)
    ]
    assert keeps_aborted
    assert any(p["type"] == "status_code" and "ERROR" in p["status_code"]["status_codes"] for p in policies)
    baseline = [p for p in policies if p["type"] == "probabilistic"]
    assert baseline and 0 < baseline[0]["probabilistic"]["sampling_percentage"] < 100
    assert kinds <= {
        "string_attribute",
        "status_code",
        "probabilistic",
        "numeric_attribute",
        "and",
        "composite",
    }
    for policy in policies:
        for kind in ("string_attribute", "numeric_attribute", "boolean_attribute"):
            if kind in policy:
                assert policy[kind]["key"] in ATTRIBUTES, policy
                if policy[kind]["key"] == N.TOOLCALL_OUTCOME:
                    assert set(policy[kind]["values"]) <= OUTCOMES


def test_agents_route_spans_by_trace_id_to_the_gateways() -> None:
    agent = load("agent.yaml")
    lb = agent["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    assert "otlp" in lb["protocol"]
    assert len(lb["resolver"]) == 1 and next(iter(lb["resolver"])) in {
        "dns",
        "static",
        "k8s",
        "aws_cloud_map",
    }
    traces = [p for i, p in agent["service"]["pipelines"].items() if component_type(i) == "traces"]
    assert traces and all(p["exporters"] == ["loadbalancing"] for p in traces)
    # Agents never sample: a trace's spans are spread over agents; the gateway decides.
    assert "tail_sampling" not in (agent.get("processors") or {})
    assert "tail_sampling" in load("gateway.yaml")["processors"]
    # The agents' destination is the gateway's OTLP port (a string: the exporter declares it one).
    assert lb["resolver"].get("dns", {}).get("port", "4317") == "4317"


def test_gateway_and_single_collector_sample_and_count_alike() -> None:
    single, gateway = load("otelcol.yaml"), load("gateway.yaml")
    # The gateway runs the repo's build (contrib v0.161.0): otelcol.yaml runs on Jaeger 2.12
    # (v0.139), which knows neither the shutdown setting nor needs the gateway's metrics reader.
    tail = dict(gateway["processors"]["tail_sampling"])
    assert tail.pop("drop_pending_traces_on_shutdown") is False
    assert single["processors"]["tail_sampling"] == tail
    assert single["connectors"] == gateway["connectors"]
    service = dict(gateway["service"])
    (reader,) = service.pop("telemetry")["metrics"]["readers"]
    assert reader["pull"]["exporter"]["prometheus"]["without_type_suffix"] is False
    assert single["service"] == service
