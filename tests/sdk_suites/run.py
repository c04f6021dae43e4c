"""The SDK-suites lane: the openai and anthropic SDKs' own tests, run bare and instrumented.

For each SDK at the newest version the tested-versions table states (otel_toolcalls/_wiring/
tested_versions.py), its source distribution is fetched from PyPI (the sdist carries the SDK's ``tests/``),
a venv of its own gets that release, the test dependencies its pyproject.toml declares (less its
linters and type checkers) and the package (editable), and the suite (``tests/lib`` unless told)
runs twice: bare, then with the package instrumented before the SDK is imported
(tests/sdk_suites/outcome_plugin.py). It fails on any test whose outcome differs between the runs,
on any ``toolcall.internal_errors`` counted in the instrumented one, and on any test lost: a pytest
exit status the outcomes do not explain, a test run with no outcome (a crashed xdist worker), a
test one side collects and the other does not.

    python3 tests/sdk_suites/run.py                      # openai and anthropic, tests/lib
    python3 tests/sdk_suites/run.py openai --tests tests/lib tests/test_client.py
    python3 tests/sdk_suites/run.py anthropic --version 2.16.0 --source ~/anthropic-sdk-python

``--source`` runs the suite of a checkout instead of the sdist's (the venv still installs the
release from PyPI); ``--package`` installs another otel_toolcalls source (an older commit, to
measure what a change fixed); SDK_SUITE_REUSE_BARE=1 reuses the last bare run's outcomes.
Everything lives under .sdk-suites/ (venvs, sdists, logs, results).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from otel_toolcalls._wiring.tested_versions import TESTED  # noqa: E402

WORK = ROOT / ".sdk-suites"
HERE = Path(__file__).resolve().parent
UV = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

# The dev dependencies that check the SDK's source rather than run its tests.
NOT_FOR_TESTS = re.compile(r"^(pyright|ruff|ty|mypy|griffe|nox|types-.*|.*-stubs)$")


@dataclass(frozen=True)
class Suite:
    sdk: str
    # The SDK's extras its tests/lib reaches (its clients for Bedrock, Vertex, Realtime...).
    extras: Sequence[str]
    # Beside tests/lib (by default): files of the rest of its tests/ that drive what the package
    # patches (the Realtime connection's reconnect and send queue: response.created without response).
    beside: Sequence[str] = ()
    # Files left out, each for a reason given beside it: what cannot run here, bare or instrumented.
    ignore: Sequence[str] = ()
    # Dev pins of the sdist replaced, each for a reason given beside it (old -> new spec).
    replace: Sequence[tuple[str, str]] = ()


SUITES = {
    "openai": Suite("openai", ["realtime", "aiohttp", "bedrock", "vertex", "datalib"],
                    beside=["tests/test_send_queue_reconnect.py"],
                    # Stainless's generated API tests: 40 of its 50 call the Prism mock server on
                    # 127.0.0.1:4010, which the lane does not run (connection refused after the
                    # client's retries and their sleeps, bare and instrumented alike); the other
                    # 10 check a path parameter before any request is made.
                    ignore=["tests/lib/test_fine_tuning_positional_arguments.py"],
                    # 3.63.0 pins botocore 1.44.9, which the package index here does not serve.
                    replace=[("botocore==1.44.9", "botocore==1.44.8")]),
    "anthropic": Suite("anthropic", ["aiohttp", "vertex", "bedrock", "mcp", "webhooks"]),
}  # fmt: skip


def _run(cmd: Sequence[str], log: Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> int:
    with log.open("a") as out:
        out.write(f"$ {' '.join(map(str, cmd))}\n")
        out.flush()
        return subprocess.run(
            list(map(str, cmd)), cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env
        ).returncode


def sdist(sdk: str, version: str, log: Path, work: Path = WORK) -> Path:
    """The release's source distribution, unpacked under ``work`` (the tests are in it, not in the
    wheel)."""
    # The sdist's file and folder name: the distribution's name normalized (PEP 625).
    stem = re.sub(r"[-_.]+", "_", sdk).lower()
    tree = work / "src" / f"{stem}-{version}"
    if (tree / "tests").is_dir():
        return tree
    download = work / "src" / "downloads"
    download.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "download"]
    # --no-binary for the SDK alone: with :all:, pip built the sdist's build backend and its
    # requirements from their sdists too, to read its metadata.
    if _run([*pip, "--no-binary", sdk, "--no-deps", "-d", download, f"{sdk}=={version}"], log) != 0:
        raise SystemExit(f"{sdk} {version}: no sdist downloaded (see {log})")
    archive = next(download.glob(f"{stem}-{version}.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work / "src", filter="data")
    if not (tree / "tests").is_dir():
        raise SystemExit(f"{sdk} {version}: the sdist carries no tests/")
    return tree


def test_requirements(tree: Path) -> list[str]:
    """The dev dependency group of the SDK's pyproject.toml, less the source checkers."""
    project = tomllib.loads((tree / "pyproject.toml").read_text())
    dev = project.get("dependency-groups", {}).get("dev", [])
    keep = []
    for spec in dev:
        if not isinstance(spec, str):
            continue
        name = re.split(r"[\s<>=~!;\[]", spec, maxsplit=1)[0]
        if not NOT_FOR_TESTS.match(name.lower()):
            keep.append(spec)
    return keep


