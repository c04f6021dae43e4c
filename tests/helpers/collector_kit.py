"""What the checks of collector-config/ share (tests/downstream/): its paths, the names the package
emits as Prometheus shows them, a small PromQL reader over them, and the readers of its files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from otel_toolcalls._core import names as N

ROOT = Path(__file__).resolve().parents[2]


CC = ROOT / "collector-config"


RULES = CC / "prometheus" / "rules"


DOCS = ROOT / "docs" / "observability.md"


DASHBOARD = CC / "grafana" / "dashboards" / "toolcalls.json"


COLLECTOR_CONFIGS = ["otelcol.yaml", "agent.yaml", "gateway.yaml"]


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


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((CC / name).read_text())


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


def compose() -> dict[str, Any]:
    return yaml.safe_load((CC / "docker-compose.yaml").read_text())


def github_anchor(heading: str) -> str:
    text = re.sub(r"[`*_]", lambda m: m.group(0) if m.group(0) == "_" else "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")
