"""The ``instruments-any`` extra: ``opentelemetry-instrument`` runs the instrumentor only where one of
its distributions is installed (``make tables`` writes it with every distribution an adapter patches:
a tool server with only mcp, a worker with only a framework); ``instrumentation_dependencies()``
decides the same."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
import tomllib
from opentelemetry.instrumentation import dependencies as otel_dependencies
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls._wiring import dependencies

PYPROJECT = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
EXTRA = PYPROJECT["project"]["optional-dependencies"]["instruments-any"]
# opentelemetry-instrumentation before the extra was read (it then loads the instrumentor always).
HONOURS_ANY = hasattr(otel_dependencies.DependencyConflict, "required_any")


def _floors(requirements: list[str] | tuple[str, ...]) -> dict[str, Version]:
    """distribution (canonical) -> the version after ``>=``, the only specifier the extra uses."""
    floors = {}
    for each in requirements:
        requirement = Requirement(each)
        (specifier,) = requirement.specifier
        assert specifier.operator == ">=", each
        floors[canonicalize_name(requirement.name)] = Version(specifier.version)
    return floors


def test_the_installed_metadata_states_the_same_extra() -> None:
    # What opentelemetry-instrument reads is the installed distribution's, not pyproject.toml.
    requires = importlib.metadata.requires(dependencies.DISTRIBUTION) or []
    marked = [r.split(";")[0].strip() for r in requires if 'extra == "instruments-any"' in r]
    assert _floors(marked) == _floors(EXTRA), "reinstall the package: its metadata is older than pyproject"


SCENARIOS = {
    "nothing": {},
    "only mcp": {"mcp": "2.3.0"},
    "only langchain-core": {"langchain-core": "1.8.3"},
    "mcp below its floor": {"mcp": "1.24.0"},
    "an old openai beside a good crewai": {"openai": "1.30.0", "crewai": "1.13.0"},
    "only an old openai": {"openai": "1.30.0"},
}


@pytest.mark.skipif(not HONOURS_ANY, reason="this opentelemetry-instrumentation reads no instruments-any")
@pytest.mark.parametrize("installed", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_instrument_decides_as_opentelemetry_instrument_does(
    monkeypatch: pytest.MonkeyPatch, installed: dict[str, str]
) -> None:
    def version(name: str, missing: type[Exception] = importlib.metadata.PackageNotFoundError) -> str:
        found = installed.get(canonicalize_name(name))
        if found is None:
            raise missing(name)
        return found

    monkeypatch.setattr(importlib.metadata, "version", version)
    # The class opentelemetry-instrumentation catches (a backport's, in some releases).
    otel_missing = otel_dependencies.PackageNotFoundError
    monkeypatch.setattr(otel_dependencies, "version", lambda name: version(name, otel_missing))
    # opentelemetry-instrument: the extra, any one; instrument(): what the instrumentor returns, all.
    auto = otel_dependencies.get_dependency_conflicts([], EXTRA)
    returned = ToolCallsInstrumentor().instrumentation_dependencies()
    manual = otel_dependencies.get_dependency_conflicts(returned)
    assert (auto is None) == (manual is None)
    assert (auto is None) == any(
        Requirement(each).specifier.contains(installed.get(canonicalize_name(Requirement(each).name), "0"))
        for each in EXTRA
    )


def test_instrument_refuses_where_opentelemetry_instrument_would_skip(
    monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    def otel_missing(name: str) -> str:
        raise otel_dependencies.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr(otel_dependencies, "version", otel_missing)
    instrumentor = ToolCallsInstrumentor()
    assert not instrumentor.is_instrumented_by_opentelemetry
    instrumentor.instrument()
    try:
        assert not instrumentor.is_instrumented_by_opentelemetry
        assert any("nothing can be instrumented" in r.getMessage() for r in caplog.records)
    finally:
        instrumentor.uninstrument()
