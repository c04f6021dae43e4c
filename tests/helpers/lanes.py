"""Which venv runs which adapter's tests. The main venv (``make unit``) has every provider SDK and
the frameworks the main suite drives; the agent frameworks below pin dependencies that conflict
with it, and run in the venvs ``make frameworks`` builds. A venv where one of them is installed is
a framework lane: the lane-aware tests (import order, declared targets, doctor) run there for its
frameworks; the provider SDKs are the main venv's."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from packaging.version import Version

from otel_toolcalls._wiring.adapters import adapter_names, load

ROOT = Path(__file__).resolve().parents[2]
# venv -> its requirements file: each framework at its newest, at the last release of its previous
# tool-execution design, and at the oldest it covers (otel_toolcalls/_wiring/tested_versions.py says which).
FRAMEWORK_LANES = {
    ".venv-frameworks": "tests/frameworks/requirements.txt",
    ".venv-frameworks-previous": "tests/frameworks/requirements-previous.txt",
    ".venv-frameworks-floor": "tests/frameworks/requirements-floor.txt",
    ".venv-frameworks-mid": "tests/frameworks/requirements-mid.txt",
    ".venv-crewai": "tests/frameworks/requirements-crewai.txt",
    ".venv-crewai-previous": "tests/frameworks/requirements-crewai-previous.txt",
    ".venv-crewai-floor": "tests/frameworks/requirements-crewai-floor.txt",
    ".venv-crewai-mid": "tests/frameworks/requirements-crewai-mid.txt",
    ".venv-claude-agent": "tests/frameworks/requirements-claude-agent.txt",
    ".venv-claude-agent-floor": "tests/frameworks/requirements-claude-agent-floor.txt",
}
# Lanes on another interpreter than the main venv's: venv -> (requirements file, its Python, the
# adapters whose tests it runs). Strands' BidiAgent and aws-sdk-bedrock-runtime need Python 3.12+
# (make bidi runs tests/providers/test_bedrock_bidi.py and
# tests/frameworks/strands_bidi/test_strands_bidi.py).
_BIDI = ("bedrock_bidi", "strands_bidi")
OTHER_PYTHON_LANES = {
    ".venv-bidi": ("tests/frameworks/requirements-bidi.txt", "3.12", _BIDI),
    ".venv-bidi-floor": ("tests/frameworks/requirements-bidi-floor.txt", "3.12", _BIDI),
    ".venv-bidi-sdk": ("tests/frameworks/requirements-bidi-sdk.txt", "3.12", ("bedrock_bidi",)),
}
FRAMEWORK_ADAPTERS = (
    "agent_framework",
    "agno",
    "autogen",
    "claude_agent_sdk",
    "crewai",
    "dspy",
    # dspy.LM's default engine, the lm15 DSPy bundles: a provider adapter, in DSPy's venvs.
    "dspy_lm15",
    "google_adk",
    "haystack",
    "llama_index",
    "smolagents",
    "strands",
)

# adapter -> the version lanes (tests/versions/run.py) whose venvs hold its SDK, kept out of the
# main venv because it pins a dependency below the main venv's (aiobotocore: botocore).
VERSION_LANE_ADAPTERS = {"aiobotocore": ("aiobotocore", "aiobotocore-floor")}
# Version lanes that are framework lanes: the main venv's frameworks at a release between their
# floor and newest, each lane's lane-aware tests run for these adapters (tests/versions/run.py pins
# their distributions and runs those tests there; tests/wiring/test_import_order.py checks it).
VERSION_FRAMEWORK_LANES = {
    "main-frameworks-mid": ("agents_realtime", "agents_responses_ws", "langchain", "mcp", "openai_agents",
                            "pydantic_ai"),
}


def requires(adapter: str) -> Any:
    return load(adapter).REQUIRES


# Adapters whose surface is younger than their distribution's oldest framework lane: the first
# release with it (DSPy bundles lm15 from 3.4.0). An older release has nothing for them to trace.
SINCE = {"dspy_lm15": "3.4.0"}


def _has_surface(adapter: str, version: str | None) -> bool:
    """A release of the adapter's distribution (None: the newest) with the surface it covers."""
    since = SINCE.get(adapter)
    return since is None or version is None or Version(version) >= Version(since)


def installed(adapter: str) -> bool:
    version = requires(adapter).version()
    return version is not None and _has_surface(adapter, version)


def targets_here(adapter: str) -> list[tuple[str, str]]:
    """The installed release's targets, less those of surfaces it does not have (mcp's server: one
    target per major)."""
    req = requires(adapter)
    absent = set(req.absent_modules())
    return [(module, attr) for module, attr in req.installed_targets() if module not in absent]


def requirement_names(path: str) -> set[str]:
    """The distributions a requirements file names (extras and version specifiers dropped)."""
    names = set()
    for line in (ROOT / path).read_text().splitlines():
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line.split("#")[0])
        if match and not line.lstrip().startswith("-"):
            names.add(match.group(1).lower().replace("_", "-"))
    return names


def requirement_pins(path: str) -> dict[str, str]:
    """distribution -> version, for the ``name==version`` lines of a requirements file."""
    pins = {}
    for line in (ROOT / path).read_text().splitlines():
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)", line)
        if match:
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def _lanes_of(adapter: str) -> list[tuple[str, str]]:
    sdk = requires(adapter).sdk
    return [
        (venv, path)
        for venv, path in FRAMEWORK_LANES.items()
        if sdk in requirement_names(path) and _has_surface(adapter, requirement_pins(path).get(sdk))
    ]


# adapter -> the framework lanes (venv, requirements file) that install its distribution
FRAMEWORK_VENVS = {adapter: _lanes_of(adapter) for adapter in FRAMEWORK_ADAPTERS}
# The framework lane this interpreter is (its venv's directory name), if it is one.
LANE_HERE = Path(sys.prefix).name if Path(sys.prefix).name in FRAMEWORK_LANES else None
# The version lane this interpreter is (.version-venvs/<lane>), if it is a framework lane.
_PREFIX = Path(sys.prefix)
_IN_VERSION_LANE = _PREFIX.parent.name == ".version-venvs" and _PREFIX.name in VERSION_FRAMEWORK_LANES
VERSION_LANE_HERE = _PREFIX.name if _IN_VERSION_LANE else None

FRAMEWORKS_HERE = [a for a in sorted(FRAMEWORK_VENVS) if installed(a)] or sorted(
    VERSION_FRAMEWORK_LANES.get(VERSION_LANE_HERE or "", ())
)
# The adapters this venv's lane-aware tests cover.
HERE = FRAMEWORKS_HERE or [a for a in adapter_names() if installed(a)]


def _expanded(line: str, variables: dict[str, str]) -> str:
    """``line`` with its ``$(NAME)`` variables expanded, those inside their values too."""
    while True:
        done = re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m.group(1), m.group(0)), line)
        if done == line:
            return done
        line = done


def make_recipe(target: str) -> list[str]:
    """The recipe lines of a Makefile target, with ``$(FW_VENV)``-style variables expanded."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")  # continued lines, joined
    variables = dict(re.findall(r"^([A-Z_]+) :?= (.*)$", text, re.M))
    lines, inside = [], False
    for line in text.splitlines():
        if re.match(rf"^{re.escape(target)}:", line):
            inside = True
        elif inside and line.startswith("\t"):
            lines.append(_expanded(line, variables))
        elif inside:
            break
    return lines
