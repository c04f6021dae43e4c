"""Every Collector config in collector-config/ loads in the binary that runs it (`validate`).

The binaries are built from their Go modules by `make pipeline-bins` (.pipeline/bin): Jaeger v2.12.0
(Collector v0.139.0) runs otelcol.yaml and jaeger.yaml; the Collector built here
(collector-config/go/agent, contrib v0.161.0) runs agent.yaml and gateway.yaml. The tests skip only when the
binaries are not built, and fail instead under `make test`, which builds them first. tempo.yaml is
Grafana Tempo's (AGPL, not run here): tests/downstream/test_collector_scalar_types.py checks it by type only.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import markers
import pytest

ROOT = Path(__file__).resolve().parents[2]
CC = ROOT / "collector-config"
BIN = ROOT / ".pipeline" / "bin"
RUNS_IN = {
    "otelcol.yaml": "jaeger",
    "gateway.yaml": "otelcol-agent",
    "jaeger.yaml": "jaeger",
    "agent.yaml": "otelcol-agent",
}
NOT_A_COLLECTOR = {"docker-compose.yaml"}


def binary(name: str) -> Path:
    path = BIN / name
    if not path.exists():
        markers.missing(str(path), "make pipeline-bins")
    return path


def validate(bin_name: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary(bin_name)), "validate", f"--config={config}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_collector_config_is_validated_here() -> None:
    found = {p.name for p in CC.glob("*.yaml")} - NOT_A_COLLECTOR
    assert found == set(RUNS_IN)


@pytest.mark.parametrize(("name", "bin_name"), sorted(RUNS_IN.items()))
def test_config_loads_in_the_binary_that_runs_it(name: str, bin_name: str) -> None:
    result = validate(bin_name, CC / name)
    assert result.returncode == 0, result.stderr[-3000:]


def test_validate_refuses_a_type_name_the_release_does_not_know(tmp_path: Path) -> None:
    # The newer exporter name (Collector v0.144+) on Jaeger v2.12 (v0.139): what the configs avoid.
    text = (CC / "otelcol.yaml").read_text().replace("otlp/jaeger", "otlp_grpc/jaeger")
    config = tmp_path / "otelcol.yaml"
    config.write_text(text)
    result = validate("jaeger", config)
    assert result.returncode != 0
    assert "otlp_grpc" in result.stderr
