"""``otel-toolcalls doctor [--json]``: what this environment's SDKs and settings will show.

Per adapter: the installed SDK against the tested range, its targets, whether it applies; then the
effective settings, the global providers, where OTLP would export. Exit status 1 when an installed
SDK would go unseen. Run it as the service runs (``opentelemetry-instrument otel-toolcalls doctor``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import json
import logging
import os
import platform
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

from packaging.version import InvalidVersion, Version

from otel_toolcalls._config import CAPTURE_CONTENT_ENV, ENV_VARIABLES, Settings, resolve
from otel_toolcalls._core import telemetry
from otel_toolcalls._wiring.adapters import adapter_names, load
from otel_toolcalls._wiring.dependencies import DISTRIBUTION, instrumentation_dependencies
from otel_toolcalls._wiring.tested_versions import SURFACES, TESTED
from otel_toolcalls.version import __version__

from .doctor_env import otlp, providers

_DISABLED = "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"


@contextlib.contextmanager
def _captured(name: str) -> Iterator[list[logging.LogRecord]]:
    """The package's WARNINGs while doctor works: into the report, not onto stderr."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger(name)
    handler, propagate, level = Keep(logging.WARNING), logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        logger.setLevel(level)


def _range(sdk: str, version: str | None, adapter: str | None = None) -> tuple[bool | None, str]:
    if version is None:
        return None, "not installed"
    tested = SURFACES.get(adapter or "") or TESTED.get(sdk)
    if tested is None:
        return False, "no tested range"
    oldest, newest = tested
    try:
        installed = Version(version)
    except InvalidVersion:
        return False, f"not comparable with the tested {oldest} to {newest}"
    if installed < Version(oldest):
        return False, f"older than tested ({oldest} to {newest})"
    if installed > Version(newest):
        return False, f"newer than tested ({oldest} to {newest})"
    return True, f"tested ({oldest} to {newest})"


def _import_errors(modules: tuple[str, ...]) -> list[str]:
    # Unlike instrument(), which waits for the application's imports, doctor imports every SDK.
    errors = []
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:
            errors.append(f"{module}: {type(exc).__name__}")
    return errors


def _sdk_row(name: str) -> dict[str, Any]:
    requires = load(name).REQUIRES
    version = requires.version()
    in_range, note = _range(requires.sdk, version, name)
    row: dict[str, Any] = {
        "adapter": name,
        "sdk": requires.sdk,
        "version": version,
        "tested": list(SURFACES.get(name) or TESTED.get(requires.sdk) or ()),
        "in_tested_range": in_range,
        "range": note,
        "targets": len(requires.targets),
        "missing": [],
        # Surfaces this release predates (optional modules it does not have): nothing to patch.
        "absent": [],
        "absent_targets": 0,
        "import_errors": [],
        "applies": None,
        "unseen": False,
    }
    if version is not None:
        # The installed release's design: the other designs' modules are not in this release.
        targets = requires.installed_targets()
        row["targets"] = len(targets)
        row["absent"] = absent = requires.absent_modules()
        row["absent_targets"] = sum(1 for module, _ in targets if module in absent)
        modules = dict.fromkeys(module for module, _ in targets if module not in absent)
        row["import_errors"] = _import_errors(tuple(modules))
        row["missing"] = requires.missing()
    return row


