"""docs/ARCHITECTURE.md is the newcomer's map: every file, folder and test it points to exists, so a
move that forgets the map fails here rather than in a reader's search."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
# `_core/state.py`, `_providers/formats/`, `tests/core/test_x.py::test_y`, `otel_toolcalls/package.py`;
# templates (`<sdk>`) and globs (`*`) are no pointers.
POINTER = re.compile(r"`((?:otel_toolcalls/|tests/|_[a-z]+/|testing/)[^`<>*\s]*)`")


def _pointers() -> list[str]:
    return sorted(set(POINTER.findall(DOC.read_text())))


def _exists(pointer: str) -> bool:
    path = pointer.split("::")[0]
    candidates = [ROOT / path, ROOT / "otel_toolcalls" / path]
    if not any(c.exists() for c in candidates):
        return False
    if "::" in pointer:
        return f"def {pointer.split('::')[1]}(" in (ROOT / path).read_text()
    return True


def test_every_pointer_of_the_architecture_doc_exists() -> None:
    pointers = _pointers()
    assert len(pointers) > 30  # it reads the doc's pointers
    assert [p for p in pointers if not _exists(p)] == []


def test_the_check_sees_a_stale_pointer() -> None:
    assert not _exists("_core/inference_metrics.py")
    assert not _exists("tests/repo/test_import_graph.py::test_no_such_test")
    assert _exists("_core/metrics.py") and _exists(
        "tests/repo/test_import_graph.py::test_the_core_names_no_provider"
    )
