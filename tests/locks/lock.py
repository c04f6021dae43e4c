"""The locks: every environment ``make test`` builds installs from a file here with every package,
transitive ones included, pinned and hashed, so a release that comes out tomorrow changes nothing
until ``make lock`` is run again (``make newest`` says what it would change).

Each environment is its inputs (the requirement lines it was built from before: an extra of
pyproject.toml, a requirements file, a version lane's pins) and the lock ``uv pip compile`` makes of
them. A lock's second line carries a fingerprint of its inputs: tests/repo/test_locks.py fails when
the inputs changed and the lock was not written again.

    python tests/locks/lock.py            # write every lock (make lock)
    python tests/locks/lock.py main viewer versions/openai-floor
    python tests/locks/lock.py --list     # the environments and whether each lock is current
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import tomllib

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "locks"
UV = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
# The interpreter every environment is built with (the main venv's, which is $(PYTHON)'s).
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
FINGERPRINT = re.compile(r"^# inputs: ([0-9a-f]{64})$", re.MULTILINE)


@dataclass(frozen=True)
class Env:
    """``name``: the lock's path under tests/locks without ``.txt``; ``inputs``: what it resolves;
    ``fixed``: what the fingerprint covers beside them where the inputs need a download to know
    (an SDK suite's dev dependencies come from its sdist, fixed by the pinned release)."""

    name: str
    inputs: Callable[[], list[str]]
    fixed: tuple[str, ...] = ()
    # Another environment whose lock this one's pins must agree with (it installs into the same venv).
    within: str = ""
    # The Python version the environment runs on, where it is not the main venv's
    # (lanes.OTHER_PYTHON_LANES): resolved for it, and part of the fingerprint.
    python: str = ""

    @property
    def lock(self) -> Path:
        return HERE / f"{self.name}.txt"

    def fingerprint(self, inputs: Sequence[str] | None = None) -> str:
        known = list(self.fixed) if self.fixed else list(inputs if inputs is not None else self.inputs())
        return hashlib.sha256(json.dumps([self.python or PYTHON, known]).encode()).hexdigest()

    def written(self) -> str | None:
        """The fingerprint the lock was written for (None: no lock)."""
        if not self.lock.exists():
            return None
        found = FINGERPRINT.search(self.lock.read_text())
        return found.group(1) if found else ""


def _script(path: str, name: str) -> ModuleType:
    """Another lane's runner (a script, not a package), loaded for its table."""
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@cache
def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _extra(name: str) -> Callable[[], list[str]]:
    def inputs() -> list[str]:
        project = _pyproject()["project"]
        return [*project["dependencies"], *project["optional-dependencies"][name]]

    return inputs


def requirement_lines(path: Path) -> list[str]:
    """A requirements file's requirements: its ``-e .`` is the package, installed apart (editable,
    no dependencies), so its dependencies come in as pyproject.toml declares them."""
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line == "-e .":
            lines += _pyproject()["project"]["dependencies"]
        elif line:
            lines.append(line)
    return lines


def _file(path: Path) -> Callable[[], list[str]]:
    return lambda: requirement_lines(path)


def _framework_envs() -> list[Env]:
    lanes = _script("tests/helpers/lanes.py", "lanes_table")
    return [
        Env(venv.lstrip("."), _file(ROOT / requirements))
        for venv, requirements in lanes.FRAMEWORK_LANES.items()
    ] + [
        Env(venv.lstrip("."), _file(ROOT / requirements), python=python)
        for venv, (requirements, python, _) in lanes.OTHER_PYTHON_LANES.items()
    ]


def _version_envs() -> list[Env]:
    run = _script("tests/versions/run.py", "versions_run")
    return [
        Env(f"versions/{lane.name}", (lambda lane=lane: run.requirements(lane, run.FLOORS)))
        for lane in run.LANES
    ]


def _suite_envs() -> list[Env]:
    suites = _script("tests/sdk_suites/run.py", "sdk_suites_run")
    envs = []
    for sdk in suites.SUITES:
        version = suites.TESTED[sdk][1]

        def inputs(sdk: str = sdk, version: str = version) -> list[str]:
            log = suites.WORK / "logs" / f"lock-{sdk}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            tree = suites.sdist(sdk, version, log)
            return [
                *suites.requirements(suites.SUITES[sdk], version, tree),
                *_pyproject()["project"]["dependencies"],
            ]

        fixed = (
            *suites.requirements(suites.SUITES[sdk], version, None),
            *_pyproject()["project"]["dependencies"],
        )
        envs.append(Env(f"sdk-suite-{sdk}", inputs, fixed=tuple(fixed)))
    return envs


def _peer_envs() -> list[Env]:
    lane = _script("tests/peer_suites/run.py", "peer_suites_run")
    envs = []
    for peer in lane.PEERS.values():

        def inputs(peer=peer) -> list[str]:  # type: ignore[no-untyped-def]
            log = lane.WORK / "logs" / f"lock-{peer.name}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            tree = lane.suites.sdist(peer.dist, peer.version, log, lane.WORK)
            return [*lane.requirements(peer, tree), *_pyproject()["project"]["dependencies"]]

        fixed = (*lane.requirements(peer, None), *_pyproject()["project"]["dependencies"])
        envs.append(Env(f"peer-suite-{peer.name}", inputs, fixed=fixed))
    return envs


def environments() -> list[Env]:
    """Every environment ``make test`` (and ``make demo``) builds."""
    return [
        Env("main", _extra("test")),
        Env("demo", _extra("demo"), within="main"),
        Env("viewer", _file(ROOT / "examples" / "viewer" / "requirements.txt")),
        *_framework_envs(),
        *_version_envs(),
        *_suite_envs(),
        *_peer_envs(),
    ]


def compile_lock(env: Env) -> str:
    """Writes ``env``'s lock; returns a line for the log."""
    if UV is None:
        raise SystemExit("uv is needed (the test extra installs it): make .venv/.stamp-test")
    inputs = env.inputs()
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "in.txt", Path(tmp) / "out.txt"
        source.write_text("\n".join(inputs) + "\n")
        target = ["--python-version", env.python] if env.python else ["--python", sys.executable]
        cmd = [UV, "pip", "compile", "-q", *target, "--generate-hashes", "--no-header",
               "--no-annotate", "-o", str(out), str(source)]  # fmt: skip
        if env.within:
            cmd += ["--constraint", str(HERE / f"{env.within}.txt")]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"FAIL {env.name}: {done.stderr.strip().splitlines()[-1:]}"
        body = out.read_text()
    env.lock.parent.mkdir(parents=True, exist_ok=True)
    head = f"# {env.name}: every package pinned and hashed; written by `make lock` (tests/locks/lock.py).\n"
    env.lock.write_text(f"{head}# inputs: {env.fingerprint(inputs)}\n{body}")
    pins = sum(1 for line in body.splitlines() if "==" in line and not line.startswith(" "))
    return f"ok   {env.name}: {pins} packages"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("names", nargs="*", help="environments (default: all); versions/ selects the lanes")
    parser.add_argument(
        "--list", action="store_true", help="each environment and whether its lock is current"
    )
    parser.add_argument("-j", "--jobs", type=int, default=4)
    args = parser.parse_args(argv)
    envs = environments()
    chosen = [
        e for e in envs if not args.names or any(e.name == n or e.name.startswith(n) for n in args.names)
    ]
    if args.list:
        for env in chosen:
            state = (
                "current" if env.written() == env.fingerprint() else "STALE" if env.written() else "MISSING"
            )
            print(f"{state:<8} {env.name}")
        return 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        lines = list(pool.map(compile_lock, [env for env in chosen if not env.within]))
        lines += pool.map(compile_lock, [env for env in chosen if env.within])
    print("\n".join(lines))
    known = {env.lock for env in envs}
    for stray in sorted(set(HERE.rglob("*.txt")) - known):
        print(f"stray lock (no environment): {stray.relative_to(ROOT)}")
    return 1 if any(line.startswith("FAIL") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
