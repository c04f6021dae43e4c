"""The pipeline users run, as real processes on 127.0.0.1: apps -> two agents (the Collector built
from collector-config/go/agent, loadbalancing by trace id, sending queue on disk in the temporary
folder) -> two gateways (the same build: tail sampling, span metrics) -> Jaeger (its Badger
store in the temporary folder, kept across a restart); Debian's prometheus scraping the gateways'
exporter and every Collector's own metrics with the repo's rules loaded (the package's and the
pipeline's), Debian's prometheus-alertmanager paging a webhook in this process.

Each component runs from a copy of the repo's config in a temporary folder, changed only where a
test must: listeners on free 127.0.0.1 ports, the agents' DNS resolver replaced by the two gateways'
static addresses, Tempo left out, the gateways' tail-sampling wait, span-metrics flush and batch
timeout shortened, an `attributes` processor that stamps which gateway exported a span
(`pipeline.gateway`), the Collectors' own metrics on 127.0.0.1 ports, the agents' queue folder in
the temporary folder, their retry interval towards a gateway shortened with the tail-sampling
wait; on request, the gateways' queue towards Jaeger counted in spans and small
(a drop to count) and the agents as they were before their queue went to disk. Used by
tests/downstream/test_pipeline.py and tests/pipeline/load.py.
"""

from __future__ import annotations

import contextlib
import copy
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CC = ROOT / "collector-config"
BIN = ROOT / ".pipeline" / "bin"
APP = Path(__file__).resolve().parent / "app.py"
VENV_BIN = Path(sys.executable).parent
SERVICE = "pipeline-app"
# Hang guards, not performance bounds.
START_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def missing_tools() -> list[str]:
    tools = [str(BIN / "jaeger"), str(BIN / "otelcol-agent"), "prometheus", "prometheus-alertmanager"]
    return [t for t in tools if not (Path(t).exists() if "/" in t else shutil.which(t))]


def http_get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def wait_for(
    what: str, check: Callable[[], bool], deadline_s: float = START_S, proc: Proc | None = None
) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc is not None and proc.popen.poll() is not None:
            raise RuntimeError(f"{what}: exited {proc.popen.returncode}\n{proc.log_tail()}")
        with contextlib.suppress(OSError, ValueError, urllib.error.URLError):
            if check():
                return
        time.sleep(0.1)
    raise TimeoutError(f"{what} not ready in {deadline_s} s" + (f"\n{proc.log_tail()}" if proc else ""))


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def telemetry_reader(port: int) -> dict[str, Any]:
    """The Collector's own metrics on 127.0.0.1 (its default is port 8888 for every process), named
    as the repo's configs name them (`without_type_suffix: false`: the rules read `..._total`)."""
    prometheus = {"host": "127.0.0.1", "port": port, "without_type_suffix": False}
    return {
        "logs": {"level": "warn"},
        "metrics": {
            "level": "detailed",
            "readers": [{"pull": {"exporter": {"prometheus": prometheus}}}],
        },
    }


@dataclass
class Proc:
    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] | None = None
    ready: Callable[[], bool] | None = None
    popen: subprocess.Popen[bytes] = field(init=False)

    def start(self) -> Proc:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        if self.ready is not None:
            wait_for(self.name, self.ready, proc=self)
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
        if self.popen.poll() is not None:
            return
        self.popen.send_signal(sig)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def restart(self, sig: int = signal.SIGTERM) -> None:
        self.stop(sig)
        self.start()

    def cpu_seconds(self) -> float:
        """User + system CPU time of the running process, from /proc (clock ticks)."""
        fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


class Webhook:
    """Alertmanager's webhook receiver: every POSTed body, kept."""

    def __init__(self) -> None:
        received: list[dict[str, Any]] = []
        self.received = received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alert"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self) -> list[dict[str, Any]]:
        return [alert for body in list(self.received) for alert in body.get("alerts", [])]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@dataclass
class Ports:
    jaeger_grpc: int = field(default_factory=free_port)
    jaeger_http: int = field(default_factory=free_port)
    jaeger_query: int = field(default_factory=free_port)
    jaeger_query_grpc: int = field(default_factory=free_port)
    jaeger_metrics: int = field(default_factory=free_port)
    gateway_grpc: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    gateway_prom: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    gateway_metrics: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    agent_grpc: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    agent_http: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    agent_metrics: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    prometheus: int = field(default_factory=free_port)
    alertmanager: int = field(default_factory=free_port)


