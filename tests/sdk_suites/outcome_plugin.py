"""The pytest plugin of the SDK-suites lane (tests/sdk_suites/run.py), loaded with ``-p`` into the
SDK's own test session, before its conftest imports the SDK.

``SDK_SUITE_MODE=instrumented`` turns the package on at import, with in-memory providers of its own
(never the global ones: the SDK's own tracing tests set and read those). Either mode writes, per
process (xdist workers each their own file), each test's outcome and, instrumented, the
``toolcall.internal_errors`` counted during it, by ``error.site``, to ``$SDK_SUITE_OUT.<process>.json``,
with the node ids it collected (before any deselection) and those it was to run. That file is written
once collection ends and again when the session ends: a process that dies in between (a crashed xdist
worker) leaves the ids it was to run without outcomes, which run.py counts as lost.
``SDK_SUITE_ONLY`` names a file of node ids, one a line: the session runs those alone (the re-run of
the tests that did not pass; given on the command line, a parametrized id can fail to parse).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pytest

_READER: Any = None

if os.environ.get("SDK_SUITE_MODE") == "instrumented":
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_toolcalls import ToolCallsInstrumentor

    _READER = InMemoryMetricReader()
    _TRACER_PROVIDER = TracerProvider()
    _TRACER_PROVIDER.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    ToolCallsInstrumentor().instrument(
        tracer_provider=_TRACER_PROVIDER, meter_provider=MeterProvider(metric_readers=[_READER])
    )


def internal_errors() -> Counter[str]:
    """``error.site`` -> the cumulative ``toolcall.internal_errors`` so far (empty when bare)."""
    counts: Counter[str] = Counter()
    data = _READER.get_metrics_data() if _READER is not None else None
    for resource in getattr(data, "resource_metrics", None) or ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != "toolcall.internal_errors":
                    continue
                for point in metric.data.data_points:
                    counts[str(point.attributes.get("error.site", "?"))] += int(point.value)
    return counts


class _Record:
    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.errors: dict[str, dict[str, int]] = {}
        # nodeid -> the end of its first failure's report (run.py tells a by-design difference by it).
        self.failures: dict[str, str] = {}
        # nodeid -> seconds in setup, call and teardown (where a suite's time goes).
        self.durations: dict[str, float] = {}
        # Every id the session collected, and those it was to run (none under --collect-only).
        self.collected: list[str] = []
        self.selected: list[str] = []
        self._seen: Counter[str] = Counter()

    def take_errors(self, key: str) -> None:
        now = internal_errors()
        new = {site: count - self._seen[site] for site, count in now.items() if count > self._seen[site]}
        if new:
            self.errors[key] = new
        self._seen = now

    def outcome(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.when == "call" or report.outcome != "passed":
            if hasattr(report, "wasxfail"):
                result = "xfailed" if report.outcome == "skipped" else "xpassed"
            elif report.outcome == "failed" and report.when != "call":
                result = "error"
            else:
                result = report.outcome
            # The first result that is not a pass wins (a teardown error after a pass).
            if self.outcomes.get(report.nodeid, "passed") == "passed":
                self.outcomes[report.nodeid] = result
                if report.failed:
                    self.failures[report.nodeid] = str(report.longrepr)[-3000:]
        if report.when == "teardown":
            self.take_errors(report.nodeid)


_RECORD = _Record()


def _runs_tests(config: pytest.Config) -> bool:
    """False in pytest-xdist's controller: its workers run the tests and write their own files."""
    return hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # First, so the ids are the whole collection, before this or any plugin deselects.
    _RECORD.collected = [item.nodeid for item in items]
    only = os.environ.get("SDK_SUITE_ONLY")
    if not only:
        return
    with open(only) as handle:
        wanted = set(handle.read().splitlines())
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in wanted])
    items[:] = [item for item in items if item.nodeid in wanted]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _RECORD.outcome(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _RECORD.outcomes[report.nodeid] = "collect-error"


def pytest_collection_finish(session: pytest.Session) -> None:
    if not session.config.option.collectonly:
        _RECORD.selected = [item.nodeid for item in session.items]
    _write(session.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _RECORD.take_errors("(outside a test: import, collection)")
    _write(session.config)


def _write(config: pytest.Config) -> None:
    if not _runs_tests(config):
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    out = f"{os.environ['SDK_SUITE_OUT']}.{worker}.json"
    with open(out, "w") as handle:
        json.dump(
            {
                "outcomes": _RECORD.outcomes,
                "errors": _RECORD.errors,
                "failures": _RECORD.failures,
                "durations": _RECORD.durations,
                "collected": _RECORD.collected,
                "selected": _RECORD.selected,
            },
            handle,
        )
