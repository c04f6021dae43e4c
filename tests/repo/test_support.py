"""otel_toolcalls._wiring.tested_versions.TESTED against what the version lane runs
(tests/versions/run.py), and, for the agent frameworks, against the versions their lanes' venvs
pin (tests/frameworks/)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from lanes import FRAMEWORK_VENVS, OTHER_PYTHON_LANES, requirement_pins, requires
from packaging.version import Version

from otel_toolcalls._wiring.tested_versions import SURFACES, TESTED

RUN = Path(__file__).parents[1] / "versions" / "run.py"
# distribution -> the requirements files of the framework lanes that run it
# distribution -> the framework lanes that pin it, for every adapter that patches it (dspy's two).
FRAMEWORKS: dict[str, list[str]] = {}
for _adapter, _lanes in FRAMEWORK_VENVS.items():
    _paths = FRAMEWORKS.setdefault(requires(_adapter).sdk, [])
    _paths += [path for _, path in _lanes if path not in _paths]
# The lanes on another interpreter pin their adapters' distributions the same way.
for _path, _python, _adapters in OTHER_PYTHON_LANES.values():
    for _adapter in _adapters:
        FRAMEWORKS.setdefault(requires(_adapter).sdk, []).append(_path)


def _lane_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("version_lane", RUN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["version_lane"] = module  # dataclasses look the module up while building the class
    spec.loader.exec_module(module)
    return module


def _pinned_by_lanes(lane: ModuleType) -> dict[str, list[str]]:
    """distribution -> the versions the lanes pin it to (a floor lane: pyproject's floor)."""
    pinned: dict[str, list[str]] = {}
    for each in lane.LANES:
        if each.peer:
            continue  # another instrumentation beside the package, not an SDK it supports (docs/SUPPORT.md)
        for spec in lane.requirements(each, lane.FLOORS)[: len(each.pins)]:
            name, version = spec.split("==")
            pinned.setdefault(name.split("[", 1)[0].lower(), []).append(version)
    return pinned


def test_oldest_tested_is_the_lowest_version_a_lane_runs() -> None:
    pinned = _pinned_by_lanes(_lane_module())
    for name, (oldest, _newest) in TESTED.items():
        if name in FRAMEWORKS:
            continue  # run in its framework venv, below
        assert name in pinned, f"no lane runs {name}"
        assert Version(oldest) == min(Version(v) for v in pinned[name]), name


def test_every_floor_a_lane_runs_is_in_the_table() -> None:
    lane = _lane_module()
    for name in _pinned_by_lanes(lane):
        assert name in TESTED, f"{name} is run by a lane but missing from _support.TESTED"
        if name in lane.FLOORS:
            assert Version(TESTED[name][0]) == Version(lane.FLOORS[name]), name


def test_every_version_a_lane_pins_is_inside_the_tested_range() -> None:
    # A release between floor and newest (main-frameworks-mid) is a claim too: inside the range.
    for name, versions in _pinned_by_lanes(_lane_module()).items():
        oldest, newest = (Version(v) for v in TESTED[name])
        assert all(oldest <= Version(v) <= newest for v in versions), (name, versions)


def test_a_framework_is_tested_from_the_oldest_to_the_newest_version_its_lanes_pin() -> None:
    for name, paths in FRAMEWORKS.items():
        pins = [requirement_pins(path).get(name) for path in paths]
        assert None not in pins, f"one of {paths} does not pin {name}"
        versions = sorted(Version(pin) for pin in pins if pin is not None)
        assert (Version(TESTED[name][0]), Version(TESTED[name][1])) == (versions[0], versions[-1]), name


def test_newest_is_not_older_than_oldest() -> None:
    for name, (oldest, newest) in TESTED.items():
        assert Version(newest) >= Version(oldest), name


def test_a_surface_range_starts_at_the_oldest_lane_running_its_tests() -> None:
    lane = _lane_module()
    for adapter, (oldest, newest) in SURFACES.items():
        sdk = requires(adapter).sdk
        tests = f"tests/providers/test_{adapter}.py"
        versions = [
            Version(spec.split("==")[1])
            for each in lane.LANES
            if tests in each.tests
            for spec in lane.requirements(each, lane.FLOORS)[: len(each.pins)]
            if spec.split("[", 1)[0].split("==")[0].lower() == sdk
        ]
        # A surface whose tests run in a lane on another interpreter: the versions it pins.
        versions += [
            Version(version)
            for path, _, adapters in OTHER_PYTHON_LANES.values()
            if adapter in adapters
            for dist, version in requirement_pins(path).items()
            if dist == sdk
        ]
        assert versions, f"no lane runs {tests}"
        assert Version(oldest) == min(versions), adapter
        assert Version(newest) == Version(TESTED[sdk][1]), adapter


# docs/SUPPORT.md: its tested-versions table is written by `make tables` (tests/repo/test_tables.py
# fails when it is stale); the provider and framework rows name, for each distribution an adapter
# patches, versions inside the tested range, up to the newest.
PAGE = Path(__file__).resolve().parents[2] / "docs" / "SUPPORT.md"
DASH = " \u2013 "  # the page's range dash
VERSION = re.compile(r"\b\d+\.\d+(?:\.\d+)?(?:[a-z]+\d+)?\b")


def _claims(page: str) -> dict[str, list[Version]]:
    """distribution -> the versions the rows' last cell ("tested versions") names after it."""
    claims: dict[str, list[Version]] = {}
    in_table = False
    for line in page.splitlines():
        if line.startswith("|") and line.rstrip().endswith("| tested versions |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---"):
            cell = line.rstrip().rstrip("|").rsplit("|", 1)[1]
            parts = re.split(r"`([^`]+)`", cell)  # text, name, text, name, text...
            for name, after in zip(parts[1::2], parts[2::2], strict=False):
                if name in TESTED:
                    claims.setdefault(name, []).extend(Version(v) for v in VERSION.findall(after))
    return claims


def _disagreements(page: str) -> list[str]:
    found = []
    for dist, versions in _claims(page).items():
        oldest, newest = (Version(v) for v in TESTED[dist])
        found += [
            f"{dist} {v} is outside {oldest}{DASH}{newest}" for v in versions if not oldest <= v <= newest
        ]
        if versions and max(versions) != newest:
            found.append(f"{dist}: the rows' newest is {max(versions)}, the table's {newest}")
    return found


def test_the_support_page_agrees_with_the_table() -> None:
    assert _disagreements(PAGE.read_text()) == []


def test_the_check_sees_a_stale_page() -> None:
    page = PAGE.read_text()
    newest = TESTED["openai"][1]
    moved_on = _disagreements(page.replace(newest, "2.99.0"))  # a newer release, the page not rewritten
    assert f"openai: the rows' newest is 2.99.0, the table's {newest}" in moved_on
    assert "ollama 0.3.0 is outside 0.4.0 \u2013 0.6.3" in _disagreements(
        page.replace("`ollama` 0.4.0", "`ollama` 0.3.0")
    )


