"""Every scalar of the Collector configurations has the type the pinned Collector's config structs
declare (read from its sources, cited per key), as YAML 1.2 reads it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from collector_kit import CC, COLLECTOR_CONFIGS, compose

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