def _other(package: Path) -> str:
    """The suffix of what is kept for another otel_toolcalls source than this tree."""
    return "" if package == ROOT else "-" + hashlib.sha256(str(package).encode()).hexdigest()[:8]


def requirements(suite: Suite, version: str, tree: Path | None) -> list[str]:
    """What the suite's venv holds beside the package: the release with its extras, the test
    dependencies of its sdist (``tree``; None: only the replaced ones, which the lock's
    fingerprint counts: the rest are fixed by the release)."""
    swap = dict(suite.replace)
    dev = list(swap.values()) if tree is None else [swap.get(spec, spec) for spec in test_requirements(tree)]
    return [f"{suite.sdk}[{','.join(suite.extras)}]=={version}", *dev, "pytest-xdist", "opentelemetry-sdk"]


def venv_for(suite: Suite, version: str, tree: Path, package: Path, log: Path) -> Path:
    """The suite's venv, built unless its stamp says it holds what it should already: at the release
    tested_versions.py states, its lock (tests/locks/sdk-suite-<sdk>.txt); at another (``--version``),
    that release and the newest of the rest. ``package``: the otel_toolcalls source installed (editable)."""
    lock = ROOT / "tests" / "locks" / f"sdk-suite-{suite.sdk}.txt"
    locked = version == TESTED[suite.sdk][1]
    wanted = lock.read_text() if locked else requirements(suite, version, tree)
    venv = WORK / f"venv-{suite.sdk}{_other(package)}"
    pip = [UV, "pip", "install", "-q", "--python", venv / "bin" / "python"]
    if not installed(venv, [*pip, *wanted] if not locked else None, lock if locked else None, package, log):
        raise SystemExit(f"{suite.sdk}: install failed (see {log})")
    return venv


def installed(venv: Path, install: Sequence | None, lock: Path | None, package: Path, log: Path) -> bool:
    """Builds ``venv`` from ``lock`` (hashed, synced) or by the ``install`` command, with ``package``
    (editable, no dependencies), unless its stamp says it holds that already; False when an install
    failed."""
    if UV is None:
        raise SystemExit("uv is needed (the test extra installs it): make .venv/.stamp-test")
    python = venv / "bin" / "python"
    wanted = lock.read_text() if lock else [str(part) for part in install or ()]
    key = hashlib.sha256(json.dumps([sys.version, wanted, (package / "pyproject.toml").read_text()]).encode())
    stamp = venv / ".stamp"
    if stamp.exists() and stamp.read_text() == key.hexdigest():
        return True
    shutil.rmtree(venv, ignore_errors=True)
    step = [UV, "pip", "sync", "-q", "--require-hashes", "--python", python, lock] if lock else install
    if (
        _run([UV, "venv", "-q", "--python", sys.executable, venv], log) != 0
        or _run(list(step or ()), log) != 0
        or _run([UV, "pip", "install", "-q", "--python", python, "--no-deps", "-e", package], log) != 0
        or _run([UV, "pip", "check", "-q", "--python", python], log) != 0
    ):
        return False
    stamp.write_text(key.hexdigest())
    return True


