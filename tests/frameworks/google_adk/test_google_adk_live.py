"""Google ADK live: ``Runner.run_live`` with a ``LiveRequestQueue``, its Gemini model on google-genai's
Live client, against the fake Live server (real WebSocket frames over TLS on 127.0.0.1).

The model's calls are the Gemini Live adapter's (``tool_call`` spans, a ``toolCallCancellation``
revoked); ADK's live tool execution is the google_adk adapter's (its ``execute_tool`` span annotated
and linked). ADK itself ignores a cancellation: it runs the cancelled call and answers its id.

Observed: from 1.39.1 ADK holds a turn's calls until its ``turnComplete`` (a cancellation sent
before it is read before ADK runs anything), so strict mode refuses the cancelled call's body and
``run_live`` raises the refusal to its caller (as ``run_async`` does). 1.20.0 runs each call as its
``toolCall`` arrives, before the cancellation is read: both calls run, linked, and the cancelled
one's ``tool_call`` span ends ``aborted`` afterwards (TELEMETRY section 6, "Revoked after
completion": an execution started before the revocation keeps its link). It ends so although ADK
had answered it: 1.20 answers through the deprecated ``session.send(input=...)``, which the Gemini
Live adapter does not read as an answer (it reads ``send_tool_response``), so nothing sealed it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import google.adk
import pytest
from examples_run import run_example
from framework_spans import ADK_SCOPE, Body, executions, trace_adk
from google import genai
from google.adk.agents import LlmAgent
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.models import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.trace import StatusCode
from packaging.version import Version

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing import gemini_live as live

body = Body()
ADK = Version(google.adk.__version__)
# Whether ADK runs a turn's calls at its turnComplete (the module docstring), or at each toolCall.
HOLDS_CALLS = Version("1.39.1") <= ADK
POOL = Version("1.24.0") <= ADK  # RunConfig.tool_thread_pool_config
KEPT = live.FunctionCall("get_weather", {"location": "Zürich"}, "fc_kept")
CANCELLED = live.FunctionCall("get_weather", {"location": "Bern"}, "fc_cancelled")
ANSWER = "Sunny."


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


@pytest.fixture(scope="module")
def shared_endpoint() -> Iterator[live.LiveEndpoint]:
    endpoint = live.LiveEndpoint()
    yield endpoint
    endpoint.stop()


@pytest.fixture
def endpoint(shared_endpoint: live.LiveEndpoint, monkeypatch: Any) -> Iterator[live.LiveEndpoint]:
    body.calls.clear()
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")  # ADK's Gemini asks for one; the fake takes any
    shared_endpoint.reset()
    yield shared_endpoint
    shared_endpoint.reset()


def _model(endpoint: live.LiveEndpoint) -> Gemini:
    """ADK's Gemini model, its Live client pointed at the fake (ADK builds that client for Google's
    endpoint; the class is ADK's, only where it connects differs)."""

    class FakeEndpointGemini(Gemini):
        @property
        def _live_api_client(self) -> genai.Client:
            return genai.Client(api_key="fake-key", http_options=endpoint.client_options())

    return FakeEndpointGemini(model=live.MODEL)


async def _run_live(endpoint: live.LiveEndpoint, **settings: Any) -> list[Any]:
    """One live run as ADK's docs show it: a question into the queue, the events read until the
    model's answer after the tool's."""
    agent = LlmAgent(name="weather", model=_model(endpoint), tools=[get_weather])
    runner = InMemoryRunner(agent=agent, app_name="t")
    session = await runner.session_service.create_session(app_name="t", user_id="u")
    queue = LiveRequestQueue()
    queue.send_content(types.Content(role="user", parts=[types.Part(text="Weather in Zürich?")]))
    config = RunConfig(response_modalities=["TEXT"], **settings)
    events: list[Any] = []
    run = runner.run_live(user_id="u", session_id=session.id, live_request_queue=queue, run_config=config)
    async with contextlib.aclosing(run) as stream:
        async for event in stream:
            events.append(event)
            parts = (event.content.parts if event.content else None) or []
            if any(part.text == ANSWER for part in parts):
                break
    queue.close()
    return events


