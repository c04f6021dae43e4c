"""`promtool check rules` and `promtool test rules` on collector-config/prometheus.

promtool comes from Debian's `prometheus` package (`make test` installs it when missing). Without
it these tests skip under `make check` and FAIL under `make test` (tests/helpers/markers.py's `missing`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import markers
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "collector-config" / "prometheus"
RULE_FILES = sorted((PROM / "rules").glob("*.rules.yaml"))
TEST_FILES = sorted((PROM / "tests").glob("*.test.yaml"))


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        markers.missing("promtool", "make promtool: Debian's prometheus package")
    return path


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd, check=False
    )


def test_there_are_two_rule_variants_each_with_its_tests() -> None:
    assert [p.name for p in RULE_FILES] == ["toolcalls-spanmetrics.rules.yaml", "toolcalls.rules.yaml"]
    for test_file in TEST_FILES:
        rule_files = yaml.safe_load(test_file.read_text())["rule_files"]
        assert [(test_file.parent / r).resolve() for r in rule_files] in ([p.resolve()] for p in RULE_FILES)
    tested = {(t.parent / yaml.safe_load(t.read_text())["rule_files"][0]).resolve() for t in TEST_FILES}
    assert tested == {p.resolve() for p in RULE_FILES}


@pytest.mark.parametrize("rule_file", RULE_FILES, ids=lambda p: p.name)
def test_promtool_check_rules(rule_file: Path) -> None:
    result = run("check", "rules", rule_file)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("test_file", TEST_FILES, ids=lambda p: p.name)
def test_promtool_unit_tests(test_file: Path) -> None:
    result = run("test", "rules", test_file.name, cwd=test_file.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# ------------------------------------------------------------------ every alert is tested four ways


def alerts(rule_file: Path) -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load(rule_file.read_text())["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def duration(text: str) -> int:
    value, unit = re.fullmatch(r"(\d+)([smh])", text).groups()  # type: ignore[union-attr]
    return int(value) * {"s": 1, "m": 60, "h": 3600}[unit]


def has_traffic_guard(expr: str) -> bool:
    return ">=" in expr


@pytest.mark.parametrize("test_file", TEST_FILES, ids=lambda p: p.name)
def test_every_alert_has_fire_before_window_below_threshold_and_guard_cases(test_file: Path) -> None:
    spec = yaml.safe_load(test_file.read_text())
    rule_file = (test_file.parent / spec["rule_files"][0]).resolve()
    for name, rule in alerts(rule_file).items():
        cases = [
            t for t in spec["tests"] if any(a["alertname"] == name for a in t.get("alert_rule_test", []))
        ]
        fires_after_window = silent_before_window = silent_below = silent_guard = False
        for case in cases:
            checks = [a for a in case["alert_rule_test"] if a["alertname"] == name]
            firing = [duration(a["eval_time"]) for a in checks if a["exp_alerts"]]
            silent = [duration(a["eval_time"]) for a in checks if not a["exp_alerts"]]
            if firing:
                fires_after_window = True
                # A silent check within `for:` before the first firing one: pending, not firing.
                first = min(firing)
                silent_before_window |= any(first - duration(rule["for"]) <= t < first for t in silent)
            elif silent:
                # The "any one" alerts (replays, internal errors): their threshold is "nothing new".
                silent_below |= any(
                    words in case["name"] for words in ("below threshold", "no replay", "no new error")
                )
                silent_guard |= "traffic guard" in case["name"]
        assert fires_after_window, f"{test_file.name}: {name} never fires"
        assert silent_before_window, f"{test_file.name}: {name} not checked silent before its for: window"
        assert silent_below, f"{test_file.name}: {name} not checked silent below its threshold"
        if has_traffic_guard(rule["expr"]):
            assert silent_guard, f"{test_file.name}: {name} not checked silent under its traffic guard"


# ------------------------------------------------------------------ the unit tests can fail


def mutate(text: str, kind: str) -> str:
    if kind == "no for window":
        return re.sub(r"^(\s+)for: \d+[smh]\n", "", text, flags=re.M)
    if kind == "no traffic guard":
        return re.sub(r">= 0\.\d+", ">= 0", text)
    if kind == "thresholds x10":
        return re.sub(r"> (0\.\d+)$", lambda m: f"> {float(m.group(1)) * 10:g}", text, flags=re.M)
    if kind == "outcome label renamed":
        return text.replace('toolcall_outcome="aborted"', 'outcome="aborted"')
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["no for window", "no traffic guard", "thresholds x10", "outcome label renamed"]
)
@pytest.mark.parametrize("test_file", TEST_FILES, ids=lambda p: p.name)
def test_a_broken_rule_file_fails_the_unit_tests(test_file: Path, kind: str, tmp_path: Path) -> None:
    spec = yaml.safe_load(test_file.read_text())
    rule_file = (test_file.parent / spec["rule_files"][0]).resolve()
    original = rule_file.read_text()
    broken = mutate(original, kind)
    assert broken != original, f"mutation {kind!r} changed nothing"
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / rule_file.name).write_text(broken)
    spec["rule_files"] = [f"rules/{rule_file.name}"]
    (tmp_path / test_file.name).write_text(yaml.safe_dump(spec, sort_keys=False))
    assert run("check", "rules", tmp_path / "rules" / rule_file.name).returncode == 0
    result = run("test", "rules", test_file.name, cwd=tmp_path)
    assert result.returncode != 0, f"the unit tests pass with {kind!r}:\n{result.stdout}"


# The internal-errors alert reads the package's counter under its exported name, and catches the
# first failure of a process (a series that appears with value 1 has no increase() yet).
_FIRST_FAILURE = (
    "\n            or\n              "
    "(toolcall_internal_errors_total unless toolcall_internal_errors_total offset 15m)"
)
_ANY_INCREASE = "(increase(toolcall_internal_errors_total[15m]) > 0)"
INTERNAL_ERRORS_MUTATIONS = {
    # The OpenTelemetry name, not the one the exporters write.
    "metric name unexported": (
        _ANY_INCREASE + _FIRST_FAILURE,
        (_ANY_INCREASE + _FIRST_FAILURE).replace("errors_total", "errors"),
    ),
    "first failure unseen": (_FIRST_FAILURE, ""),
    "site label dropped": ("sum by (error_site, error_type)", "sum by (error_type)"),
}


def test_the_internal_errors_alert_is_on_the_packages_own_rules() -> None:
    rule = alerts(PROM / "rules" / "toolcalls.rules.yaml")["ToolCallsInternalErrors"]
    assert "toolcall_internal_errors_total" in rule["expr"] and rule["for"] == "1m"
    assert rule["labels"] == {"severity": "warning", "source": "toolcall_metrics"}


@pytest.mark.parametrize("kind", sorted(INTERNAL_ERRORS_MUTATIONS))
def test_a_broken_internal_errors_rule_fails_the_unit_tests(kind: str, tmp_path: Path) -> None:
    rule_file = PROM / "rules" / "toolcalls.rules.yaml"
    test_file = PROM / "tests" / "toolcalls.test.yaml"
    old, new = INTERNAL_ERRORS_MUTATIONS[kind]
    original = rule_file.read_text()
    assert original.count(old) == 1, f"mutation {kind!r} does not apply"
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / rule_file.name).write_text(original.replace(old, new))
    spec = yaml.safe_load(test_file.read_text())
    spec["rule_files"] = [f"rules/{rule_file.name}"]
    (tmp_path / test_file.name).write_text(yaml.safe_dump(spec, sort_keys=False))
    result = run("test", "rules", test_file.name, cwd=tmp_path)
    assert result.returncode != 0, f"the unit tests pass with {kind!r}:\n{result.stdout}"
    assert "ToolCallsInternalErrors" in result.stdout + result.stderr
