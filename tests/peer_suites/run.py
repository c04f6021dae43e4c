"""The peer-suites lane: the peers' own test suites (those whose sdists carry their tests), run bare
and with the package instrumented on the peer's own tracer and meter providers, in both orders.

For each peer of PEERS its sdist is fetched from PyPI, a venv of its own is built from its lock
(tests/locks/peer-suite-<name>.txt: the peer, the test requirements its sdist declares, the package's
dependencies; the package editable), and its ``tests/`` runs three times: bare; ``after`` (each time
the suite instruments the peer, the package is instrumented right after it, on the providers the
suite handed the peer); ``before`` (the package right before it). The lane's plugin
(tests/peer_suites/peer_plugin.py) records, test by test, what the package made and added. Each
test whose outcome differs from bare is classed:

  (a) the package's own spans under the peer's (or its inference span for a request the peer does
      not trace, which the package makes as it would alone): the failure is a count of spans, or
      the test met one of those spans where it expected the peer's, and they make the difference;
  (b) its documented ``toolcall.*`` annotations on an adopted span: the failure is a dict comparison
      whose only difference is extra ``toolcall.*`` items the package set on the peer's span;
  (c) anything else.

The lane fails on a second inference span (the package's inference span while a peer's was open,
whether or not the test saw it), on a run where the package recorded nothing, on any
``toolcall.internal_errors``, on any (c), and on any test lost (the SDK-suites lane's guards: an
exit status the outcomes do not explain, a test with no outcome, a test one run collects and
another does not).

    python3 tests/peer_suites/run.py                 # every peer, both orders
    python3 tests/peer_suites/run.py openai-v2 --orders after

Everything lives under .peer-suites/ (venvs, sdists, logs, results).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import tomllib

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WORK = ROOT / ".peer-suites"


def _sdk_suites() -> ModuleType:
    """The SDK-suites lane's runner (a script, not a package): its sessions and its guards."""
    spec = importlib.util.spec_from_file_location("sdk_suites_run", ROOT / "tests" / "sdk_suites" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


suites = _sdk_suites()


def _requirements_file(path: str) -> Callable[[Path], list[str]]:
    """The pins of a requirements file of the sdist (its ``-e`` lines are the peer's own repository)."""

    def read(tree: Path) -> list[str]:
        lines = (line.split("#", 1)[0].strip() for line in (tree / path).read_text().splitlines())
        return [line for line in lines if line and not line.startswith("-")]

    return read


def _dependency_group(group: str, leave: str) -> Callable[[Path], list[str]]:
    """A dependency group of the sdist's pyproject.toml, less what matches ``leave``."""

    def read(tree: Path) -> list[str]:
        specs = tomllib.loads((tree / "pyproject.toml").read_text())["dependency-groups"][group]
        return [spec for spec in specs if not re.match(leave, spec)]

    return read


@dataclass(frozen=True)
class Peer:
    name: str
    dist: str
    version: str
    # ``module:Class`` of its instrumentor: where the lane's plugin instruments the package beside it.
    instrumentor: str
    # The test requirements its sdist declares (its CI installs them with the peer).
    tests_need: Callable[[Path], list[str]]
    # What its sdist's tests import that its CI installs by other means.
    beside: Sequence[str] = ()


# The peers whose sdists carry their tests. OpenInference's openai and anthropic sdists carry none
# (their tests are in the repository only).
PEERS = {
    "openai-v2": Peer(
        "openai-v2", "opentelemetry-instrumentation-openai-v2", "2.4b0",
        "opentelemetry.instrumentation.openai_v2:OpenAIInstrumentor",
        _requirements_file("tests/requirements.latest.txt"),
        # tox installs the OpenTelemetry SDK beside that file, and util-genai from the same commit:
        # 2.4b0 asks for >= 0.4b0.dev with no ceiling, and imports a module that 1.x no longer has.
        beside=["opentelemetry-sdk", "opentelemetry-util-genai==0.4b0"],
    ),
    "openllmetry-openai": Peer(
        "openllmetry-openai", "opentelemetry-instrumentation-openai", "0.62.4",
        "opentelemetry.instrumentation.openai:OpenAIInstrumentor",
        # pytest-sugar only redraws pytest's progress.
        _dependency_group("test", r"pytest-sugar\b"),
    ),
}  # fmt: skip

ORDERS = ("after", "before")


def requirements(peer: Peer, tree: Path | None) -> list[str]:
    """What the peer's venv holds beside the package: the release and, read from its sdist
    (``tree``; None: the release alone, which fixes the rest), its test requirements."""
    return [f"{peer.dist}=={peer.version}", *(peer.tests_need(tree) if tree else ()), *peer.beside]


def lock_of(peer: Peer) -> Path:
    return ROOT / "tests" / "locks" / f"peer-suite-{peer.name}.txt"


def venv_for(peer: Peer, log: Path) -> Path:
    venv = WORK / f"venv-{peer.name}"
    if not suites.installed(venv, None, lock_of(peer), ROOT, log):
        raise SystemExit(f"{peer.name}: install failed (see {log})")
    return venv


def session(peer: Peer, venv: Path, tree: Path, order: str, log: Path, *, collect: bool = False) -> dict:
    """One pytest session of the peer's suite (``order``: bare, after, before), with the outcome
    plugin of the SDK-suites lane and the lane's own; returns its outcomes with the facts."""
    out = WORK / "results" / f"{peer.name}-{order}{'-collect' if collect else ''}"
    out.parent.mkdir(parents=True, exist_ok=True)
    for old in out.parent.glob(f"{out.name}-facts.*.json"):
        old.unlink()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OTEL_", "VIRTUAL_ENV"))}
    env.update(SDK_SUITE_MODE="bare", PEER_SUITE_ORDER=order, PEER_SUITE_INSTRUMENTOR=peer.instrumentor,
               PYTHONPATH=str(HERE))  # fmt: skip
    cmd = [venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "outcome_plugin",
           "-p", "peer_plugin", "-rN", "--continue-on-collection-errors",
           *(["--collect-only"] if collect else []), "tests"]  # fmt: skip
    return with_facts(suites.pytest_session(cmd, out, log, tree, env), out)


def with_facts(run: dict, out: Path) -> dict:
    """``run`` with the facts its processes' plugins wrote (peer_plugin.py), merged."""
    run["facts"], run["recorded"] = {}, 0
    for part in sorted(out.parent.glob(f"{out.name}-facts.*.json")):
        found = json.loads(part.read_text())
        run["facts"].update(found["tests"])
        run["recorded"] += found["recorded"]
    return run


# A count of spans compared (``assert 3 == 2``, the left one a ``len(...)``), or one of the
# package's spans met where the test expected the peer's (``spans[0]``: the package's end first), by
# its name or by the attributes only its own ``tool_call`` spans carry.
COUNT = re.compile(r"^E\s+(?:AssertionError: )?assert (\d+) == (\d+)$")
OWN_NAME = re.compile(r"['\"](?:tool_call|execute_tool) ")
OWN_ATTRIBUTES = re.compile(r"^(?:E\s+.*|self = )\{?.*'toolcall\.tool\.name': ")
# A sequence of spans compared whole (``spans == ()``), the left one longer.
MORE_SPANS = re.compile(
    r"^E\s+Left contains (one|\d+) more items?(?:, first extra item)?: "
    r"<opentelemetry\.sdk\.trace\.ReadableSpan"
)


def _assertion(failure: str) -> list[str]:
    """The ``E`` lines of the report's last failed assertion."""
    lines = failure.splitlines()
    heads = [index for index, line in enumerate(lines) if line.startswith("E ")]
    if not heads:
        return []
    block = [lines[heads[-1]]]
    for line in reversed(lines[: heads[-1]]):
        if not line.startswith("E "):
            break
        block.insert(0, line)
    return block


def own_spans_seen(failure: str, own: int) -> bool:
    """The failed assertion is a count of spans (or a sequence of them) off by at most the package's
    own spans (under the peer's, or its inference span for a request the peer did not trace), or it
    met one of the package's spans: by its name, or reading one of its attributes."""
    if any(OWN_ATTRIBUTES.match(line) for line in failure.splitlines()):
        return True
    block = _assertion(failure)
    for line in block:
        more = MORE_SPANS.match(line)
        if more:
            # and no span of both sides differs
            return int(more.group(1).replace("one", "1")) <= own and not any("At index" in x for x in block)
    for index, line in enumerate(block):
        found = COUNT.match(line)
        if found and any(f"where {found.group(1)} = len(" in rest for rest in block[index + 1 :]):
            return 0 < int(found.group(1)) - int(found.group(2)) <= own
    return bool(block) and bool(OWN_NAME.search(block[0]))


def annotations_only(failure: str, annotated: Sequence[str]) -> bool:
    """The failure is a dict comparison whose whole difference is extra items on the left, each a
    ``toolcall.*`` key the package set on the peer's span in that test."""
    extra = suites.extra_items(failure)
    try:
        items = ast.literal_eval(" ".join(extra or ()))
    except (ValueError, SyntaxError):
        return False
    return isinstance(items, dict) and bool(items) and set(items) <= set(annotated)


def classify(name: str, bare: dict, run: dict) -> str:
    """``second`` (a second inference span: never by design), ``a``, ``b`` or ``c``."""
    facts = run["facts"].get(name, {})
    if facts.get("second"):
        return "second"
    failure = run["failures"].get(name, "")
    if bare["outcomes"].get(name) != "passed" or run["outcomes"].get(name) != "failed":
        return "c"
    own = facts.get("own_under_peer", 0) + facts.get("alone", 0)
    if own and own_spans_seen(failure, own):
        return "a"
    if facts.get("annotated") and annotations_only(failure, facts["annotated"]):
        return "b"
    return "c"


CLASSES = {
    "second": "a second inference span",
    "a": "(a) the package's own spans under the peer's",
    "b": "(b) its toolcall.* annotations on the adopted span",
    "c": "(c) anything else",
}


def judge(peer: Peer, order: str, bare: dict, run: dict, say: Callable[[str], None]) -> bool:
    """Says the counts of one order and each difference; True when it passes the lane's rules."""
    names = sorted(set(bare["outcomes"]) | set(run["outcomes"]))
    changed = {n for n in names if bare["outcomes"].get(n) != run["outcomes"].get(n)}
    second = {n for n, facts in run["facts"].items() if facts.get("second")}
    classes: dict[str, list[str]] = {key: [] for key in CLASSES}
    for name in sorted(changed | second):
        classes[classify(name, bare, run)].append(name)
    errors: dict[str, int] = {}
    for facts in run["facts"].values():
        for site, count in facts["errors"].items():
            errors[site] = errors.get(site, 0) + count
    say(
        f"{peer.name} {peer.version} {order}: {len(run['outcomes'])} tests, {len(changed)} differ from bare "
        f"({len(classes['a'])} a, {len(classes['b'])} b, {len(classes['c'])} c, "
        f"{len(changed & second)} second inference span); {len(second)} tests with a second inference "
        f"span; the package recorded {run['recorded']} spans and annotations; "
        f"toolcall.internal_errors {sum(errors.values())}"
    )
    for key in ("second", "c"):
        for name in classes[key]:
            outcome = f"bare {bare['outcomes'].get(name)}, {order} {run['outcomes'].get(name)}"
            say(f"  {CLASSES[key]}: {name.split('/tests/', 1)[-1]}: {outcome}")
    for site, count in sorted(errors.items()):
        say(f"  internal errors at {site}: {count}")
    if not run["recorded"]:
        say(f"  the package recorded nothing in {order}")
    return not (second or classes["c"] or errors) and run["recorded"] > 0


def lost_tests(bare: dict, runs: dict[str, dict]) -> list[str]:
    """What each session lost (the SDK-suites lane's guards), and the tests an order collected that
    bare did not, or the other way round."""
    sessions = {"bare": bare, **runs}
    problems = [f"{label}: {problem}" for label, run in sessions.items() for problem in suites.lost(run)]
    return problems + [
        f"{order}: {p}" for order, run in runs.items() for p in suites.collected_differ(bare, run)
    ]


def lane(peer: Peer, orders: Sequence[str], say: Callable[[str], None]) -> bool:
    """One peer's suite: fetched, installed, run bare and in each order, judged; True when green."""
    start = time.monotonic()
    (WORK / "logs").mkdir(parents=True, exist_ok=True)
    log = WORK / "logs" / f"{peer.name}.log"
    log.write_text("")
    tree = suites.sdist(peer.dist, peer.version, log, WORK)
    venv = venv_for(peer, log)
    bare = session(peer, venv, tree, "bare", log)
    runs = {order: session(peer, venv, tree, order, log) for order in orders}
    green = all([judge(peer, order, bare, run, say) for order, run in runs.items()])
    problems = lost_tests(bare, runs)
    for problem in problems:
        say(f"  lost: {peer.name} {problem}")
    say(f"{peer.name}: {time.monotonic() - start:.0f}s (log: {log.relative_to(ROOT)})")
    return green and not problems


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("peers", nargs="*", help=f"of {', '.join(PEERS)} (default: all)")
    parser.add_argument("--orders", nargs="+", choices=ORDERS, default=list(ORDERS))
    args = parser.parse_args(argv)
    unknown = set(args.peers) - set(PEERS)
    if unknown:
        parser.error(f"no suite for {', '.join(sorted(unknown))}")
    chosen = [PEERS[name] for name in args.peers or PEERS]
    # Side by side, each peer's report kept together: their sessions are one process each.
    reports: dict[str, list[str]] = {peer.name: [] for peer in chosen}
    with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
        greens = list(pool.map(lambda peer: lane(peer, args.orders, reports[peer.name].append), chosen))
    for lines in reports.values():
        print("\n".join(lines), flush=True)
    return 0 if all(greens) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
