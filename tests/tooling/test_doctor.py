"""``otel-toolcalls doctor``: the real command on this venv, a target removed from a real SDK class,
settings and their sources, providers, and secrets that must never be printed.

The two subprocesses (the console script under opentelemetry-instrument; ``python -m`` with a
target deleted) run at once; the other tests call the report in process. In a framework venv
(``make frameworks``) the deleted targets are its frameworks' (``tests/helpers/lanes.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lanes import FRAMEWORKS_HERE, requires, targets_here

from otel_toolcalls._cli import doctor as _doctor
from otel_toolcalls._cli import doctor_env as _doctor_env
from otel_toolcalls._wiring.adapters import adapter_names, load
from otel_toolcalls._wiring.tested_versions import TESTED

HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
SECRETS = {
    "OTEL_EXPORTER_OTLP_HEADERS": "api-key=HEADERSECRET1,x-tenant=acme",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20HEADERSECRET2",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:URLPASSWORD@collector.example:4318/base?key=QUERYSECRET#FRAGSECRET",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://metrics.example/v1/metrics?api_key=QUERYSECRET2",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
}
LEAKS = ("HEADERSECRET", "URLPASSWORD", "QUERYSECRET", "FRAGSECRET", "acme", "Bearer")

# adapter -> the target a release renamed: the main venv's groq, or each framework of this venv.
VICTIMS = {a: targets_here(a)[0] for a in FRAMEWORKS_HERE} or {
    "groq": ("groq._streaming", "Stream.close")
}
BROKEN = """
import importlib, runpy, sys
for module, attr in {victims}:
    *path, name = attr.split(".")
    owner = importlib.import_module(module)
    for part in path:
        owner = getattr(owner, part)
    delattr(owner, name)
