"""Import order: every adapter sees its SDK however and whenever the application imports it.

The matrix runs each app of ``tests/apps`` (one SDK or framework, imported as its docs do, one tool
call streamed from the fake provider) as users run it: ``opentelemetry-instrument python app.py``
(instrument() first, the SDK imported by the app) and through ``_before.py`` (the SDK first). The
runs are subprocesses started together, a few at a time; each test reads its own.

Each venv runs the apps of its lane (``tests/helpers/lanes.py``): the main venv every app whose SDK it has
(all but the agent frameworks'), each framework venv of ``make frameworks`` its frameworks' apps.

The other tests drive ``_imports`` in process with small packages written to ``tmp_path``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from console_spans import console_spans
from lanes import (
    FRAMEWORK_VENVS,
    FRAMEWORKS_HERE,
    HERE,
    LANE_HERE,
    OTHER_PYTHON_LANES,
    VERSION_FRAMEWORK_LANES,
    VERSION_LANE_ADAPTERS,
    VERSION_LANE_HERE,
    installed,
    make_recipe,
    requirement_names,
    requires,
)

from otel_toolcalls._wiring import imports as _imports
from otel_toolcalls._wiring.adapters import adapter_names, load

APPS = Path(__file__).resolve().parents[1] / "apps"
# Adapters whose SDK needs another interpreter than the main venv's: no app here; their lane runs
# their example under opentelemetry-instrument in both import orders instead
# (test_other_interpreter_lanes_run_their_example).
OTHER_PYTHON_ADAPTERS = {adapter for _, _, adapters in OTHER_PYTHON_LANES.values() for adapter in adapters}
EXAMPLE_CASE = "def test_the_example_under_opentelemetry_instrument(order"
VENV_BIN = Path(sys.executable).parent
VARIANTS = ("sdk_after_instrument", "sdk_before_instrument")
# adapter -> (the span it is responsible for: the tool-call span or the tool's execution span, the
# call id its app streams).
ADAPTERS = {
    "openai": ("call", "call_openai"),
    "openai_realtime": ("call", "call_openai_realtime"),
    "openai_responses_ws": ("call", "call_openai_responses_ws"),
    "agents_realtime": ("call", "call_agents_realtime"),
    "agents_responses_ws": ("call", "call_agents_responses_ws"),
    "groq": ("call", "call_groq"),
    "anthropic": ("call", "toolu_weather_01"),
    "bedrock": ("call", "tooluse_weather_1"),
    "aiobotocore": ("call", "tooluse_aiobotocore_1"),
    "gemini": ("call", "fc_weather_1"),
    "gemini_live": ("call", "fc_gemini_live"),
    "mistral": ("call", "call_mistral"),
    "cohere": ("call", "call_cohere"),
    "litellm": ("call", "call_litellm"),
    "lm15": ("call", "call_lm15"),
    "dspy_lm15": ("call", "call_dspy_lm15"),
    "huggingface": ("call", "call_huggingface"),
    # The ollama client keeps no call id (TELEMETRY section 6, "No id"): the app's tool name instead.
    "ollama": ("call", "get_local_weather"),
    "anthropic_tools": ("execution", "toolu_runner_01"),
    "langchain": ("execution", "call_langchain"),
    "pydantic_ai": ("execution", "call_pydantic_ai"),
    "openai_agents": ("execution", "call_openai_agents"),
    "mcp": ("execution", "call_mcp"),
    "llama_index": ("execution", "call_llama_index"),
    "strands": ("execution", "call_strands"),
    "google_adk": ("execution", "call_google_adk"),
    "autogen": ("execution", "call_autogen"),
    "crewai": ("execution", "call_crewai"),
    "smolagents": ("execution", "call_smolagents"),
    "agent_framework": ("execution", "call_agent_framework"),
    "agno": ("execution", "call_agno"),
    "claude_agent_sdk": ("execution", "toolu_claude_agent_sdk"),
    "haystack": ("execution", "call_haystack"),
    "dspy": ("execution", "call_dspy"),
}
# More calls an app streams, each checked as its adapter's first: google_adk's through Runner.run_live.
MORE_CALLS = {"google_adk": ("call_google_adk_live",), "claude_agent_sdk": ("toolu_claude_code_bash",)}
# The adapters whose app's call is found by its tool name, the SDK keeping no id.
BY_TOOL_NAME = {"ollama"}
# (adapter, venv, requirements) for every framework lane of every framework adapter.
LANES_OF = [(a, venv, path) for a, lanes in sorted(FRAMEWORK_VENVS.items()) for venv, path in lanes]
# The apps this venv runs.
MATRIX = [adapter for adapter in sorted(ADAPTERS) if adapter in HERE]
# This module's case a version lane runs for the apps of the SDKs it holds.
SPAN_CASE = "tests/wiring/test_import_order.py::test_the_span_comes_out"
# The SDK-first variant runs every app in one process (tests/apps/_before.py).
ALL = "all"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        OTEL_SERVICE_NAME="import-order",
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OTEL_TOOLCALLS_CLAUDE_CODE_TOOLS="true",  # the Claude Code CLI's own tools (app_claude_agent_sdk)
    )
    return env


def _command(adapter: str, variant: str) -> list[str]:
    if variant == "sdk_after_instrument":
        app = str(APPS / f"app_{adapter}.py")
        return [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, app]
    return [sys.executable, str(APPS / "_before.py"), *(str(APPS / f"app_{a}.py") for a in MATRIX)]


def _run(adapter: str, variant: str) -> subprocess.CompletedProcess[str]:
    # Each run its own data directory: CrewAI keeps its task outputs in one SQLite file there
    # (named after the working directory, the same for every run), which runs side by side would
    # write and read at once.
    with tempfile.TemporaryDirectory() as data:
        return subprocess.run(
            _command(adapter, variant),
            env={**_env(), "XDG_DATA_HOME": data},
            cwd=APPS,
            capture_output=True,
            text=True,
            timeout=600,  # a hang guard, not a performance bound
        )


def _key(adapter: str, variant: str) -> tuple[str, str]:
    return (adapter if variant == "sdk_after_instrument" else ALL, variant)


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest) -> Any:
    """Starts every selected run at once (the one SDK-first process first: it is the longest); the
    pool keeps the cores busy."""
    wanted = set()
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.module is sys.modules[__name__] and "variant" in params:
            wanted.add(_key(params["adapter"], params["variant"]))
    started = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    futures: dict[tuple[str, str], Future[subprocess.CompletedProcess[str]]] = {
        key: pool.submit(_run, *key) for key in sorted(wanted, key=lambda key: key[0] != ALL)
    }
    yield futures
    pool.shutdown(wait=True)
    print(f"\nimport-order matrix: {len(futures)} processes in {time.perf_counter() - started:.1f} s")


def test_every_adapter_has_an_app() -> None:
    names = sorted(set(adapter_names()) - OTHER_PYTHON_ADAPTERS)
    assert sorted(ADAPTERS) == names
    assert sorted(p.stem.removeprefix("app_") for p in APPS.glob("app_*.py")) == names


def test_other_interpreter_lanes_run_their_example() -> None:
    """Each adapter of the lanes on another interpreter (make bidi) has a lane that runs a test of
    its example under opentelemetry-instrument, with the SDK imported before and after the
    instrumentation."""
    root = Path(__file__).resolve().parents[2]
    shown = set()
    for venv, (_, _, adapters) in OTHER_PYTHON_LANES.items():
        recipe = " ".join(line for line in make_recipe("bidi") if f"OTEL_TOOLCALLS_LANE={venv} " in line)
        modules = [word for word in recipe.split() if word.endswith(".py")]
        assert modules, venv
        assert all(any(adapter in module for module in modules) for adapter in adapters), modules
        cases = [m for m in modules if EXAMPLE_CASE in (root / m).read_text()]
        assert all('"instrument-first", "sdk-first"' in (root / m).read_text() for m in cases), cases
        shown |= set(adapters) if cases else set()
    assert shown == OTHER_PYTHON_ADAPTERS


def test_the_main_venv_runs_every_app_but_the_frameworks() -> None:
    if VERSION_LANE_HERE:
        # The main venv's frameworks at another release: their apps, every one installed.
        assert sorted(VERSION_FRAMEWORK_LANES[VERSION_LANE_HERE]) == MATRIX
        assert all(installed(adapter) for adapter in MATRIX)
    elif FRAMEWORKS_HERE:
        # A framework lane: its frameworks' apps, every one installed (none silently absent).
        assert LANE_HERE is not None, sys.prefix
        assert sorted(a for a, venv, _ in LANES_OF if venv == LANE_HERE) == MATRIX
    else:
        others = set(FRAMEWORK_VENVS) | set(VERSION_LANE_ADAPTERS) | OTHER_PYTHON_ADAPTERS
        assert sorted(set(adapter_names()) - others) == MATRIX


@pytest.mark.parametrize("adapter", sorted(VERSION_LANE_ADAPTERS))
def test_version_lane_apps_run_in_their_lanes(adapter: str) -> None:
    """An SDK kept out of the main venv (it pins what the main venv has newer) has its app run by
    the version lanes that install it: their tests include the app's import-order case."""
    lane = _version_lanes()
    runs = [
        each.name
        for each in lane.LANES
        if requires(adapter).sdk in each.pins and SPAN_CASE in each.tests
    ]
    assert sorted(runs) == sorted(VERSION_LANE_ADAPTERS[adapter])
    assert "opentelemetry-distro" in [x for each in lane.LANES if each.name in runs for x in each.extra]


