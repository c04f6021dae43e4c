"""The SDK-suites lane (tests/sdk_suites/run.py) cannot lose tests: a pytest exit status its outcome
files do not explain, a test run with no outcome (its process died), a test one side collects and
the other does not, each fails the lane; and the by-design rule excuses a failure only when the one
extra ``toolcall.outcome`` item is its whole difference. The sessions judged are real pytest
sessions of small test files, run with the lane's plugin; their reports are pytest's own."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "sdk_suites_run_lane", Path(__file__).parents[1] / "sdk_suites" / "run.py"
)
assert _SPEC is not None and _SPEC.loader is not None
run = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = run  # its dataclass looks its module up
_SPEC.loader.exec_module(run)

DIFFS = """
def test_by_design():
    assert {"a": 1, "toolcall.outcome": "completed"} == {"a": 1}

def test_by_design_aborted_among_many():
    right = {f"key{i}": "x" * 30 for i in range(10)}
    assert {**right, "toolcall.outcome": "aborted"} == right

def test_mixed():
    assert {"a": 1, "b": 99, "toolcall.outcome": "completed"} == {"a": 1, "b": 2}

def test_right_has_more():
    assert {"a": 1, "toolcall.outcome": "completed"} == {"a": 1, "c": 3}

def test_left_has_two_more():
    assert {"a": 1, "d": 4, "toolcall.outcome": "completed"} == {"a": 1}

def test_another_value():
    assert {"a": 1, "toolcall.outcome": "unknown"} == {"a": 1}

def test_in_a_list():
    assert [{"a": 1, "toolcall.outcome": "completed"}] == [{"a": 1}]
"""
DESIGNED = ["test_by_design", "test_by_design_aborted_among_many"]


def session(tmp_path: Path, files: dict[str, str], *args: str, name: str = "run", **env: str) -> dict:
    """A pytest session of ``files`` with the lane's plugin (bare), as run.py runs and reads one."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for path, text in files.items():
        (tmp_path / path).write_text(text)
    out = tmp_path / "results" / name
    out.parent.mkdir(exist_ok=True)
    environ = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    environ.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", SDK_SUITE_MODE="bare", **env)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "outcome_plugin",
           "--continue-on-collection-errors", *args]  # fmt: skip
    return run.pytest_session(cmd, out, tmp_path / "log", tmp_path, environ)


def passed_bare(names: list[str]) -> dict:
    return {"outcomes": dict.fromkeys(names, "passed"), "failures": {}}


@pytest.mark.parametrize("style", [["--tb=short"], ["-v"], ["-vv", "--tb=long"]])
def test_only_the_one_extra_outcome_item_is_by_design(tmp_path, style) -> None:
    instrumented = session(tmp_path, {"test_diffs.py": DIFFS}, *style)
    failed = sorted(instrumented["failures"])
    assert len(failed) == 7
    bare = passed_bare(failed)
    assert sorted(name for name in failed if run.by_design(name, bare, instrumented)) == [
        f"test_diffs.py::{name}" for name in DESIGNED
    ]


def test_a_mixed_failure_carries_the_known_line_and_is_not_excused(tmp_path) -> None:
    instrumented = session(tmp_path, {"test_diffs.py": DIFFS}, "--tb=short")
    mixed = "test_diffs.py::test_mixed"
    assert "{'toolcall.outcome': 'completed'}" in instrumented["failures"][mixed]
    assert "{'b': 99} != {'b': 2}" in instrumented["failures"][mixed]
    first = {**instrumented, "outcomes": {mixed: "failed"}}
    assert not run.settle("sdk", "1.0", first, passed_bare([mixed]), first)
    designed = "test_diffs.py::test_by_design"
    first = {**instrumented, "outcomes": {designed: "failed"}}
    assert run.settle("sdk", "1.0", first, passed_bare([designed]), first)


def test_a_failure_that_explains_the_exit_status_loses_nothing(tmp_path) -> None:
    files = {"test_one.py": "def test_fails():\n    assert 1 == 2\n\ndef test_passes():\n    pass\n"}
    ended = session(tmp_path, files)
    assert ended["status"] == 1
    assert ended["outcomes"] == {"test_one.py::test_fails": "failed", "test_one.py::test_passes": "passed"}
    assert run.lost(ended) == []