def _script(*calls: live.FunctionCall, cancelled: tuple[str, ...] = ()) -> live.Frames:
    steps: list[Any] = [live.Await("client_content"), live.tool_call(*calls)]
    if cancelled:
        steps.append(live.cancellation(*cancelled))
    steps += [live.turn_complete(), live.Await("tool_response"), live.text(ANSWER), live.turn_complete()]
    return live.session(*steps)


def _answered(endpoint: live.LiveEndpoint) -> list[str]:
    # google-genai writes camelCase; 1.x's send(input=...) wrote the field names as declared.
    answers = endpoint.received("tool_response")
    return [r["id"] for a in answers for r in a.get("functionResponses", a.get("function_responses", []))]


def _call(telemetry: Any, call_id: str) -> Any:
    (call,) = [s for s in telemetry.tool_spans() if s.attributes["toolcall.call.id"] == call_id]
    return call


def _adk_executions(telemetry: Any) -> dict[str, Any]:
    """ADK's execute_tool spans the package annotated, by the call id ADK's span or the refusal names."""
    found = {}
    for span in executions(telemetry):
        attributes = span.attributes or {}
        if "toolcall.outcome" not in attributes:
            continue
        assert span.instrumentation_scope.name == ADK_SCOPE  # none of the package's beside ADK's
        found[_id_of(span)] = span
    return found


def _id_of(span: Any) -> str:
    said = span.attributes.get("gen_ai.tool.call.id")
    if said in (KEPT.call_id, CANCELLED.call_id):
        return str(said)
    # ADK's error path names no id: the refusal's exception event does.
    (message,) = [e.attributes["exception.message"] for e in span.events if e.name == "exception"]
    return next(c for c in (KEPT.call_id, CANCELLED.call_id) if c and f"'{c}'" in str(message))


async def test_live_completed_call_annotates_adk_span_and_links(
    instrument: Any, telemetry: Any, endpoint: live.LiveEndpoint, monkeypatch: Any
) -> None:
    trace_adk(telemetry, monkeypatch)
    endpoint.enqueue(_script(KEPT))
    await _run_live(endpoint)
    execution = _adk_executions(telemetry)[str(KEPT.call_id)]
    call = _call(telemetry, str(KEPT.call_id))
    assert call.attributes["toolcall.outcome"] == "completed"
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert execution.status.status_code is not StatusCode.ERROR
    assert body.calls == [("Zürich", execution.context.span_id)]
    assert _answered(endpoint) == [KEPT.call_id]
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


async def test_live_call_in_the_tool_thread_pool_annotates_adk_span(
    instrument: Any, telemetry: Any, endpoint: live.LiveEndpoint, monkeypatch: Any
) -> None:
    if not POOL:
        # 1.20 has no tool thread pool: nothing else runs a live tool.
        assert "tool_thread_pool_config" not in RunConfig.model_fields
        return
    from google.adk.agents.run_config import ToolThreadPoolConfig

    trace_adk(telemetry, monkeypatch)
    endpoint.enqueue(_script(KEPT))
    await _run_live(endpoint, tool_thread_pool_config=ToolThreadPoolConfig(max_workers=2))
    execution = _adk_executions(telemetry)[str(KEPT.call_id)]
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [
        _call(telemetry, str(KEPT.call_id)).context.span_id
    ]
    assert body.locations == ["Zürich"]
    assert _answered(endpoint) == [KEPT.call_id]


async def test_live_without_adk_tracing_the_package_makes_the_span(
    instrument: Any, telemetry: Any, endpoint: live.LiveEndpoint
) -> None:
    endpoint.enqueue(_script(KEPT))
    await _run_live(endpoint)
    (execution,) = [s for s in executions(telemetry) if s.instrumentation_scope.name == "otel_toolcalls"]
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [
        _call(telemetry, str(KEPT.call_id)).context.span_id
    ]
    assert body.calls == [("Zürich", execution.context.span_id)]