def gateway_config(
    i: int, ports: Ports, *, decision_wait: str = "2s", queue_spans: int | None = None
) -> dict[str, Any]:
    conf = copy.deepcopy(load_yaml(CC / "gateway.yaml"))
    conf["receivers"]["otlp"]["protocols"] = {"grpc": {"endpoint": f"127.0.0.1:{ports.gateway_grpc[i]}"}}
    conf["processors"]["tail_sampling"]["decision_wait"] = decision_wait
    conf["processors"]["batch"]["timeout"] = "200ms"
    stamp = {"key": "pipeline.gateway", "value": f"gateway-{i}", "action": "insert"}
    conf["processors"]["attributes/gateway"] = {"actions": [stamp]}
    conf["connectors"]["spanmetrics"]["metrics_flush_interval"] = "1s"
    del conf["exporters"]["otlp/tempo"]
    conf["exporters"]["otlp/jaeger"]["endpoint"] = f"127.0.0.1:{ports.jaeger_grpc}"
    if queue_spans is not None:
        # A queue that a Jaeger outage of a few seconds' traffic overflows: a drop to count.
        queue = {"enabled": True, "sizer": "items", "queue_size": queue_spans}
        conf["exporters"]["otlp/jaeger"]["sending_queue"] = queue
        # A request larger than the whole queue is refused at once: a restarted gateway releases
        # its backlog in one batch. Batches well under the queue keep refusals to a full queue.
        batch = conf["processors"]["batch"]
        batch["send_batch_size"] = batch["send_batch_max_size"] = queue_spans // 4
    conf["exporters"]["prometheus"]["endpoint"] = f"127.0.0.1:{ports.gateway_prom[i]}"
    sampled = conf["service"]["pipelines"]["traces/sampled"]
    sampled["exporters"] = ["otlp/jaeger"]
    sampled["processors"] = [*sampled["processors"][:-1], "attributes/gateway", sampled["processors"][-1]]
    conf["service"]["telemetry"] = telemetry_reader(ports.gateway_metrics[i])
    return dict(conf)


def agent_config(i: int, ports: Ports, workdir: Path, *, queue: str = "file") -> dict[str, Any]:
    """queue "file": the repo's agent (its sending queue on disk, in workdir); "memory": the agent
    as it was before issue 42 (a batch processor first, every queue in memory), for load.py."""
    conf = copy.deepcopy(load_yaml(CC / "agent.yaml"))
    conf["extensions"]["file_storage/queue"]["directory"] = str(workdir / f"agent-{i}-queue")
    if queue == "memory":
        del conf["extensions"]
        del conf["service"]["extensions"]
        for name in ("loadbalancing", "otlp/gateway"):
            conf["exporters"][name].pop("sending_queue")
        conf["exporters"]["loadbalancing"].pop("retry_on_failure")
        conf["service"]["pipelines"]["traces"]["processors"] = ["memory_limiter", "batch"]
    conf["receivers"]["otlp"]["protocols"] = {
        "grpc": {"endpoint": f"127.0.0.1:{ports.agent_grpc[i]}"},
        "http": {"endpoint": f"127.0.0.1:{ports.agent_http[i]}"},
    }
    conf["processors"]["batch"]["timeout"] = "200ms"
    # Shortened with the gateways' decision_wait: after a gateway's outage each queued request is
    # retried on its own timer, and a wait shorter than their spread splits a trace in two.
    retry = conf["exporters"]["loadbalancing"]["protocol"]["otlp"]["retry_on_failure"]
    retry.update(initial_interval="200ms", max_interval="500ms")
    gateways = [f"127.0.0.1:{port}" for port in ports.gateway_grpc]
    conf["exporters"]["loadbalancing"]["resolver"] = {"static": {"hostnames": gateways}}
    conf["exporters"]["otlp/gateway"]["endpoint"] = gateways[i]
    conf["service"]["telemetry"] = telemetry_reader(ports.agent_metrics[i])
    return dict(conf)


# The test's copies of the alert rules: `for:` of the aborted-rate alert shortened from 10m (its
# expression, windows and thresholds unchanged), so that the page arrives within the test.
SHORT_FOR = {"ToolCallsAbortedRateHigh": "2s", "OtelcolPipelineDroppingSpans": "2s"}
RULE_FILES = (
    CC / "prometheus" / "rules" / "toolcalls.rules.yaml",
    CC / "prometheus" / "rules" / "toolcalls-spanmetrics.rules.yaml",
    CC / "prometheus" / "pipeline" / "otelcol-pipeline.rules.yaml",
)


