"""Every environment ``make test`` builds installs from a current lock (tests/locks/lock.py): a
changed extra, requirements file or version lane whose lock was not written again fails here, not on
a fresh machine days later."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lock_module() -> Any:
    spec = importlib.util.spec_from_file_location("locks_lock", ROOT / "tests" / "locks" / "lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["locks_lock"] = module
    spec.loader.exec_module(module)
    return module


LOCK = _lock_module()
ENVS = LOCK.environments()
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?)==([^\s;\\]+)")


def pins(lock: Path) -> dict[str, str]:
    """name -> version of every requirement line, each checked to be pinned and hashed."""
    found: dict[str, str] = {}
    lines = lock.read_text().splitlines()
    for number, line in enumerate(lines):
        if not line.strip() or line.startswith(("#", " ")):
            continue
        match = PIN.match(line)
        assert match, f"{lock.name}:{number + 1}: not pinned with ==: {line!r}"
        following = lines[number + 1] if number + 1 < len(lines) else ""
        assert "--hash=sha256:" in line + following, f"{lock.name}:{number + 1}: no hash: {line!r}"
        found[match.group(1).lower()] = match.group(2)
    return found


@pytest.mark.parametrize("env", ENVS, ids=[env.name for env in ENVS])
def test_the_lock_is_written_for_todays_inputs(env: Any) -> None:
    written = env.written()
    assert written is not None, f"no lock {env.lock.relative_to(ROOT)}: run make lock"
    assert written == env.fingerprint(), f"{env.lock.relative_to(ROOT)}: its inputs changed; run make lock"
    assert pins(env.lock), f"{env.lock.relative_to(ROOT)} pins nothing"


def test_no_lock_without_an_environment() -> None:
    known = {env.lock for env in ENVS}
    assert sorted(set((ROOT / "tests" / "locks").rglob("*.txt")) - known) == []


def test_the_demo_is_a_part_of_the_main_venv() -> None:
    # Both install into .venv: the demo's pins must be the main lock's, or `make demo` after
    # `make test` would move the main venv's packages.
    main, demo = pins(LOCK.HERE / "main.txt"), pins(LOCK.HERE / "demo.txt")
    assert {
        name: (version, main.get(name)) for name, version in demo.items() if main.get(name) != version
    } == {}


def test_the_makefile_installs_only_from_locks() -> None:
    """Each install line of the Makefile takes a lock, or the package itself without dependencies,
    or uv at the main lock's version."""
    loose = []
    for number, line in enumerate((ROOT / "Makefile").read_text().splitlines(), 1):
        if re.search(r"pip (install|sync)", line) and not re.search(
            r"\$\(LOCKS\)|\$\(2\)|--no-deps|grep", line
        ):
            loose.append(f"Makefile:{number}: {line.strip()}")
    assert loose == []


def test_the_tested_ceilings_are_what_the_main_venv_runs() -> None:
    """tested_versions.py's newest of each distribution the main venv holds is the main lock's:
    moving the lock (make lock) moves the ceiling doctor and docs/SUPPORT.md state."""
    from otel_toolcalls._wiring.tested_versions import TESTED

    main = {re.sub(r"[-_.]+", "-", name): version for name, version in pins(LOCK.HERE / "main.txt").items()}
    differ = {}
    for dist, (_, newest) in TESTED.items():
        locked = main.get(re.sub(r"[-_.]+", "-", dist.lower()))
        if locked is not None and locked != newest:
            differ[dist] = (newest, locked)
    assert differ == {}, "tested_versions.py's newest, the main lock's"
