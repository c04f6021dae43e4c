"""Tests are grouped by what they test (README, Development): no test file at the top of tests/, and
every test path the repository names (the lanes' runner, the Makefile, docs, comments) exists, so a
move or a merge that leaves a stale path fails here rather than in a lane that collects nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# `tests/core/test_core.py`, `tests/providers/test_bedrock.py::test_x`, `tests/helpers/markers.py`.
PATH = re.compile(r"(?<![\w./-])tests/[\w/]*?\w+\.py(?:::\w+)?")
WHERE = ["README.md", "Makefile", "pyproject.toml", ".ci", "docs", "tests", "examples", "benchmarks",
         "collector-config", "otel_toolcalls"]  # fmt: skip
SUFFIXES = {".py", ".md", ".txt", ".yaml", ".yml", ".toml", ""}
# Paths in the SDKs' own trees (tests/sdk_suites/run.py runs their suites), not in this repository.
THEIRS = {"tests/test_client.py", "tests/test_send_queue_reconnect.py",
          "tests/lib/test_fine_tuning_positional_arguments.py"}  # fmt: skip
# The checks of stale paths, whose examples are stale on purpose.
CHECKS = {TESTS / "repo" / "test_test_paths.py", TESTS / "repo" / "test_architecture_pointers.py"}


def _files() -> list[Path]:
    out: list[Path] = []
    for name in WHERE:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        out += [p for p in candidates if p.is_file() and p.suffix in SUFFIXES and p not in CHECKS]
    return out


def _exists(pointer: str) -> bool:
    path, _, name = pointer.partition("::")
    if not (ROOT / path).is_file():
        return False
    return not name or re.search(rf"^(async )?def {name}\(", (ROOT / path).read_text(), re.M) is not None


def test_no_test_file_at_the_top_of_tests() -> None:
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_every_test_path_named_in_the_repository_exists() -> None:
    named: dict[str, set[str]] = {}
    for file in _files():
        for pointer in PATH.findall(file.read_text(errors="replace")):
            named.setdefault(pointer, set()).add(file.relative_to(ROOT).as_posix())
    assert len(named) > 50  # it reads the Makefile, the lanes and the docs
    stale = {p: sorted(where) for p, where in named.items() if p not in THEIRS and not _exists(p)}
    assert stale == {}


def test_the_check_sees_a_stale_path() -> None:
    assert PATH.findall("runs `tests/test_core.py` and tests/core/test_core.py::test_x.") == [
        "tests/test_core.py",
        "tests/core/test_core.py::test_x",
    ]
    assert not _exists("tests/test_core.py")
    assert not _exists("tests/core/test_core.py::test_no_such_test")
    assert _exists("tests/repo/test_test_paths.py::test_the_check_sees_a_stale_path")



def _missing_imports(path: Path) -> list[str]:
    """The modules ``path`` imports at its top that this venv cannot import."""
    import ast
    import importlib.util

    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        local = (TESTS / "helpers" / f"{name}.py").exists()
        if not found and not local:
            missing.append(name)
    return missing


def test_every_framework_module_is_collected_only_where_its_framework_is() -> None:
    # A test module importing at its top what this venv lacks stops the whole suite at collection,
    # unless tests/conftest.py's table leaves it uncollected here.
    listed = _conftest_rows()
    modules = sorted((TESTS / "frameworks").rglob("test_*.py"))
    assert len(modules) >= 20
    names = [p.relative_to(TESTS).as_posix() for p in modules if _missing_imports(p)]
    assert [name for name in names if name not in listed] == []


def _conftest_rows() -> list[str]:
    """The test modules tests/conftest.py's lane tables name (relative to tests/)."""
    return re.findall(r'"([\w/]+\.py)": ', (TESTS / "conftest.py").read_text())


def test_every_row_of_the_conftests_lane_tables_is_a_test_module() -> None:
    # A stale row (a module moved) leaves the framework venvs collecting nothing of it, silently.
    rows = _conftest_rows()
    assert len(rows) >= 13  # it reads FRAMEWORK_VENV_TESTS and _LANE_SDK_OF
    assert [row for row in rows if not (TESTS / row).is_file()] == []