def run_suite(
    suite: Suite,
    venv: Path,
    tree: Path,
    tests: Sequence[str],
    mode: str,
    jobs: int,
    log: Path,
    *,
    again: bool = False,
    collect: bool = False,
) -> dict:
    """One pytest session of the SDK's suite; returns the outcomes and the internal errors.
    ``again``: ``tests`` are node ids, run alone (the re-run of those that did not pass).
    ``collect``: the suite collected, not run, in one process (the bare side's whole collection,
    which the lane compares with the instrumented run's when it re-runs only a few tests bare)."""
    kind = "-collect" if collect else "-again" if again else ""
    out = WORK / "results" / f"{tree.name}-{venv.name}-{mode}{kind}"
    if (
        mode == "bare"
        and not again
        and os.environ.get("SDK_SUITE_REUSE_BARE")
        and list(out.parent.glob(f"{out.name}.*.json"))
    ):
        return _merged(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OTEL_", "VIRTUAL_ENV"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(SDK_SUITE_MODE=mode)
    if again:
        only = out.parent / f"{out.name}.ids"
        only.write_text("\n".join(tests) + "\n")
        env["SDK_SUITE_ONLY"] = str(only)
        tests = sorted({test.split("::")[0] for test in tests})
    # The SDK's own addopts stay (anthropic's load a plugin of its own); -n after them wins.
    cmd = [
        venv / "bin" / "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "outcome_plugin",
        *(["--collect-only", "-n", "0"] if collect else ["-n", str(jobs), "--durations=30"]),
        "-rN",
        "--continue-on-collection-errors",
        *(f"--ignore={path}" for path in suite.ignore),
        *tests,
    ]
    return pytest_session(cmd, out, log, tree, env)


# What pytest-xdist prints when a worker dies: the tests it had run have no outcome file.
CRASHED = re.compile(r"worker '?\w+'? crashed[^\n]*|\[\w+\] node down[^\n]*|replacing crashed worker \w+")


def pytest_session(cmd: Sequence[str | Path], out: Path, log: Path, cwd: Path, env: dict[str, str]) -> dict:
    """Runs a pytest session with the lane's plugin writing to ``out``; returns its outcome files
    merged, with pytest's exit status and the crash lines of its part of the log, which ``lost``
    reads (kept beside the outcomes, for SDK_SUITE_REUSE_BARE)."""
    for old in [*out.parent.glob(f"{out.name}.*.json"), Path(f"{out}.exit")]:
        old.unlink(missing_ok=True)
    env = {**env, "SDK_SUITE_OUT": str(out)}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    start = log.stat().st_size if log.exists() else 0
    status = _run(cmd, log, cwd=cwd, env=env)
    with log.open("rb") as text:
        text.seek(start)
        crashed = CRASHED.findall(text.read().decode(errors="replace"))
    Path(f"{out}.exit").write_text(json.dumps({"status": status, "crashed": crashed[:5]}))
    return _merged(out)


def _merged(out: Path) -> dict:
    """The session's outcome files (one a process) as one; ``collected`` and ``selected`` are the
    union of the processes' (each xdist worker collects the whole suite)."""
    merged = empty_record()
    collected: set[str] = set()
    selected: set[str] = set()
    for part in sorted(out.parent.glob(f"{out.name}.*.json")):
        found = json.loads(part.read_text())
        for key in ("outcomes", "errors", "failures", "durations"):
            merged[key].update(found.get(key, {}))
        collected.update(found.get("collected", ()))
        selected.update(found.get("selected", ()))
    merged.update(collected=sorted(collected), selected=sorted(selected))
    status = Path(f"{out}.exit")
    if status.exists():
        merged.update(json.loads(status.read_text()))
    return merged


def empty_record() -> dict:
    return {"outcomes": {}, "errors": {}, "failures": {}, "durations": {}, "collected": [], "selected": [],
            "status": None, "crashed": []}  # fmt: skip


# What an exit status means that a failed test does not (pytest's ExitCode; below 0: a signal).
EXIT = {2: "interrupted", 3: "pytest's internal error", 4: "a usage error", 5: "no tests collected"}
FAILING = {"failed", "error", "collect-error"}


def lost(run: dict) -> list[str]:
    """Why a session may have lost tests, empty when it did not: an exit status its outcomes do not
    explain (1 with no failure recorded, 5 with tests to run, anything else but 0), a test it was to
    run with no outcome (its process died before writing it), or a crashed worker in its log."""
    status, problems = run["status"], []
    if status is None:
        problems.append("no exit status recorded")
    elif status == 1 and not FAILING & set(run["outcomes"].values()):
        problems.append("exit 1 (tests failed) and no failure recorded")
    elif status == 5 and run["selected"]:
        problems.append(f"exit 5 (no tests collected) with {len(run['selected'])} to run")
    elif status not in (0, 1, 5):
        problems.append(f"exit {status} ({EXIT.get(status, 'a signal' if status < 0 else 'not pytest')})")
    missing = sorted(set(run["selected"]) - set(run["outcomes"]))
    if missing:
        problems.append(f"{len(missing)} tests it ran have no outcome: {', '.join(missing[:5])}")
    problems += [f"the log says: {line}" for line in run["crashed"]]
    return problems


def collected_differ(bare: dict, instrumented: dict) -> list[str]:
    """The ids one side's whole collection holds and the other's does not."""
    problems = []
    for side, one, other in (("bare", bare, instrumented), ("instrumented", instrumented, bare)):
        alone = sorted(set(one["collected"]) - set(other["collected"]))
        if alone:
            problems.append(f"{len(alone)} tests collected {side} only: {', '.join(alone[:5])}")
    return problems


def accounted(sdk: str, sessions: dict[str, dict], whole: tuple[dict, dict] | None) -> bool:
    """Prints what each session lost and, ``whole`` being the bare and the instrumented side's whole
    collections, what one collected and the other did not; True when nothing was lost."""
    problems = [f"{label}: {problem}" for label, run in sessions.items() for problem in lost(run)]
    problems += collected_differ(*whole) if whole else []
    for problem in problems:
        print(f"  lost: {sdk} {problem}")
    return not problems


# What the package adds by design to the SDK's own execution span (TELEMETRY.md section 3: the
# streamed call's outcome, completed or aborted), which the SDK's tests of its spans' exact
# attributes see: that one extra attribute and nothing else is no difference in behaviour.
BY_DESIGN = re.compile(r"\{'toolcall\.outcome': '(?:completed|aborted)'\}")
# pytest's explanation of a failed ``assert {...} == {...}`` (its last one in the report), and the
# headings of its sections: everything a dict comparison can say, so nothing else is excused.
DICTS = re.compile(r"^(E\s+)?AssertionError: assert \{.*\} == \{.*\}$")
HEADING = re.compile(
    r"^(Omitting \d+ identical items?.*|Common items:|Differing items:|Left contains \d+ more items?:"
    r"|Right contains \d+ more items?:|Full diff:.*|Use -v to get more diff|\.\.\.Full output truncated.*)$"
)


def by_design(name: str, bare: dict, instrumented: dict) -> bool:
    failure = instrumented["failures"].get(name, "")
    return bare["outcomes"].get(name) == "passed" and only_the_outcome_item(failure)


def _explanation(failure: str) -> list[str]:
    """The lines of the report's last dict comparison, stripped of the report's ``E`` column."""
    lines = failure.splitlines()
    heads = [index for index, line in enumerate(lines) if DICTS.match(line)]
    if not heads:
        return []
    block = lines[heads[-1] :]
    if block[0].startswith("E"):
        block = list(itertools.takewhile(lambda line: line.startswith("E"), block))
    return [line.removeprefix("E").strip() for line in block]


def only_the_outcome_item(failure: str) -> bool:
    """True when pytest's dict diff in ``failure`` says the left side has one more item, the
    package's ``toolcall.outcome``, and nothing else."""
    extra = extra_items(failure)
    return extra is not None and len(extra) == 1 and bool(BY_DESIGN.fullmatch(extra[0]))


def extra_items(failure: str) -> list[str] | None:
    """The lines of the items pytest's dict diff in ``failure`` says the left side has more, when
    that is the whole difference: no differing item, no extra item on the right, no line it does
    not know, no explanation cut short before its full diff (which says the same line by line, so
    what follows its heading is not read); None otherwise."""
    section, extra = "", []
    for line in _explanation(failure)[1:]:
        if line == "...":
            return None  # pytest cut the explanation here: what follows is unseen
        if HEADING.match(line):
            if line.startswith("Full diff:"):
                break
            if not line.startswith(("Omitting", "Common", "Left contains", "Use -v")):
                return None  # a differing item, an extra item on the right, a cut
            section = line
        elif not line or section.startswith("Common") or (not section and line.startswith("+  where")):
            continue  # a blank, the identical items, what an operand was
        elif section.startswith("Left contains"):
            extra.append(line)
        else:
            return None  # a line no dict comparison writes there
    return extra or None


def compare(sdk: str, version: str, bare: dict, instrumented: dict) -> bool:
    """Prints the counts and each difference; True when there is none (the package's annotation of
    the SDK's span aside) and no internal error."""
    names = sorted(set(bare["outcomes"]) | set(instrumented["outcomes"]))
    changed = [n for n in names if bare["outcomes"].get(n) != instrumented["outcomes"].get(n)]
    designed = [n for n in changed if by_design(n, bare, instrumented)]
    differ = [n for n in changed if n not in designed]
    tally: dict[str, int] = {}
    for outcome in bare["outcomes"].values():
        tally[outcome] = tally.get(outcome, 0) + 1
    errors = sum(sum(sites.values()) for sites in instrumented["errors"].values())
    erring = [key for key in instrumented["errors"] if not key.startswith("(")]
    print(
        f"{sdk} {version}: {len(names)} tests ({', '.join(f'{v} {k}' for k, v in sorted(tally.items()))}); "
        f"{len(differ)} differ ({len(designed)} more by design); "
        f"toolcall.internal_errors {errors} in {len(erring)} tests"
    )
    for name in differ:
        print(
            f"  differs: {name}: bare {bare['outcomes'].get(name)}, "
            f"instrumented {instrumented['outcomes'].get(name)}"
        )
    for name in designed:
        print(f"  by design (toolcall.outcome on the SDK's own span): {name}")
    _print_errors(instrumented["errors"])
    if not names:
        print(f"  no test ran (see .sdk-suites/logs/{sdk}.log)")
    return bool(names) and not differ and not errors


_NONE: dict = {**empty_record(), "status": 0}


def not_passed(run: dict) -> list[str]:
    """The tests of a run that did not pass (failed, error, skipped, xfailed, xpassed, collect-error)."""
    return sorted(name for name, outcome in run["outcomes"].items() if outcome != "passed")


def settle(sdk: str, version: str, first: dict, bare: dict, again: dict) -> bool:
    """The lane's comparison: ``first`` is the whole suite instrumented; ``bare`` and ``again`` are
    the tests that did not pass there, re-run bare and instrumented. A test differs when its bare
    outcome is neither of its two instrumented ones (a difference seen twice); one the second
    instrumented run settles (a timing test failed under load) is printed, not failed. A test that
    passed instrumented is not re-run: docs/DEVELOPMENT.md says what that leaves out. True when nothing
    differs (the package's annotation of the SDK's span aside) and no internal error was counted."""
    suspects = not_passed(first)
    differ, designed, unsettled = [], [], []
    for name in suspects:
        seen = {first["outcomes"][name], again["outcomes"].get(name)}
        outcome = bare["outcomes"].get(name)
        if outcome is None or None in seen:
            differ.append(name)  # not re-run: its id did not select it, or the session broke
        elif outcome in seen:
            if len(seen) > 1:
                unsettled.append(name)
        elif all(by_design(name, bare, run) for run in (first, again) if run["outcomes"][name] != "passed"):
            designed.append(name)
        else:
            differ.append(name)
    tally: dict[str, int] = {}
    for outcome in first["outcomes"].values():
        tally[outcome] = tally.get(outcome, 0) + 1
    errors = {**first["errors"], **{f"{key} (again)": sites for key, sites in again["errors"].items()}}
    count = sum(sum(sites.values()) for sites in errors.values())
    print(
        f"{sdk} {version}: {len(first['outcomes'])} tests instrumented "
        f"({', '.join(f'{v} {k}' for k, v in sorted(tally.items()))}); {len(suspects)} not passed, "
        f"re-run bare and instrumented: {len(differ)} differ ({len(designed)} more by design, "
        f"{len(unsettled)} settled by the re-run); toolcall.internal_errors {count} in "
        f"{len([key for key in errors if not key.startswith('(')])} tests"
    )
    for name in differ:
        print(
            f"  differs: {name}: bare {bare['outcomes'].get(name)}, instrumented "
            f"{first['outcomes'][name]} then {again['outcomes'].get(name)}"
        )
    for name in designed:
        print(f"  by design (toolcall.outcome on the SDK's own span): {name}")
    for name in unsettled:
        print(
            f"  settled by the re-run: {name}: instrumented {first['outcomes'][name]} then "
            f"{again['outcomes'][name]}, bare {bare['outcomes'][name]}"
        )
    _print_errors(errors)
    if not first["outcomes"]:
        print(f"  no test ran (see .sdk-suites/logs/{sdk}.log)")
    return bool(first["outcomes"]) and not differ and not count


def _print_errors(errors: dict[str, dict[str, int]]) -> None:
    by_site: dict[str, int] = {}
    for sites in errors.values():
        for site, count in sites.items():
            by_site[site] = by_site.get(site, 0) + count
    for site, count in sorted(by_site.items()):
        print(f"  internal errors at {site}: {count}")
    for key in list(errors)[:20]:
        print(f"  internal errors in {key}: {errors[key]}")


def _children_cpu() -> float:
    # The suites' CPU (user + sys): what the lane costs on a shared machine, whatever its load.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def count_errors(sdk: str, version: str, instrumented: dict) -> bool:
    return compare(sdk, version, instrumented, instrumented)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("sdks", nargs="*", help=f"of {', '.join(SUITES)} (default: all)")
    parser.add_argument("--version", help="the SDK's release (default: the newest tested_versions.py states)")
    parser.add_argument(
        "--tests", nargs="+", help="paths inside the SDK's tree (default: tests/lib and a few)"
    )
    parser.add_argument("--source", type=Path, help="an SDK checkout whose tests run instead of the sdist's")
    parser.add_argument("--errors-only", action="store_true", help="the instrumented run alone: its errors")
    parser.add_argument(
        "--full",
        action="store_true",
        default=bool(os.environ.get("SDK_SUITE_FULL")),
        help="run the whole suite bare too (twice the time), not only what did not pass instrumented",
    )
    parser.add_argument("--package", type=Path, default=ROOT, help="the otel_toolcalls source to install")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=int(os.environ.get("SDK_SUITE_JOBS", "0")),
        help="pytest-xdist workers per suite (default: 2 for one suite, 1 each for several)",
    )
    args = parser.parse_args(argv)
    unknown = set(args.sdks) - set(SUITES)
    if unknown:
        parser.error(f"no suite for {', '.join(sorted(unknown))}")
    sdks = args.sdks or list(SUITES)
    if len(sdks) > 1:
        return side_by_side(sdks, [arg for arg in argv if arg not in SUITES])
    return lane(sdks[0], args)


