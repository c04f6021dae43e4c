from __future__ import annotations

import gc
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import markers
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls._core import process
from otel_toolcalls.testing import FakeProvider

# A framework adapter's tests are in tests/frameworks/<adapter>/, whichever venv runs them; the
# venv is said here, not by the folder. The agent frameworks below pin dependencies that conflict with
# the main venv's SDKs: the modules listed are the tests the framework venvs run (make frameworks,
# with --framework-venv), each with the module it needs (None: none, the main venv runs it too); every
# other test is the main venv's. Where that module is not installed the test module is not collected
# at all (not skipped): the main suite neither imports nor counts it.
FRAMEWORK_VENV_TESTS: dict[str, str | None] = {
    "frameworks/agent_framework/test_agent_framework.py": "agent_framework",
    "frameworks/agno/test_agno.py": "agno",
    "frameworks/autogen/test_autogen.py": "autogen_agentchat",
    "frameworks/claude_agent_sdk/test_claude_agent_sdk.py": "claude_agent_sdk",
    "frameworks/claude_agent_sdk/test_claude_agent_sdk_lines.py": None,
    "frameworks/claude_agent_sdk/test_claude_code_tools.py": "claude_agent_sdk",
    "frameworks/crewai/test_crewai.py": "crewai",
    "frameworks/dspy/test_dspy.py": "dspy",
    "frameworks/google_adk/test_google_adk.py": "google.adk",
    "frameworks/google_adk/test_google_adk_live.py": "google.adk",
    "frameworks/haystack/test_haystack.py": "haystack",
    "frameworks/llama_index/test_llama_index.py": "llama_index.core",
    "frameworks/smolagents/test_smolagents.py": "smolagents",
    "frameworks/strands/test_strands.py": "strands",
}
TESTS = Path(__file__).resolve().parent


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# SDKs that pin dependencies below the main venv's, tested in a version lane of their own
# (tests/versions/run.py): their modules are likewise collected only where the SDK is installed.
_LANE_SDK_OF = {
    "providers/test_bedrock_async.py": "aiobotocore",
    # aws-sdk-bedrock-runtime and Strands' BidiAgent need Python 3.12+: the bidi lane's venv.
    "providers/test_bedrock_bidi.py": "aws_sdk_bedrock_runtime",
    "frameworks/strands_bidi/test_strands_bidi.py": "aws_sdk_bedrock_runtime",
}

_WHICH_GUARD = pytest.StashKey[markers.WhichGuard]()

# The package's pytest plugin is opt-in (no pytest11 entry point): its own tests load it as a user's
# conftest.py would. counted_skips (tests/helpers) checks every skip under `make test`.
pytest_plugins = ["otel_toolcalls.testing.pytest_plugin", "counted_skips"]

collect_ignore = [
    path
    for path, module in {**FRAMEWORK_VENV_TESTS, **_LANE_SDK_OF}.items()
    if module is not None and not _installed(module)
]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--framework-venv",
        action="store_true",
        help="collect only the framework venvs' tests (FRAMEWORK_VENV_TESTS) and the files named",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In a framework venv, a test module neither listed nor named on the command line is not collected:
    the main venv's tests of the same framework sit beside the listed ones."""
    if not config.getoption("framework_venv") or not collection_path.name.startswith("test_"):
        return None
    path = collection_path.resolve()
    if path.suffix != ".py" or not path.is_relative_to(TESTS) or path in _named(config):
        return None
    return None if path.relative_to(TESTS).as_posix() in FRAMEWORK_VENV_TESTS else True


def _named(config: pytest.Config) -> set[Path]:
    return {Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args}


class Telemetry:
    """What a test reads back: finished spans and metric points."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def tool_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith("tool_call ")]

    def one(self, prefix: str) -> ReadableSpan:
        found = [s for s in self.spans() if s.name.startswith(prefix)]
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        out.extend(m.data.data_points)
        return out

    def calls_by_outcome(self) -> dict[tuple[str, str | None], int]:
        counts: dict[tuple[str, str | None], int] = {}
        for point in self.points("toolcall.calls"):
            attrs = point.attributes
            key = (attrs["toolcall.outcome"], attrs.get("toolcall.abort_reason"))
            counts[key] = counts.get(key, 0) + point.value
        return counts


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    yield Telemetry()


@pytest.fixture
def instrument(telemetry: Telemetry) -> Iterator[Any]:
    """Instruments with the test's providers; returns a function to re-instrument with settings."""
    instrumentor = ToolCallsInstrumentor()
    process.reset()  # nothing another test left: remembered calls, open streams, warned sites

    def apply(**settings: Any) -> ToolCallsInstrumentor:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
        instrumentor.instrument(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider, **settings
        )
        return instrumentor

    apply()
    yield apply
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


@pytest.fixture
def elsewhere(instrument: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Another telemetry made the package's active one after ``instrument()`` (as a second
    instrumentor's would be): an adapter must keep using the telemetry ``instrument()`` gave it. The
    exporter returned sees the spans that went to the wrong one."""
    from otel_toolcalls._config import resolve
    from otel_toolcalls._core import telemetry as _telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(_telemetry, "_ACTIVE", _telemetry.Telemetry(resolve(), tracer_provider=provider))
    yield exporter


@pytest.fixture(scope="session", autouse=True)
def frozen_heap() -> None:
    """Instrument once (the test modules imported their SDKs at collection, so every adapter loads
    what it patches), then freeze the heap: later collections (the tests that check
    garbage-collected streams) walk only the tests' own objects."""
    probe = ToolCallsInstrumentor()
    probe.instrument(tracer_provider=TracerProvider(), meter_provider=MeterProvider())
    probe.uninstrument()
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="module")
def shared_provider() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def fake(shared_provider: FakeProvider) -> Iterator[FakeProvider]:
    """One server per test module; each test starts with no script queued and no request seen."""
    shared_provider.reset()
    yield shared_provider
    shared_provider.reset()  # a failed test must not leave its script to the next one


# The `e2e` and `timing` markers, applied from one list (tests/helpers/markers.py); they only select.
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    markers.apply(items)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_WHICH_GUARD] = markers.install_guard()


def pytest_unconfigure(config: pytest.Config) -> None:
    guard = config.stash.get(_WHICH_GUARD, None)
    if guard is not None:
        markers.remove_guard(guard)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    guard = item.config.stash.get(_WHICH_GUARD, None)
    if guard is not None:
        guard.current = item
    try:
        return (yield)
    finally:
        if guard is not None:
            guard.current = None
