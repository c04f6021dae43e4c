"""benchmarks/ (``make bench``) kept working by the package's changes: every name a benchmark takes
from ``otel_toolcalls`` exists, the hot-path benchmark runs on a short stream, and its scripts import
one another without a circle and without another's private names."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = {path.stem: path for path in BENCHMARKS.glob("*.py")}


def _package_imports() -> list[tuple[str, int, str, str | None]]:
    """(script, line, otel_toolcalls module, name taken from it or None), function-level included."""
    found = []
    for stem, path in sorted(SCRIPTS.items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found += [
                    (stem, node.lineno, a.name, None)
                    for a in node.names
                    if a.name.startswith("otel_toolcalls")
                ]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("otel_toolcalls"):
                found += [(stem, node.lineno, node.module or "", a.name) for a in node.names]
    return found


def test_every_name_a_benchmark_takes_from_the_package_exists() -> None:
    imports = _package_imports()
    assert len(imports) > 20  # it reads the scripts' imports, function-level ones included
    missing = []
    for stem, line, module, name in imports:
        try:
            imported = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{stem}.py:{line} {module}: {exc}")
            continue
        if name is not None and not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{stem}.py:{line} {module} has no {name}")
    assert missing == []


def _sibling_edges() -> tuple[dict[str, set[str]], list[str]]:
    edges: dict[str, set[str]] = {stem: set() for stem in SCRIPTS}
    private = []
    for stem, path in SCRIPTS.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges[stem] |= {a.name for a in node.names if a.name in SCRIPTS}
            elif isinstance(node, ast.ImportFrom) and node.module in SCRIPTS and not node.level:
                edges[stem].add(node.module)
                private += [
                    f"{stem} takes {a.name} from {node.module}" for a in node.names if a.name.startswith("_")
                ]
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in SCRIPTS
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                private.append(f"{stem}:{node.lineno} reads {node.value.id}.{node.attr}")
    return edges, private


def _circle_from(start: str, edges: dict[str, set[str]]) -> list[str] | None:
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            found = visit(nxt)
            if found:
                return found
        path.pop()
        return None

    return visit(start)


def test_the_scripts_import_one_another_without_a_circle_or_a_private_name() -> None:
    edges, private = _sibling_edges()
    assert sum(map(len, edges.values())) > 10  # it sees the scripts' imports of one another
    assert [c for stem in sorted(edges) if (c := _circle_from(stem, edges))] == []
    assert private == []
    # It would pass on a graph it cannot read.
    assert _circle_from("a", {"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_the_hot_path_benchmark_runs() -> None:
    # What `make bench` and the hot-path timing run (benchmarks/hotpath.py), on one short stream.
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "hotpath.py"), "--lengths", "50", "--reps", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(result) == ["anthropic", "openai"]
    for provider in result.values():
        for run in provider["50"].values():
            assert run["chunks"] > 0 and run["spans"] == 2  # the inference span and the call's


def test_the_floor_table_keeps_the_per_call_split() -> None:
    # RESULTS.md's per call, split into the SDK's part and the package's own (issue 43, item 5):
    # the slope of each through the turns, from counts whose lines are known.
    sys.path.insert(0, str(BENCHMARKS))
    try:
        turn_report = importlib.import_module("turn_report")
    finally:
        sys.path.remove(str(BENCHMARKS))
    bare = {f"turn{c}": {"instructions_per_stream": 10e6 + c * 1e6} for c in (0, 2, 8)}
    mine = {
        f"turn{c}": {
            # Extra over bare: 600k per stream + 500k per call, of which SDK 400k + 300k per call.
            "instructions_per_stream": 10e6 + c * 1e6 + 600e3 + c * 500e3,
            "sdk_floor_per_stream": 400e3 + c * 300e3,
            "spans": 1 + c,
            "records": 2 + 3 * c,
        }
        for c in (0, 2, 8)
    }
    lines = turn_report.floor_table(
        {"bare": bare, "otel_toolcalls": mine}, {"turn0": 3, "turn2": 3, "turn8": 3}
    )
    header = next(line for line in lines if line.startswith("| variant"))
    row = next(line for line in lines if line.startswith("| otel_toolcalls"))
    cells = dict(zip(header.strip("|").split(" | "), row.strip("|").split(" | "), strict=True))
    assert cells["per call: SDK / own"] == "300.0 / +200.0"
    assert cells["8 calls: SDK / own"] == "2,800 / +1,800"
