"""Packaging as contrib's instrumentations do it: the version written once (version.py, read by the
build), and every runtime dependency one the package imports."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import tomllib
from packaging.requirements import Requirement

import otel_toolcalls
from otel_toolcalls._wiring.dependencies import DISTRIBUTION

ROOT = Path(otel_toolcalls.__file__).parent
PYPROJECT = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())
# Each runtime dependency and the module the package imports it as.
IMPORTED_AS = {
    "opentelemetry-api": "opentelemetry.trace",
    "opentelemetry-instrumentation": "opentelemetry.instrumentation",
    "wrapt": "wrapt",
}
# Declared, never imported: the opentelemetry-floor lane pins it at the floor stated here. Dropping it
# means dropping that pin too (tests/versions/run.py's OTEL, tested_versions.TESTED's row).
DECLARED_FOR_A_LANE = {"opentelemetry-semantic-conventions": "opentelemetry.semconv"}


def test_the_version_is_written_once() -> None:
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert importlib.metadata.version(DISTRIBUTION) == otel_toolcalls.__version__


def _imported() -> set[str]:
    found = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
    return found


def test_every_dependency_is_imported() -> None:
    declared = {Requirement(each).name for each in PYPROJECT["project"]["dependencies"]}
    assert declared == set(IMPORTED_AS) | set(DECLARED_FOR_A_LANE)
    imported = _imported()
    missing = [
        dist for dist, module in IMPORTED_AS.items() if not any(m.startswith(module) for m in imported)
    ]
    assert missing == []
    # The names it records are its own constants (_core/names.py): were it to import the conventions'
    # package, that would be a dependency of its own, listed above.
    assert [m for m in imported if m.startswith(tuple(DECLARED_FOR_A_LANE.values()))] == []


def test_the_pytest_plugin_is_opt_in() -> None:
    # Not loaded into every pytest session of an environment that has the package installed: the
    # package's own tests load it (tests/conftest.py's pytest_plugins), a user's conftest.py likewise.
    assert "pytest11" not in PYPROJECT["project"].get("entry-points", {})
    installed = importlib.metadata.distribution(DISTRIBUTION).entry_points
    assert [ep for ep in installed if ep.group == "pytest11"] == []
    assert {ep.group for ep in installed} >= {"opentelemetry_instrumentor", "console_scripts"}
