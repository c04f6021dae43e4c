"""The `e2e` list cannot rot: a test file naming a program or venv outside the main venv must be in
tests/helpers/markers.py's E2E_FILES, every listed file and test exists, and the shutil.which guard refuses
an unmarked test's lookup of an e2e program."""

from __future__ import annotations

import re
import shutil
from typing import Any

import markers
import pytest

# What a test file writes when it reaches for something `make check` does not have.
EXTERNAL = re.compile(
    r"""which\(\s*["'][\w-]+["']|["'](promtool|prometheus-alertmanager|redis-server|chromium|\.pipeline)["']"""
    r"|\.venv-viewer|VIEWER_PYTHON|pipeline\.stack|\bredis_server\b|OTEL_TOOLCALLS_PEER|^import drive\b",
    re.MULTILINE,
)
# which() of these is no reach outside: the test's own venv, or a tool test_chaos skips without.
LOCAL = re.compile(r"""which\(\s*["'](opentelemetry-instrument|openssl|python3?)["']""")


def _test_files() -> list[str]:
    return sorted(p.relative_to(markers.TESTS).as_posix() for p in markers.TESTS.rglob("test_*.py"))


def test_every_file_reaching_outside_the_venv_is_marked_e2e() -> None:
    reaching = {
        rel: sorted({m.group(0) for m in EXTERNAL.finditer(text) if not LOCAL.match(m.group(0))})
        for rel in _test_files()
        if rel != "repo/test_markers.py"
        for text in [(markers.TESTS / rel).read_text()]
    }
    unmarked = {rel: found for rel, found in reaching.items() if found and rel not in markers.E2E_FILES}
    assert unmarked == {}, "add these to E2E_FILES in tests/helpers/markers.py"
    # The scan sees each listed file's reason too: a listed file that reaches nothing is stale.
    assert {rel for rel, found in reaching.items() if found} == set(markers.E2E_FILES)


def test_every_listed_file_and_test_exists() -> None:
    files = set(_test_files())
    assert set(markers.E2E_FILES) <= files
    for entry in markers.TIMING:
        rel, _, name = entry.partition("::")
        assert rel in files, entry
        if name:
            text = (markers.TESTS / rel).read_text()
            assert re.search(rf"^(async )?def {name}\(", text, re.MULTILINE), entry


def test_an_unmarked_test_may_not_look_up_an_e2e_program(request: pytest.FixtureRequest) -> None:
    guard: Any = shutil.which
    assert isinstance(guard, markers.WhichGuard) and guard.current is request.node
    assert guard.current.get_closest_marker("e2e") is None
    for program in sorted(markers.E2E_PROGRAMS):
        with pytest.raises(AssertionError, match="not marked e2e"):
            shutil.which(program)
        with pytest.raises(AssertionError, match="not marked e2e"):
            shutil.which(f"/usr/bin/{program}")
    assert shutil.which("python3") is not None


def test_a_marked_test_may(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    guard: Any = shutil.which
    monkeypatch.setattr(guard, "current", request.node)
    request.node.add_marker(pytest.mark.e2e)
    shutil.which("promtool")  # found or None: either way, not refused
