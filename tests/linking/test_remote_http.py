"""Tools behind HTTP, in another process: the call's outcome and link cross with the ``toolcalls``
propagator (TELEMETRY.md section 8).

Two real processes under ``opentelemetry-instrument``, both exporting over OTLP to the test's
receiver: the agent (tests/remote_apps/http_agent.py: the openai SDK streaming from the fake provider,
httpx with ``opentelemetry-instrumentation-httpx``) and the tool service
(tests/remote_apps/http_tool_service.py: Starlette under uvicorn in the ASGI instrumentation's
middleware, strict mode, ``execute_tool(call_id)`` in the context the middleware extracted). Each
scenario runs once per propagator setting; the tests read its results, spans and side effects.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from otlp_receiver import attributes
from remote_apps import agent_calls
from remote_kit import OFF, ON, Process, Scenario, instrumented, served

FIRST, SECOND, CUT = (call.id for call in agent_calls.CALLS)
COMPLETED_CALLS = (FIRST, SECOND)
LINK_TYPE = {"gen_ai.attribution.link_type": "CAUSED_BY_GENERATION"}


def _scenario(tmp: Path, propagators: str) -> Scenario:
    def ready(server: Process) -> dict[str, str]:
        return {"TOOL_SERVICE_URL": f"http://127.0.0.1:{server.wait_for_line('LISTENING ')}"}

    return served(
        tmp, propagators, server=instrumented("http_tool_service.py"), ready=ready, agent="http_agent.py",
        # Every request but provider_headers made an execution span.
        executions=lambda results: len(results) - 1, cut=CUT,
    )  # fmt: skip


@pytest.fixture(scope="module")
def on(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    yield _scenario(tmp_path_factory.mktemp("http-on"), ON)


@pytest.fixture(scope="module")
def off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    yield _scenario(tmp_path_factory.mktemp("http-off"), OFF)


def test_the_agent_streamed_two_complete_calls_and_one_cut(on: Scenario) -> None:
    outcomes = {cid: attributes(s.attributes)["toolcall.outcome"] for cid, s in on.tool_calls.items()}
    assert outcomes == {FIRST: "completed", SECOND: "completed", CUT: "aborted"}


@pytest.mark.parametrize("call_id", COMPLETED_CALLS)
def test_completed_call_is_linked_across_processes(on: Scenario, call_id: str) -> None:
    answer = on.results[call_id]
    assert answer["status"] == 200 and answer["outcome"] == "completed"
    (header,) = answer["toolcall"]
    assert header.startswith("00-completed-")
    run_span, call_span = on.execution(call_id), on.tool_calls[call_id]
    attrs = attributes(run_span.attributes)
    assert attrs["toolcall.outcome"] == "completed" and attrs["gen_ai.tool.call.id"] == call_id
    assert run_span.trace_id == call_span.trace_id  # one trace: the agent's turn, through httpx
    (link,) = run_span.links
    assert (link.trace_id, link.span_id) == (call_span.trace_id, call_span.span_id)
    assert attributes(link.attributes) == LINK_TYPE
    # The execution ran inside the server's request span, whose parent is the agent's httpx span.
    server_span = on.server_spans[run_span.parent_span_id.hex()]
    assert server_span.kind == server_span.SpanKind.SPAN_KIND_SERVER
    assert call_id in on.ran


def test_service_without_an_id_of_its_own_runs_the_carried_call(on: Scenario) -> None:
    answer = on.results["adopted"]
    assert answer["status"] == 200 and answer["toolcall"][0].startswith("00-completed-")
    run_span, call_span = on.execution("adopted"), on.tool_calls[SECOND]
    assert attributes(run_span.attributes)["gen_ai.tool.call.id"] == SECOND
    assert attributes(run_span.attributes)["toolcall.outcome"] == "completed"
    (link,) = run_span.links
    assert link.span_id == call_span.span_id


def test_cut_call_is_refused_in_strict_mode_and_its_tool_never_runs(on: Scenario) -> None:
    answer = on.results[CUT]
    assert answer["status"] == 409 and answer["refused"] is True and answer["outcome"] == "aborted"
    (header,) = answer["toolcall"]
    assert header.startswith("00-aborted-")
    (refused,) = on.refused
    attrs = attributes(refused.attributes)
    assert attrs["toolcall.outcome"] == "aborted"
    assert attrs["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert not refused.links
    assert CUT not in on.ran
    assert "Traceback" not in on.server_output
    # Nothing raised and was kept quiet, nor counted as the package's own failure.
    assert "otel_toolcalls: could not" not in on.server_output
    assert "otel_toolcalls: internal error" not in on.server_output


@pytest.mark.parametrize("label", ["outside", "never_streamed"])
def test_nothing_is_injected_outside_a_seen_call(on: Scenario, label: str) -> None:
    answer = on.results[label]
    assert answer["toolcall"] == [] and answer["outcome"] is None and answer["status"] == 200
    run_span = on.execution(label)
    assert attributes(run_span.attributes)["toolcall.outcome"] == "unknown" and not run_span.links


def test_nothing_is_injected_into_the_provider_requests(on: Scenario) -> None:
    assert len(on.results["provider_headers"]) == 2
    for headers in on.results["provider_headers"]:
        assert "toolcall" not in {name.lower() for name in headers}
        assert "traceparent" in {name.lower() for name in headers}  # the httpx instrumentation ran


@pytest.mark.parametrize("label", sorted(agent_calls.BAD_HEADERS))
def test_bad_header_is_harmless(on: Scenario, label: str) -> None:
    answer = on.results[label]
    assert answer["status"] == 200 and answer["outcome"] is None and "refused" not in answer
    assert answer["toolcall"]  # it did arrive
    run_span = on.execution(label)
    assert attributes(run_span.attributes)["toolcall.outcome"] == "unknown" and not run_span.links
    assert answer["call_id"] in on.ran
    assert "Traceback" not in on.server_output
    # Nothing raised and was kept quiet, nor counted as the package's own failure.
    assert "otel_toolcalls: could not" not in on.server_output
    assert "otel_toolcalls: internal error" not in on.server_output


def test_well_formed_header_is_taken_at_its_word(on: Scenario) -> None:
    # The control for the bad headers: the same request with one header of the exact form.
    answer = on.results["well_formed"]
    assert answer["outcome"] == "completed"
    (link,) = on.execution("well_formed").links
    assert link.span_id.hex() == "00f067aa0ba902b7"


def test_propagator_absent_is_todays_behaviour(off: Scenario) -> None:
    for label, answer in off.requests.items():
        assert answer["status"] == 200 and answer["outcome"] is None, label
        run_span = off.execution(label)
        assert attributes(run_span.attributes)["toolcall.outcome"] == "unknown", label
        assert not run_span.links, label
    for label in (FIRST, SECOND, CUT, "outside", "never_streamed"):
        assert off.results[label]["toolcall"] == [], label
    assert CUT in off.ran  # strict mode has nothing to refuse with: the cut call's tool runs
    # tracecontext still crossed: only the call's outcome is missing.
    assert off.execution(FIRST).trace_id == off.tool_calls[FIRST].trace_id