@pytest.mark.parametrize(
    ("conftest", "body", "args", "why"),
    [
        ("", "pytest.exit('stop', returncode=1)", [], "exit 1 (tests failed) and no failure recorded"),
        ("", "raise KeyboardInterrupt", [], "exit 2 (interrupted)"),
        ("def pytest_runtest_logreport(report):\n    raise RuntimeError\n", "pass", [], "exit 3 (pytest's "),
        ("", "pass", ["--no-such-option"], "exit 4 (a usage error)"),
        ("", "os._exit(1)", [], "exit 1 (tests failed) and no failure recorded"),
    ],
    ids=["pytest-exit", "interrupted", "internal-error", "usage-error", "process-died"],
)
def test_an_exit_status_no_failure_explains_loses_tests(tmp_path, conftest, body, args, why) -> None:
    test = f"import os\nimport pytest\n\ndef test_first():\n    {body}\n\ndef test_second():\n    pass\n"
    ended = session(tmp_path, {"conftest.py": conftest, "test_two.py": test}, *args)
    problems = run.lost(ended)
    assert any(problem.startswith(why) for problem in problems), problems
    assert not run.accounted("sdk", {"instrumented": ended}, None)


def test_a_process_that_dies_leaves_its_collected_tests_without_outcome(tmp_path) -> None:
    test = "import os\n\ndef test_dies():\n    os._exit(1)\n\ndef test_never_runs():\n    pass\n"
    ended = session(tmp_path, {"test_dies.py": test})
    assert ended["selected"] == ["test_dies.py::test_dies", "test_dies.py::test_never_runs"]
    assert ended["outcomes"] == {}
    assert (
        "2 tests it ran have no outcome: test_dies.py::test_dies, test_dies.py::test_never_runs"
        in run.lost(ended)
    )


def test_a_crashed_xdist_worker_loses_tests_even_beside_a_real_failure() -> None:
    # The shape of a session whose worker gw0 died: its file was never written, gw1's holds a real
    # failure (so exit 1 is explained), and xdist's controller said so in the log.
    crashed = {
        **run.empty_record(),
        "status": 1,
        "selected": ["t.py::a", "t.py::b", "t.py::c"],
        "collected": ["t.py::a", "t.py::b", "t.py::c"],
        "outcomes": {"t.py::c": "failed"},
        "crashed": ["[gw0] node down: Not properly terminated", "replacing crashed worker gw0"],
    }
    problems = run.lost(crashed)
    assert problems[0] == "2 tests it ran have no outcome: t.py::a, t.py::b"
    assert problems[1:] == [f"the log says: {line}" for line in crashed["crashed"]]


def test_a_test_one_side_collects_and_the_other_does_not_fails_the_lane(tmp_path, capsys) -> None:
    test = "import os\n\ndef test_both():\n    pass\n\nif os.environ.get('EXTRA'):\n    def test_extra():\n"
    files = {"test_sides.py": test + "        pass\n"}
    bare = session(tmp_path, files, "--collect-only", name="bare")
    assert (bare["collected"], bare["selected"], bare["outcomes"]) == (["test_sides.py::test_both"], [], {})
    instrumented = session(tmp_path, files, name="instrumented", EXTRA="1")
    assert run.lost(bare) == run.lost(instrumented) == []
    assert run.accounted("sdk", {"bare": bare}, (bare, bare))
    assert not run.accounted("sdk", {"bare": bare, "instrumented": instrumented}, (bare, instrumented))
    assert (
        "lost: sdk 1 tests collected instrumented only: test_sides.py::test_extra" in capsys.readouterr().out
    )


def test_a_re_run_records_the_whole_collection_and_runs_only_its_ids(tmp_path) -> None:
    (tmp_path / "ids").write_text("test_sides.py::test_b\n")
    test = "def test_a():\n    pass\n\ndef test_b():\n    pass\n"
    again = session(tmp_path, {"test_sides.py": test}, SDK_SUITE_ONLY=str(tmp_path / "ids"))
    assert again["collected"] == ["test_sides.py::test_a", "test_sides.py::test_b"]
    assert again["selected"] == ["test_sides.py::test_b"]
    assert again["outcomes"] == {"test_sides.py::test_b": "passed"}
    assert run.lost(again) == []


def test_a_re_run_its_ids_do_not_select_exits_5_and_loses_nothing_it_was_to_run(tmp_path) -> None:
    # The ids it did not select are settle's to fail (not re-run): pytest's 5 says only that.
    (tmp_path / "ids").write_text("test_gone.py::test_renamed\n")
    files = {"test_gone.py": "def test_a():\n    pass\n"}
    again = session(tmp_path, files, "test_gone.py", SDK_SUITE_ONLY=str(tmp_path / "ids"))
    assert (again["status"], again["selected"], again["collected"]) == (5, [], ["test_gone.py::test_a"])
    assert run.lost(again) == []
    assert run.lost({**again, "selected": ["test_gone.py::test_a"]})[0].startswith(
        "exit 5 (no tests collected)"
    )
