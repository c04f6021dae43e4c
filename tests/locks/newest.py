"""The newest lane (``make newest``): what today's releases would change, before ``make lock`` takes
them. Not part of ``make test``, whose result must not depend on the day.

The main venv and the framework venvs that hold each framework at its newest (not the -floor,
-previous and -mid ones, whose frameworks are pinned old by design) are built under .newest/ from
their inputs with every ``==`` pin made a floor (``>=``), so each package comes at today's newest
release the rest allows, never older than the lock's. Their tests run there (the main suite
without its e2e tests, the framework venvs' ``make frameworks`` selection), and a drift report says
what moved from the lock and what failed, with each failure's first line. Whether a failure is the
package's fault or the test's assumption is a judgement the report cannot make: a failure here
whose test passes on the lock (``make test``) is drift, and the note of the stop that ran it says
which.

    python tests/locks/newest.py                      # build, run, report
    python tests/locks/newest.py --report-only        # the report of the last run
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lock import HERE, ROOT, UV, environments

WORK = ROOT / ".newest"
# The framework venvs whose lock is each framework's newest: the ones that move the ceilings.
FRAMEWORK_NEWEST = ("venv-frameworks", "venv-crewai", "venv-claude-agent")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?)==([^\s;]+)")


@dataclass(frozen=True)
class Newest:
    name: str  # the lock it is compared with
    inputs: list[str]
    tests: list[str]

    @property
    def venv(self) -> Path:
        # Named as its lane (`.venv-frameworks`): the lane-aware tests know a venv by its name.
        return WORK / (f".{self.name}" if self.name.startswith("venv-") else self.name)

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


def unpinned(lines: Sequence[str]) -> list[str]:
    """The requirement lines with every exact pin turned into a floor (ranges stay): with the pins
    dropped, the resolver went back to old releases to satisfy the rest (strands-agents 0.2.1,
    openai 1.109), which is no newer environment."""
    return [PIN.sub(r"\1>=\2", line) for line in lines]


def lanes(framework_tests: Sequence[str]) -> list[Newest]:
    """The main venv and the newest framework venvs, from the inputs their locks were written from."""
    envs = {env.name: env for env in environments()}
    main = Newest("main", unpinned(envs["main"].inputs()), ["-m", "not e2e", "tests"])
    frameworks = [
        Newest(name, unpinned(envs[name].inputs()), list(framework_tests)) for name in FRAMEWORK_NEWEST
    ]
    return [main, *frameworks]


def _run(cmd: Sequence[str], log: Path, env: dict[str, str] | None = None) -> int:
    with log.open("a") as out:
        out.write(f"$ {shlex.join(map(str, cmd))}\n")
        out.flush()
        return subprocess.run(
            list(map(str, cmd)), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env
        ).returncode


def build(lane: Newest, log: Path) -> bool:
    """A fresh venv with the newest of everything the lane's inputs allow, and the package."""
    source = WORK / f"{lane.name}.in"
    source.write_text("\n".join(lane.inputs) + "\n")
    pip = [UV, "pip", "install", "-q", "--python", lane.python]
    return (
        _run([UV, "venv", "-q", "--clear", "--python", sys.executable, lane.venv], log) == 0
        and _run([*pip, "-r", source], log) == 0
        and _run([*pip, "--no-deps", "-e", ROOT], log) == 0
    )


def run_tests(lane: Newest, log: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    junit = WORK / f"{lane.name}.xml"
    cmd = [lane.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *lane.tests]
    _run(cmd, log, env)


def installed(lane: Newest) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.name.lower(): d.version for d in m.distributions()}))"
    )
    done = subprocess.run([lane.python, "-c", code], capture_output=True, text=True, check=False)
    return json.loads(done.stdout or "{}")


def locked(name: str) -> dict[str, str]:
    found = {}
    for line in (HERE / f"{name}.txt").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s\\;]+)", line)
        if match:
            found[_norm(match.group(1))] = match.group(2)
    return found


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def failures(lane: Newest) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The junit counts and each failed or erring test with the first line of its message."""
    junit = WORK / f"{lane.name}.xml"
    if not junit.exists():
        return {"no junit (see the log)": 1}, []
    root = ET.parse(junit).getroot()
    suite = root if root.tag == "testsuite" else root[0]
    counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    failed = []
    for case in suite.iter("testcase"):
        for bad in [*case.findall("failure"), *case.findall("error")]:
            node = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            first = (bad.get("message") or "").strip().splitlines()[:1]
            failed.append((node, first[0][:200] if first else bad.tag))
    return counts, failed


def report(lanes_: Sequence[Newest]) -> int:
    print(f"# make newest: drift report ({time.strftime('%Y-%m-%d')})")
    bad = 0
    for lane in lanes_:
        now, was = {_norm(k): v for k, v in installed(lane).items()}, locked(lane.name)
        moved = sorted(
            (name, was[name], now[name]) for name in was.keys() & now.keys() if was[name] != now[name]
        )
        counts, failed = failures(lane)
        bad += len(failed) + counts.get("no junit (see the log)", 0)
        print(
            f"\n## {lane.name}: {len(moved)} packages moved from tests/locks/{lane.name}.txt; tests {counts}"
        )
        for name, old, new in moved:
            print(f"  moved  {name}: {old} -> {new}")
        for name in sorted(now.keys() - was.keys() - {"otel-toolcalls"}):
            print(f"  new    {name}: {now[name]}")
        for node, first in failed:
            print(f"  FAILED {node}: {first}")
    print(f"\nnewest: {bad} failed")
    return 1 if bad else 0


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--framework-tests", default="", help="the framework venvs' pytest arguments (Makefile)"
    )
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--only", nargs="*", help="lock names (default: all)")
    args = parser.parse_args(argv)
    tests = shlex.split(args.framework_tests) or ["--framework-venv", "tests/frameworks"]
    chosen = [lane for lane in lanes(tests) if not args.only or lane.name in args.only]
    WORK.mkdir(exist_ok=True)
    if not args.report_only:
        logs = {lane.name: WORK / f"{lane.name}.log" for lane in chosen}
        for log in logs.values():
            log.write_text("")
        with ThreadPoolExecutor(max_workers=2) as pool:
            built = list(pool.map(lambda lane: build(lane, logs[lane.name]), chosen))
        for lane, ok in zip(chosen, built, strict=True):
            if ok:
                run_tests(lane, logs[lane.name])
            else:
                print(f"{lane.name}: install failed (see {logs[lane.name].relative_to(ROOT)})")
    return report(chosen)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
