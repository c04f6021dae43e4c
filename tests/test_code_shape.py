"""The package's own size limits (the project's style): no module over 300 lines, no function over
60, ``testing/`` aside. Failing here names the module or function that outgrew them."""

from __future__ import annotations

import ast
from pathlib import Path

import otel_toolcalls

ROOT = Path(otel_toolcalls.__file__).parent
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return [p for p in sorted(ROOT.rglob("*.py")) if "testing" not in p.relative_to(ROOT).parts]


def test_no_module_over_300_lines() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in _modules()}
    over = {name: size for name, size in sizes.items() if size > MAX_MODULE_LINES}
    assert over == {}


def test_no_function_over_60_lines() -> None:
    over = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    over[f"{path.relative_to(ROOT)}:{node.name}"] = size
    assert over == {}


def test_the_walk_sees_the_package() -> None:
    # The limits above would pass on an empty walk.
    names = {p.name for p in _modules()}
    assert {"_core.py", "_request.py", "_stainless.py"} <= names