LANE_AWARE = ["tests/wiring/test_import_order.py", "tests/wiring/test_missing_targets.py",
              "tests/tooling/test_doctor.py"]


@pytest.mark.parametrize("name", sorted(VERSION_FRAMEWORK_LANES))
def test_version_framework_lanes_pin_their_frameworks_and_run_the_lane_aware_tests(name: str) -> None:
    """A version lane named a framework lane (tests/helpers/lanes.py) pins each of its adapters' distributions
    and runs their tests and the lane-aware ones, with opentelemetry-instrument."""
    (lane,) = [each for each in _version_lanes().LANES if each.name == name]
    pinned = {spec.split("[", 1)[0].lower() for spec in lane.pins}
    for adapter in VERSION_FRAMEWORK_LANES[name]:
        assert requires(adapter).sdk in pinned, adapter
        assert f"tests/frameworks/{adapter}/test_frameworks_{adapter}.py" in lane.tests, adapter
    assert set(LANE_AWARE) <= set(lane.tests)
    assert "opentelemetry-distro" in lane.extra


def _version_lanes() -> Any:
    spec = importlib.util.spec_from_file_location("version_lane", APPS.parent / "versions" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["version_lane"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("adapter", "venv", "requirements"), LANES_OF, ids=[f"{a}-runs-in-{v}" for a, v, _ in LANES_OF]
)
def test_framework_apps_run_in_their_venv(adapter: str, venv: str, requirements: str) -> None:
    """The apps not run here run there: the venv's requirements install the adapter's distribution
    and opentelemetry-instrument, and ``make frameworks`` runs this module with its Python."""
    names = requirement_names(requirements)
    assert {requires(adapter).sdk, "opentelemetry-distro"} <= names
    recipe = make_recipe("frameworks")
    this = "tests/wiring/test_import_order.py"
    runs = [line for line in recipe if f"{venv}/bin/python" in line and this in line]
    assert runs, recipe
    assert (adapter in MATRIX) == installed(adapter)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("adapter", MATRIX)
def test_the_span_comes_out(runs: Any, adapter: str, variant: str) -> None:
    kind, call_id = ADAPTERS[adapter]
    result = runs[_key(adapter, variant)].result()
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"APP OK {call_id}" in result.stdout.splitlines(), result.stderr[-4000:]
    # A healthy SDK is instrumented without a word.
    assert "otel_toolcalls" not in result.stderr, result.stderr[-4000:]
    spans = console_spans(result.stdout)
    for each in (call_id, *MORE_CALLS.get(adapter, ())):
        _assert_span(spans, adapter, kind, each)


def _assert_span(spans: list[Any], adapter: str, kind: str, call_id: str) -> None:
    key = "toolcall.tool.name" if adapter in BY_TOOL_NAME else "toolcall.call.id"
    calls = [s for s in spans if s["name"].startswith("tool_call ") and s["attributes"].get(key) == call_id]
    assert len(calls) == 1, [s["name"] for s in spans]
    call = calls[0]["attributes"]
    assert call["toolcall.outcome"] == "completed"
    requires = load(adapter).REQUIRES
    if kind == "call" and requires.provider is not None:
        assert call["gen_ai.provider.name"] == requires.provider
    if kind == "execution":
        executions = [
            s
            for s in spans
            if s["attributes"].get("gen_ai.operation.name") == "execute_tool"
            and s["attributes"].get("gen_ai.tool.call.id") == call_id
            and "toolcall.outcome" in s["attributes"]
        ]
        assert len(executions) == 1, [s["name"] for s in spans]
        execution = executions[0]
        assert execution["attributes"]["toolcall.outcome"] == "completed"
        (link,) = execution["links"]
        assert link["context"]["span_id"] == calls[0]["context"]["span_id"]


# -- _imports in process ----------------------------------------------------------------------------


@pytest.fixture
def packages(tmp_path: Path) -> Any:
    """Writes packages under tmp_path (importable), and forgets their modules afterwards."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)

    def write(files: dict[str, str]) -> None:
        for name, text in files.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        importlib.invalidate_caches()

    yield write
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        del sys.modules[name]


# A namespace package (no nsdk/__init__.py) whose client package imports the patched module first
# and defines more after it, as mistralai 3.x does.
NAMESPACE_SDK = {
    "nsdk/client/__init__.py": "from .chat import Chat\nLAST = 'client finished'\n",
    "nsdk/client/chat.py": "class Chat:\n    def stream(self):\n        return 'chunks'\n",
}


def test_a_namespace_package_fires_once_its_import_has_finished(packages: Any) -> None:
    packages(NAMESPACE_SDK)
    seen: list[Any] = []
    _imports.when_imported(
        ["nsdk.client.chat"], lambda: seen.append(getattr(sys.modules["nsdk.client"], "LAST", None))
    )
    assert seen == []
    from nsdk.client import Chat  # type: ignore[import-not-found]

    # Once, and only after nsdk/client/__init__.py ran to its end (not when chat.py finished).
    assert seen == ["client finished"]
    assert Chat().stream() == "chunks"
    importlib.import_module("nsdk.client.chat")
    assert seen == ["client finished"]


def test_a_module_imported_by_a_sibling_fires_once_the_sibling_has_finished(packages: Any) -> None:
    # As boto3 -> botocore.session -> botocore.client: the adapter imports more of the package
    # when it applies, which must not find botocore.session half-run.
    packages({
        "fam/__init__.py": "",
        "fam/session.py": "import fam.client\nREADY = True\n",
        "fam/client.py": "class BaseClient:\n    pass\n",
    })
    seen: list[Any] = []
    _imports.when_imported(
        ["fam.client"], lambda: seen.append(getattr(sys.modules["fam.session"], "READY", None))
    )
    importlib.import_module("fam.session")
    assert seen == [True]


def test_the_module_looks_as_without_the_package(packages: Any) -> None:
    packages(NAMESPACE_SDK)
    _imports.when_imported(["nsdk.client.chat"], lambda: None)
    # Asked before the import, the loader answers as the real one does.
    spec = importlib.util.find_spec("nsdk.client")
    assert isinstance(spec.loader, importlib.machinery.SourceFileLoader)
    assert spec.loader.is_package("nsdk.client") is True
    import nsdk.client.chat  # type: ignore[import-not-found]

    for module in (sys.modules["nsdk.client"], nsdk.client.chat):
        assert type(module.__loader__).__name__ == "SourceFileLoader"
        assert module.__spec__.loader is module.__loader__
    assert sys.modules["nsdk"].__spec__.submodule_search_locations is not None


def test_an_imported_module_fires_at_once_and_a_cancelled_wait_never(packages: Any) -> None:
    packages(NAMESPACE_SDK)
    importlib.import_module("nsdk.client")
    seen: list[str] = []
    _imports.when_imported(["nsdk.client.chat"], lambda: seen.append("now"))
    assert seen == ["now"]
    packages({"other/__init__.py": "", "other/mod.py": "X = 1\n"})
    wait = _imports.when_imported(["other.mod"], lambda: seen.append("never"))
    wait.cancel()
    importlib.import_module("other.mod")
    assert seen == ["now"]


def test_a_failed_import_fires_nothing_and_a_later_one_does(packages: Any) -> None:
    failing = "import os\nif os.environ.get('FLAKY_FAIL'):\n    raise RuntimeError('boom')\n"
    packages({"flaky/__init__.py": "", "flaky/mod.py": failing})
    seen: list[str] = []
    _imports.when_imported(["flaky.mod"], lambda: seen.append("imported"))
    os.environ["FLAKY_FAIL"] = "1"
    try:
        with pytest.raises(RuntimeError):
            importlib.import_module("flaky.mod")
    finally:
        del os.environ["FLAKY_FAIL"]
    assert seen == []
    assert not any(name.startswith("flaky") for name in _imports._running)
    importlib.import_module("flaky.mod")
    assert seen == ["imported"]
