"""The SDK-suites lane's comparison (tests/sdk_suites/run.py ``settle``): what fails the lane when
only the tests that did not pass instrumented are run again, bare and instrumented."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "sdk_suites_run", Path(__file__).parents[1] / "sdk_suites" / "run.py"
)
assert _SPEC is not None and _SPEC.loader is not None
run = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = run  # its dataclass looks its module up
_SPEC.loader.exec_module(run)

DESIGNED = (
    "AssertionError: assert {...} == {...}\n  Left contains 1 more item:\n  {'toolcall.outcome': 'completed'}"
)


def session(outcomes: dict[str, str], failures: dict[str, str] | None = None, errors=None) -> dict:
    return {"outcomes": outcomes, "errors": errors or {}, "failures": failures or {}, "durations": {}}


def settle(first: dict, bare: dict, again: dict) -> bool:
    return run.settle("sdk", "1.0", first, bare, again)


def test_the_tests_re_run_are_those_that_did_not_pass() -> None:
    first = session({"a": "passed", "b": "failed", "c": "skipped", "d": "xpassed", "e": "collect-error"})
    assert run.not_passed(first) == ["b", "c", "d", "e"]


def test_all_passed_and_no_error_is_green() -> None:
    assert settle(session({"a": "passed"}), session({}), session({}))


@pytest.mark.parametrize(
    ("first", "bare", "again"),
    [
        ("failed", "failed", "failed"),  # fails bare too: the environment
        ("skipped", "skipped", "skipped"),
        ("failed", "passed", "passed"),  # timed out under load, passes alone both ways
        ("failed", "failed", "passed"),  # flaky both ways
    ],
)
def test_a_re_run_that_agrees_with_either_instrumented_run_is_no_difference(first, bare, again) -> None:
    assert settle(session({"t": first}), session({"t": bare}), session({"t": again}))


@pytest.mark.parametrize(
    ("first", "bare", "again"),
    [
        ("failed", "passed", "failed"),  # fails instrumented twice, passes bare
        ("error", "passed", "failed"),  # never passes instrumented
        ("skipped", "passed", "skipped"),
        ("xpassed", "xfailed", "xpassed"),
    ],
)
def test_a_difference_seen_twice_fails_the_lane(first, bare, again, capsys) -> None:
    assert not settle(session({"t": first}), session({"t": bare}), session({"t": again}))
    assert f"differs: t: bare {bare}, instrumented {first} then {again}" in capsys.readouterr().out


def test_a_test_the_re_run_did_not_select_fails_the_lane() -> None:
    assert not settle(session({"t": "failed"}), session({}), session({}))


def test_an_internal_error_in_either_instrumented_run_fails_the_lane() -> None:
    passed = session({"t": "passed"}, errors={"t": {"site": 1}})
    assert not settle(passed, session({}), session({}))
    again = session({"u": "failed"}, errors={"u": {"site": 1}})
    assert not settle(session({"u": "failed"}), session({"u": "failed"}), again)


def test_the_packages_outcome_on_the_sdks_span_is_by_design_only_when_it_is_the_whole_failure() -> None:
    first = session({"t": "failed"}, {"t": DESIGNED})
    assert settle(first, session({"t": "passed"}), session({"t": "failed"}, {"t": DESIGNED}))
    other = session({"t": "failed"}, {"t": "AssertionError: 1 == 2"})
    assert not settle(first, session({"t": "passed"}), other)


def test_no_test_run_fails_the_lane() -> None:
    assert not settle(session({}), session({}), session({}))
