"""Which tests are `e2e` and which are `timing` (pyproject registers both), in one place.

`e2e`: needs a program or venv outside the main venv (Debian's prometheus/promtool,
prometheus-alertmanager, redis-server, chromium; the viewer venv; the Go-built binaries under
.pipeline/bin; a peer lane's venv). `timing`: asserts on wall-clock gaps that load can stretch.
Markers only select (`make check` runs `-m "not e2e"`); nothing is skipped because of them.
tests/conftest.py applies them at collection; `guard_which` fails a test that is not marked e2e
yet looks up one of the programs, and tests/repo/test_markers.py fails on a test file that names one.

`missing` is the one place a test decides between skip and fail on a missing piece: `make test`
(which installs them all) sets REQUIRE_ALL and fails; `make check` and a bare pytest skip.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

TESTS = Path(__file__).resolve().parents[1]

# Set by the Makefile's `test` target for everything it runs (the main suite, the lanes).
REQUIRE_ALL = "OTEL_TOOLCALLS_REQUIRE_ALL"


def required() -> bool:
    return os.environ.get(REQUIRE_ALL, "") not in ("", "0")


def missing(what: str, how: str) -> NoReturn:
    """Fail under `make test`, skip elsewhere: ``what`` is missing, ``how`` installs it."""
    if required():
        pytest.fail(f"{what} is missing and `make test` requires it ({REQUIRE_ALL} is set): {how}")
    pytest.skip(f"{what} is missing ({how}); `make test` fails instead of skipping")


# Paths relative to tests/.
E2E_FILES = {
    "downstream/test_prometheus_rules.py": "promtool (Debian's prometheus)",
    "downstream/test_prometheus_e2e.py": "prometheus (Debian's prometheus)",
    "downstream/test_collector_validate.py": "the Go-built jaeger and otelcol-agent under .pipeline/bin",
    "downstream/test_pipeline.py": ".pipeline/bin, prometheus, prometheus-alertmanager",
    "downstream/test_jaeger_viewer.py": "the Go-built jaeger under .pipeline/bin",
    "linking/test_remote_celery.py": "redis-server",
    "downstream/test_viewer.py": "the viewer venv (.venv-viewer) and chromium",
    "peers/test_peers.py": "a peer lane's venv (tests/versions/run.py peer-*)",
    "peers/test_official_executions.py": "a peer-otel-genai lane's venv",
}

# "file" for a whole module, "file::test" for one test (every parametrization of it). Empty: the
# buffered-stream tests and bedrock's block-stop test run on a simulated clock (sim_clock.py); the
# two real-clock buffered tests left cannot fail by load stretching a wait or a gap.
TIMING: dict[str, str] = {}

# The programs only an e2e test may look up (shutil.which).
E2E_PROGRAMS = frozenset({"promtool", "prometheus", "prometheus-alertmanager", "redis-server", "chromium"})


def _where(item: pytest.Item) -> tuple[str, str]:
    path = Path(str(item.path)).resolve()
    try:
        rel = path.relative_to(TESTS).as_posix()
    except ValueError:
        rel = path.name
    return rel, f"{rel}::{getattr(item, 'originalname', item.name)}"


def apply(items: list[pytest.Item]) -> None:
    for item in items:
        rel, test = _where(item)
        if rel in E2E_FILES:
            item.add_marker(pytest.mark.e2e)
        if rel in TIMING or test in TIMING:
            item.add_marker(pytest.mark.timing)


class WhichGuard:
    """shutil.which, failing when a test not marked e2e looks up an e2e program."""

    def __init__(self, which: Callable[..., Any]) -> None:
        self.which = which
        self.current: pytest.Item | None = None

    def __call__(self, cmd: Any, *args: Any, **kwargs: Any) -> Any:
        item = self.current
        program = Path(str(cmd)).name
        if item is not None and program in E2E_PROGRAMS and item.get_closest_marker("e2e") is None:
            raise AssertionError(f"{item.nodeid} looks up {program}, not marked e2e (markers.py)")
        return self.which(cmd, *args, **kwargs)


def install_guard() -> WhichGuard:
    guard = WhichGuard(shutil.which)
    shutil.which = guard  # type: ignore[assignment]
    return guard


def remove_guard(guard: WhichGuard) -> None:
    original = guard.which
    if shutil.which is guard:  # type: ignore[comparison-overlap]
        shutil.which = original
