"""docs/ARCHITECTURE.md is the newcomer's map: every file, folder and test it points to exists, so a
move that forgets the map fails here rather than in a reader's search; the README and the other
docs likewise, and the retired words stay retired."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
# `_core/state.py`, `_providers/formats/`, `tests/core/test_x.py::test_y`, `otel_toolcalls/package.py`;
# a template (`_providers/<sdk>.py`) or a glob (`tests/linking/test_remote_*.py`) must match a file.
POINTER = re.compile(r"`((?:otel_toolcalls/|tests/|_[a-z]+/|testing/)[^`\s]*)`")
TEMPLATE = re.compile(r"<[a-z_]+>")


def _pointers() -> list[str]:
    return sorted(set(POINTER.findall(DOC.read_text())))


def _exists(pointer: str) -> bool:
    path = pointer.split("::")[0]
    if "*" in path or TEMPLATE.search(path):
        pattern = TEMPLATE.sub("*", path).rstrip("/")
        return any(next(base.glob(pattern), None) for base in (ROOT, ROOT / "otel_toolcalls"))
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


# Paths inside the SDKs' own sdists (docs/DEVELOPMENT.md, make sdk-suites), not in this repository.
ELSEWHERE = {
    "tests/lib",
    "tests/lib/test_fine_tuning_positional_arguments.py",
    "tests/test_send_queue_reconnect.py",
}


def test_every_pointer_of_the_other_docs_exists() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = {
        f"{doc.relative_to(ROOT)}: {pointer}"
        for doc in docs
        for pointer in POINTER.findall(doc.read_text())
        if pointer not in ELSEWHERE and not _exists(pointer)
    }
    assert len(docs) >= 6 and found == set()


def test_the_check_sees_a_stale_pointer() -> None:
    assert not _exists("_core/inference_metrics.py")
    assert not _exists("tests/test_<sdk>.py") and not _exists("tests/test_remote_*.py")
    assert _exists("tests/providers/test_<sdk>.py") and _exists("_providers/formats/*.py")
    assert not _exists("tests/repo/test_import_graph.py::test_no_such_test")
    assert _exists("_core/metrics.py") and _exists(
        "tests/repo/test_import_graph.py::test_the_core_names_no_provider"
    )


# Words retired for one word per idea (docs/ARCHITECTURE.md, "Words"): what each became.
RETIRED = {
    r"\bforeign\b": "peer (another instrumentation's span)",
    r"someone else's": "peer span, SDK span, adopted span, a framework's own span",
    r"\bprocess_(chunk|event|message)\b": "translate_chunk / translate_event / translate_message",
    r"\bsink\.Handler\b|\bstream\.Process\b": "sink.Translator",
    r"_providers[/.](stainless|returned|servers)\b": "_sdks/",
    r"\bMETRIC_(CALLS|DURATION|ARGUMENTS_SIZE|ARGUMENTS_DELTAS)\b": "METRIC_TOOLCALL_*",
}


def _retired_in(text: str) -> list[str]:
    return [pattern for pattern in RETIRED if re.search(pattern, text, re.IGNORECASE)]


def _texts() -> dict[str, str]:
    # The package, its docs and benchmarks; not the tests, whose checks plant the retired words.
    files = [*(ROOT / "otel_toolcalls").rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    files += [*(ROOT / "benchmarks").glob("*.py")]
    return {str(p.relative_to(ROOT)): p.read_text() for p in files}


def test_retired_words_stay_retired() -> None:
    texts = _texts()
    assert len(texts) > 100 and {"docs/ARCHITECTURE.md", "benchmarks/hotpath.py"} <= set(texts)
    assert {name: _retired_in(text) for name, text in texts.items() if _retired_in(text)} == {}


def test_the_check_sees_a_retired_word() -> None:
    assert _retired_in("the foreign span; process_chunk(state, c); n.METRIC_DURATION") == [
        r"\bforeign\b",
        r"\bprocess_(chunk|event|message)\b",
        r"\bMETRIC_(CALLS|DURATION|ARGUMENTS_SIZE|ARGUMENTS_DELTAS)\b",
    ]
    assert _retired_in("translate_chunk, a peer's span, METRIC_TOOLCALL_DURATION") == []


def test_the_map_names_each_command_where_its_code_is() -> None:
    # The chaos proxy's code is testing/chaos.py, run as `otel-toolcalls chaos`: the map says so.
    from otel_toolcalls._cli import main

    text = DOC.read_text()
    where = {
        name: module.removeprefix("otel_toolcalls.").replace(".", "/") + ".py"
        for name, (module, _) in main._COMMANDS.items()
    }
    assert {"doctor", "chaos"} <= set(where)
    assert [f"{name} ({path}" for name, path in where.items() if f"{name} ({path}" not in text] == []


IMAGE = re.compile(r"!\[[^\]]+\]\(([^)]+)\)")


def test_the_readme_shows_a_trace_near_its_top() -> None:
    # The first screen a newcomer reads: a picture of what the package records, before the set-up.
    text = (ROOT / "README.md").read_text()
    head = "\n".join(text.splitlines()[:20])
    images = IMAGE.findall(head)
    assert images and all((ROOT / image).is_file() for image in IMAGE.findall(text))
