"""No test decides skip-or-fail on an environment variable that `make test` does not set itself: a
gate on one the caller may or may not set (CI) makes the same command pass on one machine and skip
everything on another.

What the scan reads (every .py file under tests/, parsed, not run):
- an *environment read*: ``os.environ.get(N)``, ``os.getenv(N)``, ``os.environ[N]``, ``N in
  os.environ``, N a string literal or a module-level string constant (any other N counts as "?");
- a name assigned (anywhere in the module) from an expression holding a read or such a name carries
  its variables; so does a function whose body holds one, for calls by its name in its own module
  and ``module.name(...)`` calls elsewhere (``markers.required()``);
- a *gate*: ``*.skipif(condition, ...)``, or ``pytest.skip / fail / xfail / importorskip(...)``
  under an ``if``, ``while`` or conditional expression of its own function whose test carries a
  variable.
What `make test` sets: the variables the Makefile's ``test`` target exports, and those
tests/versions/run.py writes into a lane's environment (``env["N"] = ...``), as `make test` runs it.

Its limits: a read through anything else (``os.environ.copy()``, ``dict(os.environ)``, a name built
at run time, a setting object) is not seen; names are tracked per module, not per scope, so a reused
name can carry variables it does not hold (a false alarm, never a miss); a gate that calls a helper
which skips (rather than calling pytest there) counts in the helper only if the helper tests the
variable itself; a test that returns early without skipping on a variable is no gate here; a
conftest that deselects or ignores files by a variable is not seen.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import markers
import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SKIPPING = {"skip", "fail", "xfail", "importorskip"}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

# (module stem, function) -> the variables the function's body reads
Carried = dict[tuple[str, str], set[str]]


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


class Module:
    """One parsed file: its string constants and the names and functions carrying variables."""

    def __init__(self, path: Path, functions: Carried) -> None:
        self.stem = path.stem
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.constants = {
            target.id: node.value.value
            for node in self.tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }  # fmt: skip
        self.names: dict[str, set[str]] = {}
        self.functions = functions

    def _variable(self, node: ast.AST) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        return "?"

    def _called(self, func: ast.AST) -> set[str]:
        if isinstance(func, ast.Name):
            return self.functions.get((self.stem, func.id), set())
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return self.functions.get((func.value.id, func.attr), set())
        return set()

    def _read(self, node: ast.AST) -> set[str]:
        if isinstance(node, ast.Call):
            func = node.func
            getter = isinstance(func, ast.Attribute) and (
                (func.attr == "get" and _is_environ(func.value)) or func.attr == "getenv"
            )
            if (getter or (isinstance(func, ast.Name) and func.id == "getenv")) and node.args:
                return {self._variable(node.args[0])} | self._called(func)
            return self._called(func)
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            return {self._variable(node.slice)}
        if isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            return {self._variable(node.left)}
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            return self.names.get(node.id, set())
        return set()

    def reads(self, node: ast.AST) -> set[str]:
        """The variables an expression (or statement) reads, directly or through what carries them."""
        return {variable for sub in ast.walk(node) for variable in self._read(sub)}

    def spread(self) -> bool:
        """Assignments and function bodies pass on what they read; True if anything new was carried."""
        grew = False
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found = self.reads(node.value)
                for target in targets:
                    for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                        grew |= not found <= self.names.setdefault(name, set())
                        self.names[name] |= found
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found = set().union(*(self.reads(statement) for statement in node.body))
                carried = self.functions.setdefault((self.stem, node.name), set())
                grew |= not found <= carried
                carried |= found
        return grew

    def gates(self) -> Iterator[tuple[int, set[str]]]:
        parents = {child: node for node in ast.walk(self.tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr == "skipif" and node.args:
                yield node.lineno, self.reads(node.args[0])
            elif node.func.attr in SKIPPING and ast.unparse(node.func.value) == "pytest":
                found: set[str] = set()
                up = parents.get(node)
                while up is not None and not isinstance(up, FUNCTIONS):
                    if isinstance(up, (ast.If, ast.IfExp, ast.While)):
                        found |= self.reads(up.test)
                    up = parents.get(up)
                yield node.lineno, found


def scan(paths: list[Path], root: Path) -> dict[str, set[str]]:
    """``file:line`` -> the variables each gate there reads (gates reading none are left out)."""
    functions: Carried = {}
    modules = {path: Module(path, functions) for path in paths}
    while any([module.spread() for module in modules.values()]):
        pass
    return {
        f"{path.relative_to(root).as_posix()}:{line}": variables
        for path, module in modules.items()
        for line, variables in module.gates()
        if variables
    }


def set_by_make_test() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    exported = set(re.findall(r"^test: export ([A-Za-z_][A-Za-z0-9_]*)", makefile, re.MULTILINE))
    runner = ast.parse((TESTS / "versions" / "run.py").read_text(encoding="utf-8"))
    lanes = {
        target.slice.value
        for node in ast.walk(runner)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "env"
        and isinstance(target.slice, ast.Constant)
    }  # fmt: skip
    return exported | lanes


def test_no_test_gates_skip_or_fail_on_a_variable_make_test_does_not_set() -> None:
    gates = scan(sorted(TESTS.rglob("*.py")), ROOT)
    made = set_by_make_test()
    assert markers.REQUIRE_ALL in made  # the Makefile's test target exports it
    # The scan sees the gates it must: markers.missing's, and the peer lanes' (tests/peers).
    assert any(markers.REQUIRE_ALL in variables for variables in gates.values()), gates
    assert any(where.startswith("tests/peers/") for where in gates), gates
    unset = {where: sorted(variables - made) for where, variables in gates.items() if variables - made}
    assert unset == {}, f"gates on variables `make test` does not set (it sets {sorted(made)})"


PLANTED = {
    "if_fail": (
        'import os, pytest\ndef f():\n    if os.environ.get("CI"):\n        pytest.fail("")\n',
        {"CI"},
    ),
    "skipif_through_a_name": (
        'import os, pytest\nLANE = os.getenv("A")\nWHICH = {"x": 1}.get(LANE)\n'
        "pytestmark = pytest.mark.skipif(not WHICH, reason='r')\n",
        {"A"},
    ),
    "through_a_function": (
        'import os, pytest\nNAME = "B"\ndef on():\n    return NAME in os.environ\n'
        "def g():\n    x = 1 if not on() else pytest.skip('r')\n",
        {"B"},
    ),
    "subscript_in_else": (
        "import os, pytest\ndef h():\n    if os.environ['C'] == '1':\n        pass\n    else:\n"
        "        pytest.importorskip('m')\n",
        {"C"},
    ),
    "read_for_a_subprocess_only": (
        "import os, pytest\ndef k():\n    env = {**os.environ, 'D': '1'}\n    pytest.skip('always')\n",
        set(),
    ),
}


@pytest.mark.parametrize("case", list(PLANTED))
def test_the_scan_sees_each_form_of_gate(tmp_path: Path, case: str) -> None:
    source, expected = PLANTED[case]
    path = tmp_path / f"planted_{case}.py"
    path.write_text(source)
    found = set().union(*scan([path], tmp_path).values())
    assert found == expected
