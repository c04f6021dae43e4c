"""collector-config/docker-compose.yaml: the whole stack with pinned images, every file it mounts
exists and comes from this folder, and the services point at each other. Nothing here runs Docker."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path
from typing import Any

import yaml
from collector_kit import CC, DASHBOARD, compose, load


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
