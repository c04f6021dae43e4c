"""Tools run by a Celery worker, in another process: the call's outcome and link cross with the
``toolcalls`` propagator (TELEMETRY.md section 8).

The test starts Debian's ``redis-server`` (installed by ``make unit`` when missing) on a free
127.0.0.1 port as broker and result backend, a real worker
(``opentelemetry-instrument celery -A celery_tasks worker``, strict mode) and the agent
(tests/remote_apps/celery_agent.py: the openai SDK streaming from the fake provider, enqueueing each
call inside ``tool_call_context``), all under ``opentelemetry-instrument`` with
``opentelemetry-instrumentation-celery`` and exporting over OTLP to the test's receiver. Each
scenario runs once per propagator setting; the tests read its results, spans and side effects.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import markers
import pytest
from otlp_receiver import attributes
from remote_apps import agent_calls
from remote_kit import OFF, ON, VENV_BIN, Process, Scenario, redis_server, served

FIRST, SECOND, CUT = (call.id for call in agent_calls.CALLS)
LINK_TYPE = {"gen_ai.attribution.link_type": "CAUSED_BY_GENERATION"}


def _redis() -> str:
    path = shutil.which("redis-server")
    if path is None:
        markers.missing("redis-server", "make redis-server: Debian's redis-server package")
    return path


def _worker_command() -> list[str]:
    # The solo pool: the task runs in the worker process itself, which opentelemetry-instrument set up.
    celery = [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "--pool=solo"]
    return [str(VENV_BIN / "opentelemetry-instrument"), *celery, "--loglevel=INFO", "--without-heartbeat"]


def _scenario(tmp: Path, propagators: str) -> Scenario:
    def ready(worker: Process) -> dict[str, str]:
        worker.wait_for_line("", contains=" ready.")
        return {}

    with redis_server(_redis()) as broker:
        return served(
            tmp, propagators, server=_worker_command(), ready=ready, agent="celery_agent.py",
            executions=len, cut=CUT, CELERY_BROKER_URL=broker,  # one execution per task
        )  # fmt: skip


@pytest.fixture(scope="module")
def on(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    yield _scenario(tmp_path_factory.mktemp("celery-on"), ON)


@pytest.fixture(scope="module")
def off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    yield _scenario(tmp_path_factory.mktemp("celery-off"), OFF)


def test_the_agent_streamed_two_complete_calls_and_one_cut(on: Scenario) -> None:
    outcomes = {cid: attributes(s.attributes)["toolcall.outcome"] for cid, s in on.tool_calls.items()}
    assert outcomes == {FIRST: "completed", SECOND: "completed", CUT: "aborted"}


@pytest.mark.parametrize("call_id", [FIRST, SECOND])
def test_completed_call_is_linked_across_processes(on: Scenario, call_id: str) -> None:
    answer = on.results[call_id]
    assert answer["outcome"] == "completed" and answer["toolcall"].startswith("00-completed-")
    run_span, call_span = on.execution(call_id), on.tool_calls[call_id]
    attrs = attributes(run_span.attributes)
    assert attrs["toolcall.outcome"] == "completed" and attrs["gen_ai.tool.call.id"] == call_id
    assert run_span.trace_id == call_span.trace_id  # one trace: the agent's turn, through the message
    (link,) = run_span.links
    assert (link.trace_id, link.span_id) == (call_span.trace_id, call_span.span_id)
    assert attributes(link.attributes) == LINK_TYPE
    # The execution ran inside the worker's task span (the Celery instrumentation's CONSUMER span).
    task_span = on.server_spans[run_span.parent_span_id.hex()]
    assert task_span.kind == task_span.SpanKind.SPAN_KIND_CONSUMER
    assert call_id in on.ran


def test_cut_call_is_refused_in_strict_mode_and_its_task_body_never_runs(on: Scenario) -> None:
    answer = on.results[CUT]
    assert answer["refused"] is True and answer["outcome"] == "aborted"
    assert answer["toolcall"].startswith("00-aborted-")
    (refused,) = on.refused
    attrs = attributes(refused.attributes)
    assert attrs["toolcall.outcome"] == "aborted"
    assert attrs["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert not refused.links
    assert CUT not in on.ran


@pytest.mark.parametrize("label", ["outside", "never_streamed"])
def test_nothing_is_injected_outside_a_seen_call(on: Scenario, label: str) -> None:
    answer = on.results[label]
    assert answer["toolcall"] is None and answer["outcome"] is None and "refused" not in answer
    run_span = on.execution(label)
    assert attributes(run_span.attributes)["toolcall.outcome"] == "unknown" and not run_span.links


@pytest.mark.parametrize("label", sorted(agent_calls.MESSAGE_HEADERS))
def test_bad_header_is_harmless(on: Scenario, label: str) -> None:
    answer = on.results[label]
    assert answer["outcome"] is None and "refused" not in answer
    assert answer["toolcall"] is not None  # it did arrive
    run_span = on.execution(label)
    assert attributes(run_span.attributes)["toolcall.outcome"] == "unknown" and not run_span.links
    assert answer["call_id"] in on.ran
    assert "Traceback" not in on.server_output
    # Nothing raised and was kept quiet, nor counted as the package's own failure.
    assert "otel_toolcalls: could not" not in on.server_output
    assert "otel_toolcalls: internal error" not in on.server_output


def test_well_formed_header_is_taken_at_its_word(on: Scenario) -> None:
    # The control for the bad headers: the same message with one header of the exact form.
    assert on.results["well_formed"]["outcome"] == "completed"
    (link,) = on.execution("well_formed").links
    assert link.span_id.hex() == "00f067aa0ba902b7"


def test_propagator_absent_is_todays_behaviour(off: Scenario) -> None:
    for label, answer in off.requests.items():
        assert answer["outcome"] is None and "refused" not in answer, label
        run_span = off.execution(label)
        assert attributes(run_span.attributes)["toolcall.outcome"] == "unknown", label
        assert not run_span.links, label
    for label in (FIRST, SECOND, CUT, "outside", "never_streamed"):
        assert off.results[label]["toolcall"] is None, label
    assert CUT in off.ran  # strict mode has nothing to refuse with: the cut call's task body runs
    # tracecontext still crossed: only the call's outcome is missing.
    assert off.execution(FIRST).trace_id == off.tool_calls[FIRST].trace_id
