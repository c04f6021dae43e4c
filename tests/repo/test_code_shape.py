"""The package's own shape (the project's style): no function over 60 lines, ``testing/`` aside, and
none in the tests' helpers (tests/helpers/). A module is one idea however long that takes, so modules
have no cap. Failing here names the function that outgrew it."""

from __future__ import annotations

import ast
from pathlib import Path

import otel_toolcalls

ROOT = Path(otel_toolcalls.__file__).parent
HELPERS = Path(__file__).resolve().parents[1] / "helpers"
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    package = [p for p in sorted(ROOT.rglob("*.py")) if "testing" not in p.relative_to(ROOT).parts]
    return package + sorted(HELPERS.rglob("*.py"))


def test_no_function_over_60_lines() -> None:
    over = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    over[f"{path.relative_to(ROOT.parent)}:{node.name}"] = size
    assert over == {}


def test_the_walk_sees_the_package() -> None:
    # The limit above would pass on an empty walk.
    names = {str(p.relative_to(ROOT)) for p in _modules() if p.is_relative_to(ROOT)}
    assert {"_core/state.py", "_core/request.py", "_sdks/stainless.py"} <= names
    names = {str(p.relative_to(ROOT.parent)) for p in _modules()}
    assert {"tests/helpers/lanes.py", "tests/helpers/matrix/drivers.py"} <= names