sys.argv = ["otel_toolcalls", "doctor", "--json"]
runpy.run_module("otel_toolcalls", run_name="__main__")
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, cwd=HERE, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess[str]]:
    instrumented = [str(VENV_BIN / "opentelemetry-instrument"), str(VENV_BIN / "otel-toolcalls"), "doctor"]
    exporters = dict(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none")
    with ThreadPoolExecutor(max_workers=2) as pool:
        healthy = pool.submit(_run, instrumented, _env(**exporters, **SECRETS))
        script = textwrap.dedent(BROKEN).format(victims=list(VICTIMS.values()))
        broken = pool.submit(_run, [sys.executable, "-c", script], _env())
        return {"healthy": healthy.result(), "broken": broken.result()}


def _frameworks_set_a_tracer_provider() -> bool:
    """Whether importing this venv's frameworks' modules alone sets a real global tracer provider."""
    modules = sorted({requires(a).installed_targets()[0][0] for a in FRAMEWORKS_HERE})
    code = (
        "import importlib, sys\nfrom opentelemetry import trace\n"
        "for m in sys.argv[1:]: importlib.import_module(m)\n"
        "print(type(trace.get_tracer_provider()).__name__)"
    )
    done = _run([sys.executable, "-c", code, *modules], _env())
    return bool(modules) and done.stdout.strip().splitlines()[-1:] not in ([], ["ProxyTracerProvider"])


def _installed() -> dict[str, str]:
    """adapter -> its SDK's version, for every adapter whose SDK this venv has (a release without
    the adapter's surface too: doctor lists it with nothing to patch, see _nothing_here)."""
    return {a: version for a in adapter_names() if (version := requires(a).version()) is not None}


def _nothing_here(adapter: str) -> bool:
    """The installed release predates every surface the adapter covers (a framework lane's older
    openai has no Responses WebSocket): doctor lists it with nothing to patch, not unseen."""
    req = requires(adapter)
    absent = set(req.absent_modules())
    return bool(absent) and all(module in absent for module, _ in req.installed_targets())


def test_on_this_venv_every_sdk_is_listed_with_its_version_and_seen(runs: Any) -> None:
    result = runs["healthy"]
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for adapter, version in _installed().items():
        (line,) = [line for line in lines if line.split()[:1] == [adapter]]
        _, _, shown, targets, applies = line.split()[:5]
        found, total = targets.split("/")
        req = requires(adapter)
        # Targets of a surface this release does not have (mcp's servers: one per major) are not found.
        absent = sum(1 for module, _ in req.installed_targets() if module in req.absent_modules())
        expected = (version, "-", 0) if _nothing_here(adapter) else (version, "yes", int(total) - absent)
        assert (shown, applies, int(found)) == expected, line
    for adapter in sorted(set(adapter_names()) - set(_installed())):
        (line,) = [line for line in lines if line.split()[:1] == [adapter]]
        assert line.split()[1:] == [requires(adapter).sdk, "-", "not", "installed"], line
    assert "OK: every installed SDK will be seen." in lines
    # Under opentelemetry-instrument the distro set real providers.
    assert any(line.startswith("  tracer provider real (") for line in lines), result.stdout
    assert any(line.startswith("  meter provider  real (") for line in lines), result.stdout


def test_secrets_in_the_exporter_configuration_are_never_printed(runs: Any) -> None:
    result = runs["healthy"]
    for leak in LEAKS:
        assert leak not in result.stdout and leak not in result.stderr, leak
    endpoint = "https://collector.example:4318/base/v1/traces"
    assert f"endpoint {endpoint} (OTEL_EXPORTER_OTLP_ENDPOINT)" in result.stdout
    assert "headers  set in OTEL_EXPORTER_OTLP_TRACES_HEADERS, not shown" in result.stdout


def test_a_missing_target_fails_and_is_named(runs: Any) -> None:
    result = runs["broken"]
    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads(result.stdout)
    rows = {row["adapter"]: row for row in data["sdks"]}
    for adapter, (module, attr) in VICTIMS.items():
        assert rows[adapter]["missing"] == [f"{module}.{attr}"]
        assert rows[adapter]["unseen"] is True
    assert data["unseen"] == sorted(VICTIMS) and data["ok"] is False
    others = [row for name, row in rows.items() if name not in VICTIMS and row["version"] is not None]
    assert others and all(not row["unseen"] for row in others)
    assert all(row["applies"] or _nothing_here(row["adapter"]) for row in others)
    # The instrumentor's own warnings (one per adapter) are in the report, not on stderr.
    assert len(data["warnings"]) == len(VICTIMS)
    for adapter, (module, attr) in VICTIMS.items():
        (warning,) = [w for w in data["warnings"] if f"the {adapter} adapter " in w]
        assert f"{module}.{attr}" in warning
    assert "otel_toolcalls" not in result.stderr
    # Run without opentelemetry-instrument: nothing set the global providers (crewai 1.13 sets a
    # tracer provider of its own on import: then importing the frameworks alone shows it too).
    assert data["providers"]["tracer"]["real"] is False or _frameworks_set_a_tracer_provider()
    assert data["providers"]["meter"]["real"] is False


# -- in process -----------------------------------------------------------------------------------


def test_every_sdk_has_a_tested_range() -> None:
    sdks = {requires(name).sdk for name in adapter_names()}
    assert sdks <= set(TESTED), sdks - set(TESTED)


@pytest.mark.parametrize(
    ("version", "in_range", "note"),
    [
        ("1.40.0", True, "tested"),
        ("1.39.9", False, "older than tested"),
        ("99.0", False, "newer than tested"),
        ("not-a-version", False, "not comparable"),
        (None, None, "not installed"),
    ],
)
def test_the_tested_range(version: str | None, in_range: bool | None, note: str) -> None:
    result = _doctor._range("openai", version)
    assert result[0] is in_range and result[1].startswith(note)


@pytest.mark.parametrize("name", FRAMEWORKS_HERE)
def test_every_framework_lane_release_is_in_the_tested_range(name: str) -> None:
    # Each framework lane (its newest, previous design, floor) runs a release _support states.
    row = _doctor._sdk_row(name)
    assert row["in_tested_range"] is True and row["range"].startswith("tested"), row
    assert row["missing"] == [] and row["import_errors"] == []


@pytest.mark.parametrize("name", FRAMEWORKS_HERE or ["mcp"])
def test_an_adapter_that_fails_to_apply_makes_its_sdk_unseen(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = load(name)

    def broken(telemetry: Any) -> bool:
        raise RuntimeError("boom")

    monkeypatch.setattr(adapter, "instrument", broken)
    data = _doctor.report()
    rows = {row["adapter"]: row for row in data["sdks"]}
    assert rows[name]["applies"] is False and rows[name]["missing"] == []
    assert data["unseen"] == [name] and data["ok"] is False
    assert f"PROBLEM: would go unseen: {name}." in _doctor.render(data)


def test_settings_and_where_each_comes_from(monkeypatch: pytest.MonkeyPatch, instrument: Any) -> None:
    monkeypatch.setenv("OTEL_TOOLCALLS_STRICT", "true")
    monkeypatch.setenv("OTEL_TOOLCALLS_REGISTRY_SIZE", "lots")
    monkeypatch.setenv("OTEL_TOOLCALLS_BUFFERED_MIN_CHUNKS", "3")
    instrument(buffered_min_chunks=5)  # this process's instrument() keyword beats the environment
    settings = _doctor._settings()
    assert settings["strict"] == {
        "value": True,
        "source": "environment (OTEL_TOOLCALLS_STRICT)",
        "variable": "OTEL_TOOLCALLS_STRICT",
    }
    assert settings["registry_size"]["value"] == 10_000
    assert settings["registry_size"]["source"].startswith("default (ignoring OTEL_TOOLCALLS_REGISTRY_SIZE=")
    assert settings["buffered_min_chunks"]["value"] == 5
    assert settings["buffered_min_chunks"]["source"] == "keyword (instrument())"
    assert settings["capture_content"]["source"] == "default"


def test_a_real_provider_without_processors_says_nothing_is_exported() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    info = _doctor_env._tracer(TracerProvider())
    assert info["real"] is True and info["span_processors"] == []
    assert "no span processor: nothing is exported" in _doctor._provider_line("tracer provider", info)
    info = _doctor_env._meter(MeterProvider())
    assert info["real"] is True and info["metric_readers"] == []
    assert "no metric reader: nothing is exported" in _doctor._provider_line("meter provider", info)
    info = _doctor_env._meter(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    assert info["metric_readers"] == ["opentelemetry.sdk.metrics._internal.export.InMemoryMetricReader"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://u:p@host.example:4318/a?k=v#f", "https://host.example:4318/a"),
        ("http://[::1]:4317", "http://[::1]:4317"),
        ("host.example:4317", "(not a URL; not shown)"),
        ("http://host:notaport/", "(not a URL; not shown)"),
    ],
)
def test_urls_lose_user_info_query_and_fragment(url: str, shown: str) -> None:
    assert _doctor_env.safe_url(url) == shown


def test_json_report_in_process_leaks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    data = _doctor.report()
    text = json.dumps(data) + _doctor.render(data)
    for leak in LEAKS:
        assert leak not in text, leak
    assert data["otlp"]["metrics"]["endpoint"] == "https://metrics.example/v1/metrics"


def test_disabled_under_opentelemetry_instrument_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "requests, toolcalls")
    data = _doctor.report()
    assert data["ok"] is False and data["unseen"] == sorted(_installed())
    assert any("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS names toolcalls" in w for w in data["warnings"])
    assert data["opentelemetry_instrument"]["loads"] is False


def test_doctor_says_opentelemetry_instrument_skips_every_instrumentation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "*")
    data = _doctor.report()
    reason = "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS names *"
    assert data["opentelemetry_instrument"] == {"loads": False, "reason": reason}
    assert data["ok"] is False and data["unseen"] == sorted(_installed())
    assert f"opentelemetry-instrument: SKIPS the instrumentor ({reason})" in _doctor.render(data)


def test_doctor_says_opentelemetry_instrument_skips_without_a_distribution_of_instruments_any(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As opentelemetry-instrument sees a venv with none of them: its own check, on this metadata.
    from opentelemetry.instrumentation import dependencies

    def missing(name: str) -> str:
        raise dependencies.PackageNotFoundError(name)  # the class it catches (a backport's, in some)

    monkeypatch.setattr(dependencies, "version", missing)
    data = _doctor.report()
    auto = data["opentelemetry_instrument"]
    # 0.63 on read the extra; 0.55 checks what instrument() is given; a release with the dist check
    # that reads no instruments-any loads it always.
    if hasattr(dependencies, "get_dist_dependency_conflicts") and not hasattr(
        dependencies.DependencyConflict, "required_any"
    ):
        assert auto["loads"] is True
        return
    assert auto["loads"] is False and auto["reason"].startswith("dependency check: ")
    assert data["ok"] is False and data["unseen"] == sorted(_installed())