def side_by_side(sdks: Sequence[str], rest: Sequence[str]) -> int:
    """Each suite in a process of its own, side by side, with one xdist worker each unless told:
    each worker collects the whole suite. One worker, not none: the SDKs' CI runs them under xdist,
    and inline-snapshot (openai's) checks its snapshots only without it."""
    jobs = [] if any(arg.startswith(("-j", "--jobs")) for arg in rest) else ["-j", "1"]
    runs = [
        subprocess.Popen(
            [sys.executable, __file__, sdk, *rest, *jobs],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for sdk in sdks
    ]
    for run in runs:
        print(run.communicate()[0], end="", flush=True)
    return 1 if any(run.returncode for run in runs) else 0


def lane(sdk: str, args: argparse.Namespace) -> int:
    """One SDK's suite: fetched, installed, run and compared; 0 when green."""
    jobs = args.jobs or 2
    start = time.monotonic()
    version = args.version or TESTED[sdk][1]
    (WORK / "logs").mkdir(parents=True, exist_ok=True)
    log = WORK / "logs" / f"{sdk}{_other(args.package.resolve())}.log"
    log.write_text("")
    tree = args.source.resolve() if args.source else sdist(sdk, version, log)
    suite = SUITES[sdk]
    venv = venv_for(suite, version, tree, args.package.resolve(), log)
    tests = args.tests or ["tests/lib", *suite.beside]
    ran = time.monotonic(), _children_cpu()
    instrumented = run_suite(suite, venv, tree, tests, "instrumented", jobs, log)
    sessions, whole = {"instrumented": instrumented}, None
    if args.errors_only:
        green = count_errors(sdk, version, instrumented)
    elif args.full:
        bare = run_suite(suite, venv, tree, tests, "bare", jobs, log)
        sessions["bare"], whole = bare, (bare, instrumented)
        green = compare(sdk, version, bare, instrumented)
    else:
        # The bare side's whole collection, one process and no test run: what the re-run of a few
        # tests cannot show, a test only one side collects.
        collection = run_suite(suite, venv, tree, tests, "bare", jobs, log, collect=True)
        suspects = not_passed(instrumented)
        bare, again = (
            (
                run_suite(suite, venv, tree, suspects, "bare", jobs, log, again=True),
                run_suite(suite, venv, tree, suspects, "instrumented", jobs, log, again=True),
            )
            if suspects
            else (_NONE, _NONE)
        )
        sessions.update({"bare collection": collection, "bare re-run": bare, "instrumented re-run": again})
        whole = (collection, instrumented)
        green = settle(sdk, version, instrumented, bare, again)
    green = accounted(sdk, sessions, whole) and green
    print(
        f"{sdk} {version}: {time.monotonic() - start:.0f}s in all, the runs {time.monotonic() - ran[0]:.0f}s "
        f"(cpu {_children_cpu() - ran[1]:.0f}s; log: {log.relative_to(ROOT)})",
        flush=True,
    )
    return 0 if green else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
