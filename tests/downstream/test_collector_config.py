"""Structure of collector-config/: pipelines, sampling, rules, compose stack and dashboard.

Nothing here runs a collector or Docker. What it proves: every component a pipeline names is
defined, connectors bridge pipelines, every attribute, metric and label the configuration names is
one the package emits (names from ``otel_toolcalls._core.names``, the contract's constants), the rules
use the contract's aborted-ratio expression, and every file the compose stack mounts exists.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_toolcalls._core import names as N

ROOT = Path(__file__).resolve().parents[2]
CC = ROOT / "collector-config"
RULES = CC / "prometheus" / "rules"
DOCS = ROOT / "docs" / "observability.md"
DASHBOARD = CC / "grafana" / "dashboards" / "toolcalls.json"

COLLECTOR_CONFIGS = ["otelcol.yaml", "agent.yaml", "gateway.yaml"]
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


# --------------------------------------------------------------------------- names the package emits

ATTRIBUTES = {
    value
    for key, value in vars(N).items()
    if key.isupper()
    and isinstance(value, str)
    and not key.startswith(("METRIC_", "EVENT_"))
    and re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", value)
}
OUTCOMES = {N.COMPLETED, N.ABORTED, N.UNKNOWN}
ABORT_REASONS = set(N.ABORT_REASONS)

# Instrument kind, unit and attributes of every metric (contract section 4 and 7).
_PM = (N.GEN_AI_PROVIDER_NAME, N.GEN_AI_REQUEST_MODEL)
_PMT = (*_PM, N.GEN_AI_TOOL_NAME)
# The conventions' attributes of the inference metrics (metric_attributes.gen_ai).
_INFERENCE = (
    N.GEN_AI_OPERATION_NAME,
    *_PM,
    N.GEN_AI_RESPONSE_MODEL,
    N.SERVER_ADDRESS,
    N.SERVER_PORT,
)
_TOKENS = (*_INFERENCE, N.GEN_AI_TOKEN_MODALITY)
METRICS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    N.METRIC_TOOLCALL_CALLS: (
        "counter",
        "{call}",
        (*_PMT, N.TOOLCALL_OUTCOME, N.TOOLCALL_ABORT_REASON, N.ERROR_TYPE),
    ),
    N.METRIC_TOOLCALL_DURATION: (
        "histogram",
        "s",
        (*_PMT, N.TOOLCALL_OUTCOME, N.TOOLCALL_ABORT_REASON, N.ERROR_TYPE),
    ),
    N.METRIC_TOOLCALL_ARGUMENTS_SIZE: ("histogram", "By", (*_PMT, N.TOOLCALL_OUTCOME)),
    N.METRIC_TOOLCALL_ARGUMENTS_DELTAS: ("histogram", "{delta}", (*_PMT, N.TOOLCALL_OUTCOME)),
    N.METRIC_EXECUTE_TOOL_DURATION: (
        "histogram",
        "s",
        (N.GEN_AI_TOOL_NAME, N.TOOLCALL_OUTCOME, N.ERROR_TYPE),
    ),
    N.METRIC_TIME_TO_FIRST_CHUNK: ("histogram", "s", _INFERENCE),
    N.METRIC_INFERENCE_DURATION: ("histogram", "s", (*_INFERENCE, N.ERROR_TYPE)),
    N.METRIC_OPERATION_DURATION: ("histogram", "s", (*_INFERENCE, N.ERROR_TYPE)),
    N.METRIC_USAGE_INPUT_TOKENS: ("counter", "{token}", _TOKENS),
    N.METRIC_USAGE_OUTPUT_TOKENS: ("counter", "{token}", _TOKENS),
    N.METRIC_USAGE_CACHE_READ_INPUT_TOKENS: ("counter", "{token}", _TOKENS),
    N.METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS: ("counter", "{token}", _TOKENS),
    N.METRIC_USAGE_REASONING_OUTPUT_TOKENS: ("counter", "{token}", _TOKENS),
    N.METRIC_TOOLCALL_REPLAYED_ABORTED: ("counter", "{call}", _PMT),
    N.METRIC_TOOLCALL_STREAM_BUFFERED: ("counter", "{stream}", _PM),
    N.METRIC_TOOLCALL_INTERNAL_ERRORS: ("counter", "{error}", (N.ERROR_SITE, N.ERROR_TYPE)),
}
_UNIT_SUFFIX = {"s": "_seconds", "By": "_bytes"}


def label(attribute: str) -> str:
    return attribute.replace(".", "_")


def prometheus_names(metric: str) -> list[str]:
    """The series names Prometheus shows for an OTel metric (unit suffix, _total, histogram parts)."""
    kind, unit, _ = METRICS[metric]
    base = label(metric) + ("" if unit.startswith("{") else _UNIT_SUFFIX[unit])
    if kind == "counter":
        return [base + "_total"]
    return [base + part for part in ("_bucket", "_sum", "_count")]


# Prometheus series name -> the labels it may carry.
PROM_METRICS: dict[str, set[str]] = {
    name: {label(a) for a in attrs} | {"job", "instance"} | ({"le"} if name.endswith("_bucket") else set())
    for metric, (_, _, attrs) in METRICS.items()
    for name in prometheus_names(metric)
}
SPANMETRICS_BUILTIN = {"service_name", "span_name", "span_kind", "status_code", "collector_instance_id"}


def spanmetrics_labels() -> set[str]:
    conf = yaml.safe_load((CC / "otelcol.yaml").read_text())
    dims = {label(d["name"]) for d in conf["connectors"]["spanmetrics"]["dimensions"]}
    return dims | SPANMETRICS_BUILTIN | {"job", "instance"}


def spanmetrics_metrics() -> dict[str, set[str]]:
    labels = spanmetrics_labels()
    return {
        "traces_span_metrics_calls_total": labels,
        "traces_span_metrics_duration_seconds_bucket": labels | {"le"},
        "traces_span_metrics_duration_seconds_sum": labels,
        "traces_span_metrics_duration_seconds_count": labels,
    }


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


# --------------------------------------------------------------------------- a small PromQL reader

PROMQL_KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool",
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values",
    "group", "inf", "nan",
}  # fmt: skip
_LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^{}]*)\}")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
_TOKEN = re.compile(r"\d+(\.\d+)?([eE][-+]?\d+)?|[a-zA-Z_:][a-zA-Z0-9_:]*|.", re.S)


def parse_promql(
    expr: str,
) -> tuple[list[tuple[str | None, list[tuple[str, str, str]]]], list[str], list[str]]:
    """-> (selectors as (metric or None, [(label, op, value)]), metric names, grouping labels)."""
    selectors: list[tuple[str | None, list[tuple[str, str, str]]]] = []
    grouping: list[str] = []
    for match in _LABEL_LIST.finditer(expr):
        grouping += [x.strip() for x in match.group(2).split(",") if x.strip()]
    rest = _LABEL_LIST.sub(" ", expr)

    def take(m: re.Match[str]) -> str:
        body = m.group(2)
        matchers = [(x.group(1), x.group(2), x.group(3)) for x in _MATCHER.finditer(body)]
        assert _MATCHER.sub("", body).strip() == "", f"unparsed matchers {body!r} in {expr!r}"
        selectors.append((m.group(1), matchers))
        return f" {m.group(1) or ''} "

    rest = _SELECTOR.sub(take, rest)
    rest = re.sub(r"\[[^\]]*\]", " ", rest)  # ranges, subqueries
    rest = re.sub(r"\boffset\s+-?\d+[smhdwy]", " ", rest)
    rest = re.sub(r'"(?:[^"\\]|\\.)*"', " ", rest)  # string arguments
    names: list[str] = []
    tokens = [m.group(0) for m in _TOKEN.finditer(rest) if not m.group(0).isspace()]
    for i, token in enumerate(tokens):
        if not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", token) or token.lower() in PROMQL_KEYWORDS:
            continue
        if i + 1 < len(tokens) and tokens[i + 1] == "(":
            continue  # a function
        names.append(token)
    return selectors, names, grouping


def promql_problems(expr: str, metrics: dict[str, set[str]]) -> list[str]:
    """Every metric an expression reads must be known, with labels it carries and values emitted."""
    problems: list[str] = []
    selectors, names, grouping = parse_promql(expr)
    used: set[str] = set()
    for name in names:
        if name not in metrics:
            problems.append(f"unknown metric {name}")
        else:
            used.add(name)
    allowed = set().union(*(metrics[n] for n in used)) if used else set()
    for metric, matchers in selectors:
        labels_ok = metrics.get(metric or "", allowed)
        for name, op, value in matchers:
            if name not in labels_ok:
                problems.append(f"label {name} not on {metric}")
            if op in ("=", "!=") and value:
                if name == label(N.TOOLCALL_OUTCOME) and value not in OUTCOMES:
                    problems.append(f"unknown outcome {value}")
                if name == label(N.TOOLCALL_ABORT_REASON) and value not in ABORT_REASONS:
                    problems.append(f"unknown abort reason {value}")
    for name in grouping:
        if name not in allowed:
            problems.append(f"grouping label {name} not on {sorted(used)}")
    return problems


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


# --------------------------------------------------------------------------- collector configurations


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((CC / name).read_text())


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


# --------------------------------------------------------------------------- scalar types
#
# No collector binary is reachable here, so the configurations are not started: every scalar in
# them is checked against the type the pinned otelcol-contrib declares for its key, read from the
# collector's source. Since v0.108 the collector's confmap decoder runs mapstructure with
# WeaklyTypedInput off (opentelemetry-collector confmap/internal/decoder.go): a YAML int where the
# struct has a string (the loadbalancing exporter's `port: 4317`) refuses to start the collector.
#
# The table below names every key path the configurations use (component ids reduced to their type,
# pipeline ids to `*`, list items to `[]`), the Go type of its field and where that field is
# declared. A key missing from the table fails the test: adding a key means reading its type.
# Where it was read: opentelemetry-collector at tag v0.150.0 (the pinned otelcol-contrib's core);
# opentelemetry-collector-contrib from the newest stored snapshot of each file (the contrib repository
# was too large to bring here at the tag): loadbalancingexporter config.go / config.schema.yaml
# (97b5b3ee), tailsamplingprocessor config.schema.yaml (0dc06853), spanmetricsconnector config.go
# (5c0bb011) and config.schema.yaml (52a2d83a), prometheusexporter config.schema.yaml (fc12527a),
# pkg/resourcetotelemetry config.schema.yaml (9ed90f38). Older stored versions read alongside
# (loadbalancing 2021 and 2023, tail sampling, prometheus) give the same type for every key used
# here: DNSResolver.Port has been a string since the field was added (contrib #1650, 2020).

PINNED_COLLECTOR = "0.150.0"
_CORE = "opentelemetry-collector"
_CONTRIB = "opentelemetry-collector-contrib"
_ADDR = "config/confignet/confignet.go AddrConfig.Endpoint"
_GRPC_SERVER = f"{_CORE} config/configgrpc/configgrpc.go ServerConfig.NetAddr, {_ADDR}"
_HTTP_SERVER = f"{_CORE} config/confighttp/server.go ServerConfig.NetAddr, {_ADDR}"
_LIMITER = f"{_CORE} internal/memorylimiter/config.go Config"
_BATCH = f"{_CORE} processor/batchprocessor/config.go Config"
_OTLP = f"{_CORE} exporter/otlpexporter/config.go Config"
_OTLP_CLIENT = f"{_OTLP}.ClientConfig, config/configgrpc/configgrpc.go ClientConfig.Endpoint"
_TLS = f"{_CORE} config/configtls/configtls.go ClientConfig.Insecure"
_TIMEOUT = f"{_OTLP}.TimeoutConfig, exporter/exporterhelper/internal/timeout_sender.go"
_LB = f"{_CONTRIB} exporter/loadbalancingexporter/config.go"
_RETRY = f"{_CORE} config/configretry/backoff.go BackOffConfig"
_QUEUE = f"{_CORE} exporter/exporterhelper/internal/queuebatch/config.go Config"
_QUEUE_BATCH = f"{_CORE} exporter/exporterhelper/internal/queuebatch/config.go BatchConfig"
# request.SizerType unmarshals from text (exporterhelper/internal/request/sizer.go UnmarshalText).
_SIZER = "exporter/exporterhelper/internal/request/sizer.go SizerType"
_FILE_STORAGE = f"{_CONTRIB} extension/storage/filestorage/config.go Config"
_TAIL = f"{_CONTRIB} processor/tailsamplingprocessor/config.go"
_SPANMETRICS = f"{_CONTRIB} connector/spanmetricsconnector/config.go"
_PROMETHEUS = f"{_CONTRIB} exporter/prometheusexporter/config.go Config"
_RESOURCE = f"{_CONTRIB} pkg/resourcetotelemetry/resource_to_telemetry.go Settings.Enabled"
_PIPELINES = f"{_CORE} service/pipelines/config.go PipelineConfig, component/identifiable.go ID"
_TAIL_POLICY = "processors.tail_sampling.policies[]"
_READER = "service.telemetry.metrics.readers[].pull.exporter.prometheus"
_OTELCONF = "opentelemetry-go-contrib otelconf/v0.3.0/generated_config.go"

# key path -> (Go type of its field, where the field is declared)
SCALAR_TYPES: dict[str, tuple[str, str]] = {
    "receivers.otlp.protocols.grpc.endpoint": ("string", _GRPC_SERVER),
    "receivers.otlp.protocols.http.endpoint": ("string", _HTTP_SERVER),
    "processors.memory_limiter.check_interval": ("time.Duration", f"{_LIMITER}.CheckInterval"),
    "processors.memory_limiter.limit_percentage": ("uint32", f"{_LIMITER}.MemoryLimitPercentage"),
    "processors.memory_limiter.spike_limit_percentage": ("uint32", f"{_LIMITER}.MemorySpikePercentage"),
    "processors.batch.send_batch_size": ("uint32", f"{_BATCH}.SendBatchSize"),
    "processors.batch.timeout": ("time.Duration", f"{_BATCH}.Timeout"),
    "processors.tail_sampling.decision_wait": ("time.Duration", f"{_TAIL} Config.DecisionWait"),
    "processors.tail_sampling.num_traces": ("uint64", f"{_TAIL} Config.NumTraces"),
    "processors.tail_sampling.expected_new_traces_per_sec": (
        "uint64",
        f"{_TAIL} Config.ExpectedNewTracesPerSec",
    ),
    "processors.tail_sampling.decision_cache.sampled_cache_size": ("int", f"{_TAIL} DecisionCacheConfig"),
    # Since contrib v0.141.0 (read at v0.161.0, the gateways' build).
    "processors.tail_sampling.drop_pending_traces_on_shutdown": (
        "bool",
        f"{_TAIL} Config.DropPendingTracesOnShutdown",
    ),
    f"{_TAIL_POLICY}.name": ("string", f"{_TAIL} sharedPolicyCfg.Name"),
    f"{_TAIL_POLICY}.type": ("PolicyType", f"{_TAIL} sharedPolicyCfg.Type (type PolicyType string)"),
    f"{_TAIL_POLICY}.string_attribute.key": ("string", f"{_TAIL} StringAttributeCfg.Key"),
    f"{_TAIL_POLICY}.string_attribute.values": ("[]string", f"{_TAIL} StringAttributeCfg.Values"),
    f"{_TAIL_POLICY}.status_code.status_codes": ("[]string", f"{_TAIL} StatusCodeCfg.StatusCodes"),
    f"{_TAIL_POLICY}.probabilistic.sampling_percentage": ("float64", f"{_TAIL} ProbabilisticCfg"),
    "connectors.spanmetrics.namespace": ("string", f"{_SPANMETRICS} Config.Namespace"),
    "connectors.spanmetrics.histogram.unit": ("metrics.Unit", f"{_SPANMETRICS} HistogramConfig.Unit"),
    "connectors.spanmetrics.histogram.explicit.buckets": ("[]time.Duration", f"{_SPANMETRICS} Explicit"),
    "connectors.spanmetrics.dimensions[].name": ("string", f"{_SPANMETRICS} Dimension.Name"),
    "connectors.spanmetrics.aggregation_cardinality_limit": ("int", f"{_SPANMETRICS} Config"),
    "connectors.spanmetrics.metrics_flush_interval": ("time.Duration", f"{_SPANMETRICS} Config"),
    "exporters.otlp.endpoint": ("string", _OTLP_CLIENT),
    "exporters.otlp.tls.insecure": ("bool", _TLS),
    "exporters.prometheus.endpoint": ("string", f"{_PROMETHEUS} (squashed) {_HTTP_SERVER}"),
    "exporters.prometheus.enable_open_metrics": ("bool", f"{_PROMETHEUS}.EnableOpenMetrics"),
    "exporters.prometheus.resource_to_telemetry_conversion.enabled": ("bool", _RESOURCE),
    "exporters.loadbalancing.routing_key": ("string", f"{_LB} Config.RoutingKey"),
    "exporters.loadbalancing.protocol.otlp.timeout": ("time.Duration", f"{_LB} Protocol.OTLP, {_TIMEOUT}"),
    "exporters.loadbalancing.protocol.otlp.tls.insecure": ("bool", f"{_LB} Protocol.OTLP, {_TLS}"),
    "exporters.loadbalancing.protocol.otlp.retry_on_failure.enabled": (
        "bool",
        f"{_LB} Protocol.OTLP, {_RETRY}.Enabled",
    ),
    "exporters.loadbalancing.protocol.otlp.retry_on_failure.initial_interval": (
        "time.Duration",
        f"{_LB} Protocol.OTLP, {_RETRY}.InitialInterval",
    ),
    "exporters.loadbalancing.protocol.otlp.retry_on_failure.max_interval": (
        "time.Duration",
        f"{_LB} Protocol.OTLP, {_RETRY}.MaxInterval",
    ),
    "exporters.loadbalancing.protocol.otlp.retry_on_failure.max_elapsed_time": (
        "time.Duration",
        f"{_LB} Protocol.OTLP, {_RETRY}.MaxElapsedTime",
    ),
    "exporters.loadbalancing.protocol.otlp.sending_queue.enabled": (
        "bool",
        f"{_LB} Protocol.OTLP, {_QUEUE}.Enabled",
    ),
    "exporters.loadbalancing.protocol.otlp.sending_queue.queue_size": (
        "int64",
        f"{_LB} Protocol.OTLP, {_QUEUE}.QueueSize",
    ),
    "exporters.loadbalancing.sending_queue.enabled": (
        "bool",
        f"{_LB} Config.QueueSettings, {_QUEUE}.Enabled",
    ),
    "exporters.loadbalancing.sending_queue.storage": (
        "component.ID",
        f"{_LB} Config.QueueSettings, {_QUEUE}.StorageID",
    ),
    "exporters.loadbalancing.sending_queue.num_consumers": (
        "int",
        f"{_LB} Config.QueueSettings, {_QUEUE}.NumConsumers",
    ),
    "exporters.loadbalancing.sending_queue.sizer": ("string", f"{_LB} Config.QueueSettings, {_SIZER}"),
    "exporters.loadbalancing.sending_queue.queue_size": (
        "int64",
        f"{_LB} Config.QueueSettings, {_QUEUE}.QueueSize",
    ),
    "exporters.loadbalancing.sending_queue.batch.sizer": ("string", f"{_LB} Config.QueueSettings, {_SIZER}"),
    "exporters.loadbalancing.sending_queue.batch.flush_timeout": (
        "time.Duration",
        f"{_LB} Config.QueueSettings, {_QUEUE_BATCH}.FlushTimeout",
    ),
    "exporters.loadbalancing.sending_queue.batch.min_size": (
        "int64",
        f"{_LB} Config.QueueSettings, {_QUEUE_BATCH}.MinSize",
    ),
    "exporters.loadbalancing.retry_on_failure.enabled": (
        "bool",
        f"{_LB} Config.BackOffConfig, {_RETRY}.Enabled",
    ),
    "exporters.loadbalancing.retry_on_failure.initial_interval": (
        "time.Duration",
        f"{_LB} Config.BackOffConfig, {_RETRY}.InitialInterval",
    ),
    "exporters.loadbalancing.retry_on_failure.max_interval": (
        "time.Duration",
        f"{_LB} Config.BackOffConfig, {_RETRY}.MaxInterval",
    ),
    "exporters.loadbalancing.retry_on_failure.max_elapsed_time": (
        "time.Duration",
        f"{_LB} Config.BackOffConfig, {_RETRY}.MaxElapsedTime",
    ),
    "exporters.otlp.sending_queue.enabled": ("bool", f"{_OTLP}.QueueConfig, {_QUEUE}.Enabled"),
    "exporters.otlp.sending_queue.storage": ("component.ID", f"{_OTLP}.QueueConfig, {_QUEUE}.StorageID"),
    "extensions.file_storage.directory": ("string", f"{_FILE_STORAGE}.Directory"),
    "extensions.file_storage.create_directory": ("bool", f"{_FILE_STORAGE}.CreateDirectory"),
    "service.extensions": ("[]component.ID", f"{_CORE} service/extensions/config.go Config"),
    "exporters.loadbalancing.resolver.dns.hostname": ("string", f"{_LB} DNSResolver.Hostname"),
    "exporters.loadbalancing.resolver.dns.port": ("string", f"{_LB} DNSResolver.Port"),
    "service.pipelines.*.receivers": ("[]component.ID", _PIPELINES),
    "service.pipelines.*.processors": ("[]component.ID", _PIPELINES),
    "service.pipelines.*.exporters": ("[]component.ID", _PIPELINES),
    # The Collector's own metrics reader: go.opentelemetry.io/contrib/otelconf v0.25.0 (the core's
    # at v0.161.0), v0.3.0/generated_config.go Prometheus.
    f"{_READER}.host": ("string", f"{_OTELCONF} Prometheus.Host"),
    f"{_READER}.port": ("int", f"{_OTELCONF} Prometheus.Port"),
    f"{_READER}.without_type_suffix": ("bool", f"{_OTELCONF} Prometheus.WithoutTypeSuffix"),
}

COMPONENT_SECTIONS = {"receivers", "processors", "exporters", "connectors", "extensions"}

# What gopkg.in/yaml.v3 (the collector's YAML parser, YAML 1.2 core schema) makes of a plain
# scalar. PyYAML resolves YAML 1.1 (`yes`, `on`, `0755`...), so the check reads the scalar text.
_YAML_NULL = re.compile(r"~|null|Null|NULL|")
_YAML_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_YAML_INT = re.compile(r"[-+]?(0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)")
_YAML_FLOAT = re.compile(
    r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)
_GO_DURATION = re.compile(r"[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)")
_COMPONENT_ID = re.compile(r"[a-zA-Z][0-9a-zA-Z_]{0,62}(/[^\s/]+)?")


def yaml12(node: yaml.Node) -> Any:
    """The value the collector's parser gives a scalar node: quoted is a string; plain is resolved."""
    text = node.value
    if getattr(node, "style", None) in ("'", '"', "|", ">"):
        return text
    if _YAML_NULL.fullmatch(text):
        return None
    if _YAML_BOOL.fullmatch(text):
        return text.lower() == "true"
    if _YAML_INT.fullmatch(text):
        return int(text.replace("_", ""), 0) if not re.fullmatch(r"[-+]?0[0-7_]+", text) else int(text)
    if _YAML_FLOAT.fullmatch(text):
        return float(text.replace("_", ""))
    return text


