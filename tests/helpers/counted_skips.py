"""Counted skips: under `make test` (markers.REQUIRE_ALL set) every skipped test is printed with its
reason, and the session fails on a skip tests/skips.toml does not list for this lane. Elsewhere
(`make check`, a bare pytest) it does nothing.

The lane comes from OTEL_TOOLCALLS_LANE: `main` for the main suite (also when unset), the venv's
directory name for a framework venv (the Makefile's `frameworks`), the lane's name for a version
lane (tests/versions/run.py). In tests/skips.toml ``lane`` and ``test`` (a node id), each one or a
list, match whole, ``*`` matching anything and nothing else special (node ids hold ``[``). A
collection skip (a module's ``pytest.skip(allow_module_level=True)``, ``importorskip``, or a
conftest's skip) has the module's path as its node id. An xfail is not a skip here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import markers
import pytest
import tomllib

LANE = "OTEL_TOOLCALLS_LANE"
ALLOW_LIST = markers.TESTS / "skips.toml"
BASES = ("observed", "code")
# The lines tests/versions/run.py copies from a lane's log to its own output.
LINE = re.compile(r"^(=+ counted skips|listed |UNLISTED |counted skips: )")


@dataclass(frozen=True)
class Allowed:
    lanes: tuple[str, ...]
    tests: tuple[str, ...]
    reason: str
    # "observed": seen in a run of the lane; "code": read from the skip's condition, not yet seen.
    basis: str

    def applies_to(self, lane: str) -> bool:
        return any(_glob(pattern).fullmatch(lane) for pattern in self.lanes)

    def matches(self, lane: str, nodeid: str) -> bool:
        return self.applies_to(lane) and any(_glob(test).fullmatch(nodeid) for test in self.tests)


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def load(path: Path | None = None) -> list[Allowed]:
    """The allow-list; a malformed entry (a key missing or unknown, no reason) raises."""
    path = path or ALLOW_LIST
    entries = []
    for raw in tomllib.loads(path.read_text(encoding="utf-8")).get("skip", []):
        if set(raw) != {"lane", "test", "reason", "basis"}:
            raise ValueError(f"{path.name}: an entry needs exactly lane, test, reason, basis: {raw}")
        lanes, tests = ([raw[key]] if isinstance(raw[key], str) else raw[key] for key in ("lane", "test"))
        entry = Allowed(tuple(map(str, lanes)), tuple(map(str, tests)), str(raw["reason"]), str(raw["basis"]))
        if not entry.reason.strip() or entry.basis not in BASES:
            raise ValueError(f"{path.name}: an entry needs a reason and a basis in {BASES}: {raw}")
        entries.append(entry)
    return entries


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@dataclass(eq=False)  # hashed by identity, as pluggy holds its plugins
class Ledger:
    """The session's skips, each with the entry that allows it (None: not listed)."""

    lane: str
    entries: list[Allowed]
    skips: list[tuple[str, str, Allowed | None]] = field(default_factory=list)

    def _record(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        allowed = next((e for e in self.entries if e.matches(self.lane, report.nodeid)), None)
        self.skips.append((report.nodeid, _reason(report), allowed))

    def unlisted(self) -> list[str]:
        return [nodeid for nodeid, _, allowed in self.skips if allowed is None]

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self._record(report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self._record(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unlisted() and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        unlisted = self.unlisted()
        title = f"counted skips (lane {self.lane}): {len(self.skips)}, {len(unlisted)} not listed"
        terminalreporter.section(title, red=bool(unlisted), bold=True)
        for nodeid, reason, allowed in self.skips:
            terminalreporter.line(f"{'listed' if allowed else 'UNLISTED'} {nodeid}: {reason}")
        used = {allowed for _, _, allowed in self.skips}
        for entry in self.entries:
            if entry.applies_to(self.lane) and entry not in used:
                terminalreporter.line(
                    f"counted skips: no skip matched {' '.join(entry.tests)} ({entry.basis})"
                )
        if unlisted:
            terminalreporter.line(f"UNLISTED skips fail the session: list each in {ALLOW_LIST}, with why")


def pytest_configure(config: pytest.Config) -> None:
    if markers.required():
        config.pluginmanager.register(Ledger(os.environ.get(LANE) or "main", load()), "counted_skips.ledger")
