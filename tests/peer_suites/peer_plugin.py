"""The peer-suites lane's pytest plugin (tests/peer_suites/run.py), loaded with ``-p`` beside the
SDK-suites lane's outcome plugin, into the peer's own test session.

``PEER_SUITE_ORDER`` ``after`` or ``before``: each time the suite instruments the peer
(``PEER_SUITE_INSTRUMENTOR``, ``module:Class``), the package is instrumented right after or right
before it, on the tracer and meter providers the suite gave the peer (again, should the suite give
new ones). A peer's ``uninstrument()`` leaves the package on: a peer whose ``uninstrument()`` unwraps
nothing still runs, and the package must not be off beside it. ``bare``: nothing is instrumented.

Test by test it records what the package made on those providers: its own spans (and how many under
a peer's span), its inference spans beside a peer's CLIENT span (a second inference span:
overlapping it, or for the same model) and those beside none (a request the peer did not trace),
the ``toolcall.*`` keys it set on a peer's span, and each internal error (the package logs each one,
``otel_toolcalls: internal error in <site>``). Written per process to
``$SDK_SUITE_OUT-facts.<process>.json``.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from typing import Any

import pytest

ORDER = os.environ.get("PEER_SUITE_ORDER", "bare")
SCOPE = "otel_toolcalls"
OUTSIDE = "(outside a test)"
ERROR = "otel_toolcalls: internal error in "
MODEL = "gen_ai.request.model"


def _new_facts() -> dict[str, Any]:
    return {"own": 0, "own_under_peer": 0, "alone": 0, "second": [], "annotated": [], "errors": {}}


class _Facts:
    def __init__(self) -> None:
        self.tests: dict[str, dict[str, Any]] = {}
        self.current = OUTSIDE
        self.ended: list[Any] = []
        self.recorded = 0

    def now(self) -> dict[str, Any]:
        return self.tests.setdefault(self.current, _new_facts())

    def span_ended(self, span: Any) -> None:
        self.ended.append(span)
        facts = self.now()
        if span.instrumentation_scope is not None and span.instrumentation_scope.name == SCOPE:
            self.recorded += 1
            if span.kind.name != "CLIENT":
                facts["own"] += 1
                facts["own_under_peer"] += span.parent is not None and self._peer_parent(span)
            return
        keys = sorted(key for key in span.attributes or {} if key.startswith("toolcall."))
        if keys:
            self.recorded += 1
            facts["annotated"] = sorted({*facts["annotated"], *keys})

    def _peer_parent(self, span: Any) -> bool:
        parents = [one for one in self.ended if one.context.span_id == span.parent.span_id]
        # Its parent ends after it: not seen yet here is the peer's span still open.
        return not parents or parents[0].instrumentation_scope.name != SCOPE

    def test_ended(self) -> None:
        """The package's inference spans beside a peer's CLIENT span of the same test: one that
        overlapped it, or one for the same model (a peer's span that is never current can start
        after the package's has ended)."""
        ours = [s for s in self.ended if s.instrumentation_scope.name == SCOPE and s.kind.name == "CLIENT"]
        peers = [s for s in self.ended if s.instrumentation_scope.name != SCOPE and s.kind.name == "CLIENT"]
        for span in ours:
            if any(_beside(span, peer) for peer in peers):
                self.now()["second"].append(span.name)
            else:
                self.now()["alone"] += 1  # a request the peer did not trace
        self.ended = []

    def error(self, site: str) -> None:
        errors = self.now()["errors"]
        errors[site] = errors.get(site, 0) + 1


def _beside(ours: Any, peer: Any) -> bool:
    model = (ours.attributes or {}).get(MODEL)
    overlap = peer.start_time <= ours.end_time and ours.start_time <= peer.end_time
    return overlap or (model is not None and (peer.attributes or {}).get(MODEL) == model)


FACTS = _Facts()


class _ErrorLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(ERROR):
            FACTS.error(message.removeprefix(ERROR).split(" ", 1)[0])


def _watch(tracer_provider: Any, watched: list[Any] = []) -> None:  # noqa: B006 - the providers seen
    from opentelemetry.sdk.trace import SpanProcessor

    class _Watch(SpanProcessor):
        def on_end(self, span: Any) -> None:
            FACTS.span_ended(span)

    if hasattr(tracer_provider, "add_span_processor") and not any(p is tracer_provider for p in watched):
        watched.append(tracer_provider)
        tracer_provider.add_span_processor(_Watch())


def _ours_on(kwargs: dict[str, Any]) -> None:
    """The package instrumented on the providers the peer was given (the global ones where none)."""
    from opentelemetry import metrics, trace

    from otel_toolcalls import ToolCallsInstrumentor

    tracer_provider = kwargs.get("tracer_provider") or trace.get_tracer_provider()
    meter_provider = kwargs.get("meter_provider") or metrics.get_meter_provider()
    _watch(tracer_provider)
    ours = ToolCallsInstrumentor()
    if ours.is_instrumented_by_opentelemetry:
        ours.uninstrument()
    ours.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)


def _beside_the_peer() -> None:
    module, name = os.environ["PEER_SUITE_INSTRUMENTOR"].split(":")
    peer = getattr(importlib.import_module(module), name)
    original = peer._instrument

    def _instrument(self: Any, **kwargs: Any) -> Any:
        if ORDER == "before":
            _ours_on(kwargs)
        result = original(self, **kwargs)
        if ORDER == "after":
            _ours_on(kwargs)
        return result

    peer._instrument = _instrument
    handler = _ErrorLog(logging.DEBUG)
    logger = logging.getLogger(SCOPE)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


if ORDER in ("after", "before"):
    _beside_the_peer()


def pytest_runtest_logstart(nodeid: str) -> None:
    FACTS.test_ended()
    FACTS.current = nodeid


def pytest_runtest_logfinish(nodeid: str) -> None:
    FACTS.test_ended()
    FACTS.current = OUTSIDE


def pytest_collection_finish(session: pytest.Session) -> None:
    _write(session.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    FACTS.test_ended()
    _write(session.config)


def _write(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    facts = {test: facts for test, facts in FACTS.tests.items() if facts != _new_facts()}
    with open(f"{os.environ['SDK_SUITE_OUT']}-facts.{worker}.json", "w") as handle:
        json.dump({"tests": facts, "recorded": FACTS.recorded, "order": ORDER}, handle)
