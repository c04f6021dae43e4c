"""Every failure the package catches to protect the host is counted: a handler of ``Exception`` or
``BaseException`` in the package (``testing/`` aside) re-raises, or hands the exception to
``errors.report`` / ``errors.guarded`` (``toolcall.internal_errors`` by ``error.site``), or is
listed here with the reason it is not the package's failure or cannot be counted. Failing here
names the function that swallows one at DEBUG (or not at all)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import otel_toolcalls

ROOT = Path(otel_toolcalls.__file__).parent
COUNTING = frozenset({"report", "guarded"})
BROAD = frozenset({"Exception", "BaseException"})

# "module path:function" -> why its broad handler neither re-raises nor reports.
NOT_COUNTED = {
    "_core/errors.py:report": "report itself: a meter that raises cannot count its own failure",
    "_core/counts.py:Counts._observe": (
        "inside the SDK's collection callback: counting there adds to an instrument being collected"
    ),
    "_core/process.py:after_fork_in_child": (
        "errors imports process (its warned sites): the at-fork hook cannot import it back"
    ),
    "_wiring/patches.py:resolve": "an SDK release without the target: the answer None, not a failure",
    "_wiring/instrumentor.py:ToolCallsInstrumentor._instrument": (
        "instrument() time: said at WARNING each time, naming the adapter"
    ),
    "_wiring/instrumentor.py:ToolCallsInstrumentor._apply": (
        "an adapter's instrument(): said at WARNING each time, naming it (_report_missing is counted)"
    ),
    "_wiring/instrumentor.py:ToolCallsInstrumentor._uninstrument": (
        "uninstrument() time: said at WARNING each time, naming the adapter"
    ),
    "_wiring/imports.py:_run_ready": "the instrumentor's callback, which says its own failures at WARNING",
    "_sdks/returned.py:_relay": "what the consumer throws in: handed to the SDK's generator, not a failure",
    "_cli/doctor.py:_import_errors": "the CLI's own check: printed to its user, no host to protect",
}


def _handlers(tree: ast.AST) -> Iterator[tuple[str, ast.ExceptHandler]]:
    """(qualified name of the enclosing function, handler) for every broad handler."""

    def walk(node: ast.AST, stack: list[str]) -> Iterator[tuple[str, ast.ExceptHandler]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from walk(child, [*stack, child.name])
                continue
            if isinstance(child, ast.ExceptHandler) and _broad(child):
                yield ".".join(stack), child
            yield from walk(child, stack)

    yield from walk(tree, [])


def _broad(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(name, ast.Name) and name.id in BROAD for name in names)


def _counts_or_raises(handler: ast.ExceptHandler) -> bool:
    for node in ast.walk(handler):
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in COUNTING:
                return True
    return False


def _uncounted() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if "testing" in relative.parts:
            continue
        for function, handler in _handlers(ast.parse(path.read_text())):
            if not _counts_or_raises(handler):
                found[f"{relative}:{function}"] = handler.lineno
    return found


def test_every_caught_failure_is_counted_or_says_why_not() -> None:
    uncounted = _uncounted()
    assert {key: line for key, line in uncounted.items() if key not in NOT_COUNTED} == {}
    # An entry whose handler went away (or now counts) is stale.
    assert sorted(set(NOT_COUNTED) - set(uncounted)) == []


def test_the_walk_sees_the_execution_side() -> None:
    # The check above would pass on a walk that finds no handler.
    counted = {
        f"{path.relative_to(ROOT)}:{function}"
        for path in sorted((ROOT / "_linking").glob("*.py"))
        for function, handler in _handlers(ast.parse(path.read_text()))
        if _counts_or_raises(handler)
    }
    execute = {"_linking/execute.py:execute_tool.__enter__", "_linking/execute.py:execute_tool._finish"}
    assert execute <= counted
    assert "_linking/runner.py:Execution.__exit__" in counted
