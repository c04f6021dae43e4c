"""When ``opentelemetry-instrument`` runs the instrumentor: the ``instruments-any`` extra.

opentelemetry-instrumentation (0.5x on) loads an instrumentor only when one distribution of its
``instruments-any`` extra is installed in the range stated there. The package has one entry per
distribution an adapter patches, at the oldest release tested: a process with only a framework or
only mcp is instrumented too. ``make tables`` writes that list into ``package._instruments_any`` and
pyproject.toml from the adapters' ``REQUIRES``, as contrib's packages state it; the instrumentor reads
the stated one (no adapter imported to decide).
"""

from __future__ import annotations

import importlib.metadata

from packaging.requirements import Requirement

from otel_toolcalls import package

DISTRIBUTION = "otel-toolcalls"


def _installed(requirement: str) -> str | None:
    try:
        return importlib.metadata.version(Requirement(requirement).name)
    except importlib.metadata.PackageNotFoundError:
        return None


def instrumentation_dependencies() -> tuple[str, ...]:
    """What ``BaseInstrumentor.instrument()`` is to check, every one required, so that it decides as
    ``instruments-any`` does: the first distribution installed in its range; with none, the ones
    installed out of range (it reports the version conflict), else every one (it reports none found)."""
    listed = package._instruments_any
    installed = [(each, version) for each in listed if (version := _installed(each)) is not None]
    for each, version in installed:
        if Requirement(each).specifier.contains(version):
            return (each,)
    return tuple(each for each, _ in installed) or listed