def _applied() -> set[str]:
    """The adapters the real instrumentor applies here, with no-op providers (nothing exported);
    the one already instrumented when doctor runs under opentelemetry-instrument."""
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    from otel_toolcalls._wiring.instrumentor import ToolCallsInstrumentor

    instrumentor = ToolCallsInstrumentor()
    ours = not instrumentor.is_instrumented_by_opentelemetry
    if ours:
        instrumentor.instrument(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
    try:
        return set(instrumentor.instrumented_adapters())
    finally:
        if ours:
            instrumentor.uninstrument()


def _sdks() -> tuple[list[dict[str, Any]], list[str]]:
    with _captured("otel_toolcalls") as records:
        rows = [_sdk_row(name) for name in adapter_names()]
        applied = _applied()
    for row in rows:
        if row["version"] is not None:
            row["applies"] = row["adapter"] in applied
            row["unseen"] = _unseen(row)
    return rows, [record.getMessage() for record in records]


def _unseen(row: dict[str, Any]) -> bool:
    # An SDK release with none of the adapter's surfaces (all absent) has nothing there to go unseen.
    nothing_here = bool(row["absent"]) and row["absent_targets"] == row["targets"]
    return bool(row["missing"] or row["import_errors"] or not (row["applies"] or nothing_here))


def _settings() -> dict[str, dict[str, Any]]:
    with _captured("otel_toolcalls._config") as invalid:
        from_env = resolve()
    active = telemetry.active()
    report = {}
    for field in fields(Settings):
        variable = CAPTURE_CONTENT_ENV if field.name == "capture_content" else ENV_VARIABLES[field.name]
        value, source = getattr(from_env, field.name), "default"
        if os.environ.get(variable) is not None:
            ignored = [r.getMessage() for r in invalid if r.getMessage().startswith(f"ignoring {variable}=")]
            source = f"default ({ignored[0]})" if ignored else f"environment ({variable})"
        if active is not None and getattr(active.settings, field.name) != value:
            # This process was instrumented with a keyword that overrides the environment.
            value, source = getattr(active.settings, field.name), "keyword (instrument())"
        report[field.name] = {"value": value, "source": source, "variable": variable}
    return report


def _auto_instrument() -> dict[str, Any]:
    """Whether ``opentelemetry-instrument`` would run the instrumentor in this environment, decided
    as it decides (its own dependency check on the ``instruments-any`` extra), and why not."""
    disabled = [name.strip() for name in os.environ.get(_DISABLED, "").split(",")]
    if "toolcalls" in disabled or "*" in disabled:
        named = "toolcalls" if "toolcalls" in disabled else "*"
        return {"loads": False, "reason": f"{_DISABLED} names {named}"}
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return {"loads": False, "reason": f"{DISTRIBUTION} is not installed: no entry point to load"}
    from opentelemetry.instrumentation import dependencies as checks

    if hasattr(checks, "get_dist_dependency_conflicts"):
        conflict = checks.get_dist_dependency_conflicts(dist)
    else:  # releases (0.55) where opentelemetry-instrument lets instrument() check what it returns
        conflict = checks.get_dependency_conflicts(instrumentation_dependencies())
    if conflict is not None:
        return {"loads": False, "reason": f"dependency check: {conflict}"}
    return {"loads": True, "reason": "a distribution of the instruments-any extra is installed"}


def report() -> dict[str, Any]:
    # Importing litellm would otherwise fetch its model cost map from GitHub (with retries).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    settings = _settings()  # before doctor instruments anything itself
    sdks, warnings = _sdks()
    unseen = [row["adapter"] for row in sdks if row["unseen"]]
    auto = _auto_instrument()
    if not auto["loads"]:
        # opentelemetry-instrument would not load the instrumentor at all.
        unseen = [row["adapter"] for row in sdks if row["version"] is not None]
        warnings.append(f"{auto['reason']}: opentelemetry-instrument will not instrument")
    return {
        "otel_toolcalls": __version__,
        "python": platform.python_version(),
        "sdks": sdks,
        "opentelemetry_instrument": auto,
        "warnings": warnings,
        "settings": settings,
        "providers": providers(),
        "otlp": otlp(),
        "unseen": unseen,
        "ok": not unseen,
    }


def _sdk_lines(sdks: list[dict[str, Any]]) -> list[str]:
    # Columns as wide as their longest name, plus a space: a distribution name is never run on.
    a = max([len("adapter"), *(len(row["adapter"]) for row in sdks)]) + 2
    d = max([len("sdk"), *(len(row["sdk"]) for row in sdks)]) + 2
    lines = [f"  {'adapter':<{a}}{'sdk':<{d}}{'installed':<12}{'targets':<10}{'applies':<9}versions"]
    for row in sdks:
        if row["version"] is None:
            lines.append(f"  {row['adapter']:<{a}}{row['sdk']:<{d}}{'-':<12}{'':<10}{'':<9}not installed")
            continue
        found = row["targets"] - len(row["missing"]) - row.get("absent_targets", 0)
        applies = "yes" if row["applies"] else ("-" if not row["unseen"] else "NO")
        targets = f"{found}/{row['targets']}"
        start = f"  {row['adapter']:<{a}}{row['sdk']:<{d}}{row['version']:<12}"
        lines.append(f"{start}{targets:<10}{applies:<9}{row['range']}")
        lines += [f"      missing: {target}" for target in row["missing"]]
        lines += [f"      not in this version: {module}" for module in row["absent"]]
        lines += [f"      cannot import {error}" for error in row["import_errors"]]
    return lines


def _provider_line(kind: str, info: dict[str, Any]) -> str:
    state = "real" if info["real"] else "no-op"
    extra = info.get("note", "")
    for key, none in (("span_processors", "no span processor"), ("metric_readers", "no metric reader")):
        if key in info:
            extra = ", ".join(info[key]) or f"{none}: nothing is exported"
    return f"  {kind:<16}{state} ({info['type']}{'; ' + extra if extra else ''})"


def render(data: dict[str, Any]) -> str:
    lines = [f"otel-toolcalls {data['otel_toolcalls']} doctor (Python {data['python']})", "", "SDKs"]
    lines += _sdk_lines(data["sdks"])
    auto = data["opentelemetry_instrument"]
    lines.append(f"  opentelemetry-instrument: {'loads' if auto['loads'] else 'SKIPS'} the instrumentor "
                 f"({auto['reason']})")  # fmt: skip
    lines += [f"  warning: {message}" for message in data["warnings"]]
    lines += ["", "Settings"]
    for name, setting in data["settings"].items():
        lines.append(f"  {name:<24}{setting['value']!s:<8}{setting['source']}")
    lines += ["", "Providers"]
    lines += [_provider_line(f"{kind} provider", info) for kind, info in data["providers"].items()]
    lines += ["", "OTLP"]
    for signal, info in data["otlp"].items():
        lines.append(f"  {signal:<16}exporter {info['exporter'] or '(unset)'}")
        lines.append(f"  {'':<16}protocol {info['protocol']} ({info['protocol_source']})")
        lines.append(f"  {'':<16}endpoint {info['endpoint']} ({info['endpoint_source']})")
        lines.append(f"  {'':<16}headers  {info['headers']}")
    lines.append("")
    if data["ok"]:
        lines.append("OK: every installed SDK will be seen.")
    else:
        lines.append(f"PROBLEM: would go unseen: {', '.join(data['unseen'])}.")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="otel-toolcalls doctor", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    args = parser.parse_args(argv)
    data = report()
    print(json.dumps(data, indent=2) if args.json else render(data))
    return 0 if data["ok"] else 1