def key_path(parents: list[str], key: str) -> str:
    if len(parents) == 1 and parents[0] in COMPONENT_SECTIONS:
        key = key.split("/", 1)[0]  # `otlp/jaeger` is an otlp exporter
    elif parents == ["service", "pipelines"]:
        key = "*"
    return ".".join([*parents, key])


def scalars(node: yaml.Node, parents: list[str]) -> Iterator[tuple[str, Any]]:
    """(key path, value) of every scalar; a list of scalars is one value, a list of maps is walked."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield from scalars(value, key_path(parents, key.value).split("."))
    elif isinstance(node, yaml.SequenceNode):
        if all(isinstance(item, yaml.ScalarNode) for item in node.value):
            yield ".".join(parents), [yaml12(item) for item in node.value]
        else:
            *head, last = parents
            for item in node.value:
                yield from scalars(item, [*head, last + "[]"])
    else:
        yield ".".join(parents), yaml12(node)


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


# What the decoder turns into each Go type without weak typing, and without losing meaning: it also
# takes an int for a time.Duration (as nanoseconds: `timeout: 5` is 5 ns) and a comma-separated
# string for a []string; both are refused here.
ACCEPTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "PolicyType": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: _is_int(v, -(2**63), 2**63 - 1),
    "uint32": lambda v: _is_int(v, 0, 2**32 - 1),
    "uint64": lambda v: _is_int(v, 0, 2**64 - 1),
    "int64": lambda v: _is_int(v, -(2**63), 2**63 - 1),
    "float64": lambda v: isinstance(v, float) or _is_int(v, -(2**63), 2**63 - 1),
    "time.Duration": lambda v: isinstance(v, str) and bool(_GO_DURATION.fullmatch(v)),
    "metrics.Unit": lambda v: isinstance(v, str) and v.lower() in {"ms", "s"},
    "[]string": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "[]time.Duration": lambda v: isinstance(v, list) and all(ACCEPTS["time.Duration"](x) for x in v),
    "component.ID": lambda v: isinstance(v, str) and bool(_COMPONENT_ID.fullmatch(v)),
    "[]component.ID": lambda v: (
        isinstance(v, list) and all(isinstance(x, str) and _COMPONENT_ID.fullmatch(x) for x in v)
    ),
}


def scalar_problems(text: str) -> list[str]:
    problems = []
    for path, value in scalars(yaml.compose(text), []):
        if path not in SCALAR_TYPES:
            problems.append(f"{path}: not in SCALAR_TYPES (read its type in the collector's source)")
            continue
        go_type, source = SCALAR_TYPES[path]
        if not ACCEPTS[go_type](value):
            problems.append(f"{path}: {value!r} is not a {go_type} ({source})")
    return problems


def test_the_compose_stack_runs_the_collector_the_types_were_read_for() -> None:
    image = compose()["services"]["otelcol"]["image"]
    assert image == f"otel/opentelemetry-collector-contrib:{PINNED_COLLECTOR}", (
        "a new collector version: read SCALAR_TYPES' fields again at its tag, then move PINNED_COLLECTOR"
    )
    assert set(ACCEPTS) == {go_type for go_type, _ in SCALAR_TYPES.values()}


@pytest.mark.parametrize("name", COLLECTOR_CONFIGS)
def test_every_scalar_has_the_type_the_pinned_collector_declares(name: str) -> None:
    assert scalar_problems((CC / name).read_text()) == []


def test_every_key_of_the_type_table_is_used() -> None:
    used = {
        path for name in COLLECTOR_CONFIGS for path, _ in scalars(yaml.compose((CC / name).read_text()), [])
    }
    assert set(SCALAR_TYPES) - used == set()


@pytest.mark.parametrize(
    ("name", "before", "after", "problem"),
    [
        # The agent as it was: the collector refuses to start on it.
        ("agent.yaml", 'port: "4317"', "port: 4317", "loadbalancing.resolver.dns.port: 4317 is not a string"),
        ("otelcol.yaml", "timeout: 5s", "timeout: 5", "processors.batch.timeout: 5 is not a time.Duration"),
        ("gateway.yaml", "insecure: true", "insecure: yes", "otlp.tls.insecure: 'yes' is not a bool"),
        ("otelcol.yaml", "num_traces: 100000", 'num_traces: "1"', "num_traces: '1' is not a uint64"),
        ("otelcol.yaml", "limit_percentage: 80", "limit_percentage: -8", "limit_percentage: -8 is not"),
        ("otelcol.yaml", "unit: s", "unit: seconds", "histogram.unit: 'seconds' is not a metrics.Unit"),
        ("otelcol.yaml", "check_interval: 1s", "check_intervals: 1s", "check_intervals: not in SCALAR_TYPES"),
    ],
)
def test_the_type_check_catches_what_the_collector_would_refuse(
    name: str, before: str, after: str, problem: str
) -> None:
    text = (CC / name).read_text()
    assert before in text
    problems = scalar_problems(text.replace(before, after, 1))
    assert len(problems) == 1 and problem in problems[0], problems


# --------------------------------------------------------------------------- Prometheus rules


def rules(file: str) -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load((RULES / file).read_text())["groups"] for r in g["rules"]]


def metrics_for(file: str) -> dict[str, set[str]]:
    base = spanmetrics_metrics() if "spanmetrics" in file else dict(PROM_METRICS)
    recorded: dict[str, set[str]] = {}
    for rule in rules(file):
        if "record" in rule:
            _, _, grouping = parse_promql(rule["expr"])
            recorded[rule["record"]] = set(grouping)
    return {**base, **recorded}


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


# --------------------------------------------------------------------------- docker-compose


def compose() -> dict[str, Any]:
    return yaml.safe_load((CC / "docker-compose.yaml").read_text())


def mounts(service: dict[str, Any]) -> list[tuple[Path, str]]:
    out = []
    for volume in service.get("volumes") or []:
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            out.append(((CC / source).resolve(), target))
    return out


def host_path(service: dict[str, Any], container_path: str) -> Path:
    """Where a path inside the container comes from on the host, through the bind mounts."""
    for source, target in sorted(mounts(service), key=lambda m: -len(m[1])):
        if container_path == target or container_path.startswith(target.rstrip("/") + "/"):
            return source / container_path[len(target) :].lstrip("/")
    raise AssertionError(f"{container_path} is not mounted from this folder")


def test_compose_has_the_whole_stack_with_pinned_images() -> None:
    services = compose()["services"]
    images = {name: s["image"] for name, s in services.items()}
    assert set(services) == {"otelcol", "jaeger", "tempo", "prometheus", "grafana"}
    assert images["otelcol"].startswith("otel/opentelemetry-collector-contrib:")
    assert re.match(r"jaegertracing/jaeger:2\.", images["jaeger"])  # Jaeger v2
    for name, image in images.items():
        tag = image.rsplit(":", 1)[-1]
        assert ":" in image and tag != "latest", f"{name}: pin the image version"
    # The release docs/GUIDE.md names for the compose stack.
    version = tuple(int(x) for x in images["otelcol"].rsplit(":", 1)[1].split("."))
    assert version >= (0, 144, 0)
    for name, service in services.items():
        for dep in service.get("depends_on") or []:
            assert dep in services, f"{name} depends on unknown service {dep}"


def test_every_file_the_compose_stack_mounts_exists() -> None:
    for name, service in compose()["services"].items():
        for source, _ in mounts(service):
            assert source.exists(), f"{name} mounts missing {source}"
            assert CC.resolve() in source.parents or source == CC.resolve()


def test_every_config_a_container_reads_comes_from_this_folder() -> None:
    services = compose()["services"]
    otelcol = services["otelcol"]
    config = next(a.split("=", 1)[1] for a in otelcol["command"] if a.startswith("--config="))
    assert host_path(otelcol, config).resolve() == (CC / "otelcol.yaml").resolve()
    tempo = services["tempo"]
    config = next(a.split("=", 1)[1] for a in tempo["command"] if a.startswith("-config.file="))
    assert host_path(tempo, config).resolve() == (CC / "tempo" / "tempo.yaml").resolve()
    prometheus = services["prometheus"]
    config = next(a.split("=", 1)[1] for a in prometheus["command"] if a.startswith("--config.file="))
    prom_host = host_path(prometheus, config)
    assert prom_host.is_file()
    for rule_file in yaml.safe_load(prom_host.read_text())["rule_files"]:
        assert host_path(prometheus, rule_file).is_file(), rule_file
    grafana = services["grafana"]
    providers = yaml.safe_load(
        host_path(grafana, "/etc/grafana/provisioning/dashboards/dashboards.yaml").read_text()
    )["providers"]
    folders = [host_path(grafana, p["options"]["path"]) for p in providers]
    assert any((folder / DASHBOARD.name).resolve() == DASHBOARD.resolve() for folder in folders)
    assert host_path(grafana, "/etc/grafana/provisioning/datasources/datasources.yaml").is_file()


def _host_port(endpoint: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(endpoint if "://" in endpoint else "//" + endpoint)
    assert parsed.hostname and parsed.port, endpoint
    return parsed.hostname, parsed.port


def test_the_services_point_at_each_other() -> None:
    services = compose()["services"]
    conf = load("otelcol.yaml")
    # The collector's trace exporters reach the jaeger and tempo services on their OTLP port.
    assert _host_port(conf["exporters"]["otlp/jaeger"]["endpoint"]) == ("jaeger", 4317)
    assert _host_port(conf["exporters"]["otlp/tempo"]["endpoint"]) == ("tempo", 4317)
    tempo = yaml.safe_load((CC / "tempo" / "tempo.yaml").read_text())
    assert tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":4317")
    # Prometheus scrapes the collector's prometheus exporter.
    prom = yaml.safe_load((CC / "prometheus" / "prometheus.yml").read_text())
    targets = [t for job in prom["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    exporter_port = _host_port(conf["exporters"]["prometheus"]["endpoint"])[1]
    assert ("otelcol", exporter_port) in [_host_port(t) for t in targets]
    # Grafana's data sources are the compose services.
    sources = yaml.safe_load((CC / "grafana/provisioning/datasources/datasources.yaml").read_text())[
        "datasources"
    ]
    by_type = {s["type"]: s for s in sources}
    assert set(by_type) >= {"prometheus", "tempo", "jaeger"}
    assert _host_port(by_type["prometheus"]["url"]) == ("prometheus", 9090)
    assert _host_port(by_type["tempo"]["url"]) == ("tempo", tempo["server"]["http_listen_port"])
    assert _host_port(by_type["jaeger"]["url"]) == ("jaeger", 16686)
    for source in sources:
        assert _host_port(source["url"])[0] in services


# --------------------------------------------------------------------------- Grafana dashboard


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


# --------------------------------------------------------------------------- docs


def github_anchor(heading: str) -> str:
    text = re.sub(r"[`*_]", lambda m: m.group(0) if m.group(0) == "_" else "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def test_docs_cover_jaeger_tempo_alerts_and_collector_layouts() -> None:
    docs = DOCS.read_text()
    headings = re.findall(r"^#+\s+(.+?)\s*$", docs, re.M)
    assert "See it in Jaeger / Tempo" in headings
    assert "Alert on aborted calls" in headings
    assert any("gateway" in h.lower() for h in headings)
    assert "toolcall.outcome=aborted" in docs
    assert "docker compose" in docs