def rules_copy(path: Path) -> dict[str, Any]:
    conf = copy.deepcopy(load_yaml(path))
    for group in conf["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            if rule.get("alert") in SHORT_FOR:
                rule["for"] = SHORT_FOR[rule["alert"]]
    return dict(conf)


class Stack:
    """The whole pipeline, started in dependency order; `close` stops what it started."""

    def __init__(
        self,
        workdir: Path,
        *,
        decision_wait: str = "2s",
        monitoring: bool = True,
        agent_queue: str = "file",
        gateway_queue_spans: int | None = None,
        gateway_bin: Path = BIN / "otelcol-agent",
    ) -> None:
        self.dir = workdir
        self.ports = Ports()
        self.procs: dict[str, Proc] = {}
        self.monitoring = monitoring
        self.webhook = Webhook() if monitoring else None
        self.decision_wait = decision_wait
        self.agent_queue = agent_queue
        self.gateway_queue_spans = gateway_queue_spans
        self.gateway_bin = gateway_bin

    # -- configs -------------------------------------------------------------------------------
    def _write(self, name: str, conf: Any) -> Path:
        path = self.dir / name
        path.write_text(yaml.safe_dump(conf, sort_keys=False))
        return path

    def _prometheus_config(self) -> Path:
        rule_files = [str(self._write(f"rules-{path.name}", rules_copy(path))) for path in RULE_FILES]
        p = self.ports
        conf: dict[str, Any] = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": rule_files,
            "scrape_configs": [
                {
                    # Not honor_labels (the compose file's single collector uses it): two gateways
                    # export the same series, which the target's own labels keep apart.
                    "job_name": "gateways",
                    "static_configs": [{"targets": [f"127.0.0.1:{port}" for port in p.gateway_prom]}],
                },
                # The Collectors' own metrics (service::telemetry), which the pipeline rules read.
                *(
                    {"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{n}" for n in ports]}]}
                    for job, ports in (
                        ("otelcol-agent", p.agent_metrics),
                        ("otelcol-gateway", p.gateway_metrics),
                        ("jaeger", [p.jaeger_metrics]),
                    )
                ),
            ],
        }
        if self.webhook is not None:
            am = {"static_configs": [{"targets": [f"127.0.0.1:{self.ports.alertmanager}"]}]}
            conf["alerting"] = {"alertmanagers": [am]}
        return self._write("prometheus.yml", conf)

    def _alertmanager_config(self) -> Path:
        assert self.webhook is not None
        conf = {
            "route": {
                "receiver": "test",
                "group_by": ["alertname", "source"],
                "group_wait": "1s",
                "group_interval": "1s",
                "repeat_interval": "1h",
            },
            "receivers": [{"name": "test", "webhook_configs": [{"url": self.webhook.url}]}],
        }
        return self._write("alertmanager.yml", conf)

    # -- processes -----------------------------------------------------------------------------
    def _add(
        self, name: str, argv: list[str], ready: Callable[[], bool], env: dict[str, str] | None = None
    ) -> Proc:
        proc = Proc(name, argv, self.dir / f"{name}.log", env=env, ready=ready)
        self.procs[name] = proc.start()
        return proc

    def start(self) -> Stack:
        p = self.ports
        env = dict(
            os.environ,
            JAEGER_OTLP_GRPC_PORT=str(p.jaeger_grpc),
            JAEGER_OTLP_HTTP_PORT=str(p.jaeger_http),
            JAEGER_QUERY_HTTP_PORT=str(p.jaeger_query),
            JAEGER_QUERY_GRPC_PORT=str(p.jaeger_query_grpc),
            JAEGER_METRICS_PORT=str(p.jaeger_metrics),
            JAEGER_DATA_DIR=str(self.dir / "jaeger-data"),
        )
        self._add(
            "jaeger",
            [str(BIN / "jaeger"), f"--config={CC / 'jaeger.yaml'}"],
            lambda: port_open(p.jaeger_grpc) and bool(http_get(f"{self.query_url}/api/v3/services")),
            env,
        )
        for i in range(2):
            conf = gateway_config(
                i,
                p,
                decision_wait=self.decision_wait,
                queue_spans=self.gateway_queue_spans,
            )
            config = self._write(f"gateway-{i}.yaml", conf)
            self._add(
                f"gateway-{i}",
                [str(self.gateway_bin), f"--config={config}"],
                lambda i=i: port_open(p.gateway_grpc[i]) and port_open(p.gateway_prom[i]),  # type: ignore[misc]
            )
        for i in range(2):
            config = self._write(f"agent-{i}.yaml", agent_config(i, p, self.dir, queue=self.agent_queue))
            self._add(
                f"agent-{i}",
                [str(BIN / "otelcol-agent"), f"--config={config}"],
                lambda i=i: port_open(p.agent_http[i]) and port_open(p.agent_grpc[i]),  # type: ignore[misc]
            )
        if self.monitoring:
            self._start_monitoring()
        return self

    def _start_monitoring(self) -> None:
        p = self.ports
        if self.webhook is not None:
            self._add(
                "alertmanager",
                [
                    "prometheus-alertmanager",
                    f"--config.file={self._alertmanager_config()}",
                    f"--storage.path={self.dir / 'alertmanager'}",
                    f"--web.listen-address=127.0.0.1:{p.alertmanager}",
                    "--cluster.listen-address=",  # no gossip listener (all interfaces by default)
                ],
                lambda: bool(http_get(f"http://127.0.0.1:{p.alertmanager}/-/ready")),
            )
        self._add(
            "prometheus",
            [
                "prometheus",
                f"--config.file={self._prometheus_config()}",
                f"--storage.tsdb.path={self.dir / 'prometheus'}",
                f"--web.listen-address=127.0.0.1:{p.prometheus}",
            ],
            lambda: bool(http_get(f"{self.prometheus_url}/-/ready")),
        )

    def close(self) -> None:
        for proc in reversed(list(self.procs.values())):
            proc.stop()
        if self.webhook is not None:
            self.webhook.close()

    # -- reading back --------------------------------------------------------------------------
    @property
    def query_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.jaeger_query}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.ports.prometheus}"

    def app(self, name: str, agent: int, *args: str, **extra_env: str) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(
            PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            PYTHONUNBUFFERED="1",
            OTEL_SERVICE_NAME=SERVICE,
            OTEL_RESOURCE_ATTRIBUTES=f"service.instance.id={name}",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_METRICS_EXPORTER="otlp",
            OTEL_LOGS_EXPORTER="none",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{self.ports.agent_http[agent]}",
            OTEL_METRIC_EXPORT_INTERVAL="1000",
            OTEL_BSP_SCHEDULE_DELAY="200",
        )
        env.update(extra_env)
        argv = [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, str(APP), "--name", name, *args]
        log = (self.dir / f"{name}.stderr").open("ab")
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, env=env, text=True)

    def traces(self, start_ns: int, end_ns: int, *, limit: int = 100000) -> list[dict[str, Any]]:
        """Every span Jaeger holds for the app in the window, from /api/v3/traces (OTLP JSON)."""
        query = urllib.parse.urlencode(
            {
                "query.service_name": SERVICE,
                "query.start_time_min": rfc3339(start_ns),
                "query.start_time_max": rfc3339(end_ns),
                "query.num_traces": str(limit),
            }
        )
        try:
            body = json.loads(http_get(f"{self.query_url}/api/v3/traces?{query}", timeout=30))
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # no trace found
                return []
            raise
        return [
            {**span, "resource": rs.get("resource", {})}
            for rs in body["result"]["resourceSpans"]
            for ss in rs["scopeSpans"]
            for span in ss["spans"]
        ]

    def prom(self, expr: str) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({"query": expr})
        body = json.loads(http_get(f"{self.prometheus_url}/api/v1/query?{query}"))
        return list(body["data"]["result"])

    def counted(self, selector: str, start_s: float, end_s: float) -> float:
        """What the counters of `selector` counted between two times, summed over its series, read
        per process lifetime from Prometheus's raw samples: a value lower than the one before is
        a restarted process counting from 0 again, so it adds itself, never a negative delta.
        What a process counted after its last scrape before it stopped is not seen."""
        window = max(1, int(end_s - start_s) + 30)
        query = urllib.parse.urlencode({"query": f"{selector}[{window}s]", "time": f"{end_s:.3f}"})
        body = json.loads(http_get(f"{self.prometheus_url}/api/v1/query?{query}"))
        total = 0.0
        for series in body["data"]["result"]:
            samples = [(float(t), float(v)) for t, v in series["values"]]
            before = [v for t, v in samples if t <= start_s]
            last = before[-1] if before else 0.0
            for _, value in (sample for sample in samples if sample[0] > start_s):
                total += value - last if value >= last else value
                last = value
        return total

    def collector_metric(self, port: int, name: str) -> float:
        """Sum of one metric's samples on a Collector's own /metrics (0 when absent)."""
        total = 0.0
        for line in http_get(f"http://127.0.0.1:{port}/metrics").decode().splitlines():
            if line.startswith(name) and line[len(name)] in "{ ":
                total += float(line.rsplit(" ", 1)[1])
        return total


def rfc3339(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest:09d}Z"


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    """OTLP JSON attributes as a dict of plain values."""
    out: dict[str, Any] = {}
    for kv in span.get("attributes", []):
        value = kv.get("value", {})
        (kind, raw), *_ = value.items() if value else [("stringValue", None)]
        out[kv["key"]] = int(raw) if kind == "intValue" else raw
    return out


@contextlib.contextmanager
def running(workdir: Path, **options: Any) -> Iterator[Stack]:
    stack = Stack(workdir, **options)
    try:
        yield stack.start()
    finally:
        stack.close()