async def test_live_cancelled_call_is_aborted_and_unlinked(
    instrument: Any, telemetry: Any, endpoint: live.LiveEndpoint, monkeypatch: Any
) -> None:
    trace_adk(telemetry, monkeypatch)
    endpoint.enqueue(_script(KEPT, CANCELLED, cancelled=(str(CANCELLED.call_id),)))
    await _run_live(endpoint)
    ran = _adk_executions(telemetry)
    kept, cancelled = _call(telemetry, str(KEPT.call_id)), _call(telemetry, str(CANCELLED.call_id))
    assert cancelled.attributes["toolcall.outcome"] == "aborted"
    assert cancelled.attributes["toolcall.abort_reason"] == "cancelled"
    assert [link.context.span_id for link in ran[str(KEPT.call_id)].links] == [kept.context.span_id]
    # ADK ignores the cancellation: it runs the call and answers its id.
    assert body.locations == ["Zürich", "Bern"]
    assert _answered(endpoint) == [KEPT.call_id, CANCELLED.call_id]
    if HOLDS_CALLS:
        assert ran[str(CANCELLED.call_id)].attributes["toolcall.outcome"] == "aborted"
        assert ran[str(CANCELLED.call_id)].attributes["toolcall.abort_reason"] == "cancelled"
        assert ran[str(CANCELLED.call_id)].links == ()
    else:
        # Run before the cancellation was read: completed and linked when it ran.
        assert ran[str(CANCELLED.call_id)].attributes["toolcall.outcome"] == "completed"
        assert [link.context.span_id for link in ran[str(CANCELLED.call_id)].links] == [
            cancelled.context.span_id
        ]
    assert telemetry.calls_by_outcome() == {("completed", None): 1, ("aborted", "cancelled"): 1}


@pytest.mark.parametrize("traced", [True, False])
async def test_live_strict_refuses_the_cancelled_call(
    instrument: Any, telemetry: Any, endpoint: live.LiveEndpoint, monkeypatch: Any, traced: bool
) -> None:
    if traced:
        trace_adk(telemetry, monkeypatch)
    instrument(strict=True)
    endpoint.enqueue(_script(KEPT, CANCELLED, cancelled=(str(CANCELLED.call_id),)))
    if not HOLDS_CALLS:
        # The call ran before its cancellation could be read: nothing to refuse yet.
        await _run_live(endpoint)
        assert body.locations == ["Zürich", "Bern"]
        return
    with pytest.raises(IncompleteToolCallError) as raised:
        await _run_live(endpoint)
    assert raised.value.call_id == CANCELLED.call_id and raised.value.reason == "cancelled"
    assert body.locations == ["Zürich"]  # the cancelled call's body never ran
    assert CANCELLED.call_id not in _answered(endpoint)
    refused = [s for s in executions(telemetry) if s.status.status_code is StatusCode.ERROR]
    (execution,) = refused
    assert execution.instrumentation_scope.name == (ADK_SCOPE if traced else "otel_toolcalls")
    assert "IncompleteToolCallError" in execution.attributes["error.type"]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "cancelled"
    assert execution.links == ()


def test_the_example_under_opentelemetry_instrument() -> None:
    lines, spans = run_example("google_adk_live_agent.py")
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert {k: v["attributes"]["toolcall.outcome"] for k, v in calls.items()} == {
        "fc_weather": "completed",
        "fc_booking": "aborted",
    }
    runs = [
        s for s in spans if s["name"].startswith("execute_tool ") and "toolcall.outcome" in s["attributes"]
    ]
    (weather,) = [s for s in runs if s["attributes"].get("gen_ai.tool.call.id") == "fc_weather"]
    (link,) = weather["links"]
    assert link["context"]["span_id"] == calls["fc_weather"]["context"]["span_id"]
    ran = [line for line in lines if line.startswith("ran ")]
    if not HOLDS_CALLS:
        # 1.20 ran the booking before the cancellation was read (the module docstring).
        assert ran == ["ran get_weather('Zürich')", "ran book_table('19:30')"]
        return
    assert ran == ["ran get_weather('Zürich')"] and "refused fc_booking: cancelled" in lines
    (refused,) = [s for s in runs if s["status"]["status_code"] == "ERROR"]
    assert refused["attributes"]["toolcall.outcome"] == "aborted" and refused["links"] == []
