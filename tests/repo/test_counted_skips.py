"""Counted skips (tests/helpers/counted_skips.py): under `make test` a skip tests/skips.toml does not
list for the lane fails the session, each skip printed with its reason; elsewhere nothing changes.
The plugin runs in a pytester session of its own, with a planted allow-list."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import counted_skips
import markers
import pytest
from lanes import FRAMEWORK_LANES

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parents[2]

PLANTED = """
import pytest

def test_runs():
    pass

def test_planted():
    pytest.skip("planted")

@pytest.mark.xfail(reason="an xfail is not a skip")
def test_expected_to_fail():
    raise AssertionError
"""

MODULE_SKIP = 'import pytest\npytest.skip("this SDK has no such API", allow_module_level=True)\n'


def _allow(tmp_path: Path, *entries: tuple[str, str]) -> Path:
    path = tmp_path / "allowed.toml"
    path.write_text(
        "".join(
            f'[[skip]]\nlane = "{lane}"\ntest = "{test}"\nreason = "planted"\nbasis = "code"\n\n'
            for lane, test in entries
        )
    )
    return path


@pytest.fixture
def under_make_test(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.setenv(markers.REQUIRE_ALL, "1")
    monkeypatch.setenv(counted_skips.LANE, "lane-a")
    monkeypatch.setattr(counted_skips, "ALLOW_LIST", _allow(tmp_path))
    return monkeypatch


@pytest.fixture(autouse=True)
def _only_the_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    # The venv's other plugins cost seconds per inner session and add nothing here.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def _run(pytester: pytest.Pytester, **files: str) -> pytest.RunResult:
    pytester.makepyfile(**files)
    return pytester.runpytest_inprocess("-p", "counted_skips", "-p", "no:cacheprovider")


def test_an_unlisted_skip_fails_the_session(
    pytester: pytest.Pytester, under_make_test: pytest.MonkeyPatch
) -> None:
    # A conftest the planted module is outside of: pytest then calls a subset of the plugins' hooks.
    pytester.mkpydir("sub").joinpath("conftest.py").write_text("")
    result = _run(pytester, test_planted=PLANTED)
    result.assert_outcomes(passed=1, skipped=1, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*counted skips (lane lane-a): 1, 1 not listed*",
            "UNLISTED test_planted.py::test_planted: planted",
        ]
    )


def test_a_skip_listed_for_another_lane_fails(
    pytester: pytest.Pytester, under_make_test: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    under_make_test.setattr(counted_skips, "ALLOW_LIST", _allow(tmp_path, ("lane-b", "*")))
    result = _run(pytester, test_planted=PLANTED)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["UNLISTED test_planted.py::test_planted: planted"])


def test_a_listed_skip_passes_and_is_printed(
    pytester: pytest.Pytester, under_make_test: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    allowed = [
        ("lane-*", "test_planted.py::test_planted"),
        ("lane-a", "test_module.py"),
        ("lane-a", "test_gone.py"),
    ]
    under_make_test.setattr(counted_skips, "ALLOW_LIST", _allow(tmp_path, *allowed))
    result = _run(pytester, test_planted=PLANTED, test_module=MODULE_SKIP)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*counted skips (lane lane-a): 2, 0 not listed*",
            "listed test_module.py: this SDK has no such API",
            "listed test_planted.py::test_planted: planted",
            "counted skips: no skip matched test_gone.py (code)",
        ]
    )


def test_brackets_in_a_node_id_are_not_a_pattern(
    pytester: pytest.Pytester, under_make_test: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = 'import pytest\n@pytest.mark.parametrize("x", ["a", "b"])\ndef test_p(x):\n    pytest.skip(x)\n'
    under_make_test.setattr(counted_skips, "ALLOW_LIST", _allow(tmp_path, ("lane-a", "test_p.py::test_p[a]")))
    result = _run(pytester, test_p=source)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["listed test_p.py::test_p[[]a[]]: a", "UNLISTED test_p.py::test_p[[]b[]]: b"]
    )


def test_outside_make_test_a_skip_is_only_a_skip(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(markers.REQUIRE_ALL, raising=False)
    result = _run(pytester, test_planted=PLANTED)
    assert result.ret == pytest.ExitCode.OK
    assert "counted skips" not in result.stdout.str()


def test_an_entry_without_a_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[skip]]\nlane = "main"\ntest = "x"\nreason = " "\nbasis = "code"\n')
    with pytest.raises(ValueError, match="needs a reason"):
        counted_skips.load(path)


def _version_lanes() -> set[str]:
    spec = importlib.util.spec_from_file_location("version_lanes", ROOT / "tests" / "versions" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["version_lanes"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    assert module.SKIP_LINE.pattern == counted_skips.LINE.pattern  # the runner shows the plugin's lines
    return {lane.name for lane in module.LANES}


def test_every_entry_names_a_lane_and_a_file_that_exist() -> None:
    lanes = {"main", *FRAMEWORK_LANES, *_version_lanes()}
    entries = counted_skips.load()
    assert entries
    for entry in entries:
        assert any(entry.applies_to(lane) for lane in lanes), entry
        for test in entry.tests:
            path = test.split("::")[0]
            assert "*" not in path and (ROOT / path).is_file(), entry
