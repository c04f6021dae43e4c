"""agno: its ``Agent`` (``run`` / ``arun`` with ``stream=True``) on ``OpenAIChat`` (the openai SDK)
against the fake provider. The openai adapter traces the stream; the agno adapter adds the
execution spans and ends the calls open in a cancelled run's stream ``cancelled``.

Observed (agno 3.1.10 and 2.3.5): arguments that do not parse are never executed (agno answers the
model with a decoding error); a call cut by the token limit before any argument (``""``) runs with
no arguments, on the tool's defaults. agno checks a run's cancellation between run events: none is
emitted for an argument fragment, so a cancel during the arguments is seen at the next text chunk
or at the stream's end (the calls then complete on the wire and are not executed).
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import os
import threading
from typing import Any

import pytest
from examples_run import run_example

os.environ.setdefault("AGNO_TELEMETRY", "false")  # agno's own usage reports: no network here

from agno.agent import Agent
from agno.exceptions import ModelProviderError
from agno.models.openai import OpenAIChat
from agno.team import Team
from framework_spans import WHOLE, Body, answer, cut_turn, executions
from opentelemetry.trace import StatusCode
from packaging.version import Version

from otel_toolcalls.testing.openai_chat import Event, ToolCall, script_for, tool_call_script
from otel_toolcalls.testing.scenario import timed_script

body = Body()
TEAM_RUN_REACHES_THE_MODEL = Version(importlib.metadata.version("agno")) >= Version("2.4.0")
# The token limit right after the call's start: agno runs it with no arguments.
EMPTY = ToolCall(name="get_weather", id="call_weather_1", arguments="", fragments=[])


def get_weather(location: str = "here") -> str:
    """Current weather for a location."""
    return body.ran(location)


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


def _agent(fake: Any) -> Agent:
    model = OpenAIChat(id="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    return Agent(model=model, tools=[get_weather], telemetry=False)


def _team(fake: Any) -> Team:
    """A team whose leader holds the tool (its member is never asked here)."""

    def model() -> OpenAIChat:
        return OpenAIChat(id="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)

    member = Agent(name="helper", model=model(), telemetry=False)
    return Team(members=[member], model=model(), tools=[get_weather], telemetry=False)


def _events(agent: Agent | Team, asynchronous: bool, on_start: Any = None) -> list[Any]:
    """Every event of a streamed run, ``on_start(run_id)`` called at its ``RunStartedEvent``."""

    def seen(event: Any) -> Any:
        if on_start is not None and type(event).__name__ in ("RunStartedEvent", "TeamRunStartedEvent"):
            on_start(event.run_id)
        return event

    if not asynchronous:
        return [seen(e) for e in agent.run("Weather in Zürich?", stream=True, stream_events=True)]

    async def main() -> list[Any]:
        return [seen(e) async for e in agent.arun("Weather in Zürich?", stream=True, stream_events=True)]

    return asyncio.run(main())


def _named(events: list[Any], name: str) -> list[Any]:
    return [e for e in events if type(e).__name__ == name]


def _tool_call_span(telemetry: Any, call_id: str) -> Any:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes.get("toolcall.call.id") == call_id]
    return span


MODES = pytest.mark.parametrize("asynchronous", [False, True], ids=["run", "arun"])


@MODES
def test_completed_call_is_executed_and_linked(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    fake.enqueue(tool_call_script([WHOLE]), answer())
    events = _events(_agent(fake), asynchronous)
    assert _named(events, "RunCompletedEvent")
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    call = _tool_call_span(telemetry, WHOLE.id)
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]
    # One stream per request, traced once (by the openai adapter).
    assert len(telemetry.tool_spans()) == 1
    assert len([s for s in telemetry.spans() if s.name.startswith("chat ")]) == 2


@MODES
def test_cut_by_the_token_limit_runs_on_defaults_unlinked(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    fake.enqueue(tool_call_script([EMPTY], finish_reason="length"), answer())
    _events(_agent(fake), asynchronous)
    assert body.locations == ["here"]  # agno ran the cut call on the tool's default
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


@MODES
def test_strict_refuses_before_the_body_as_a_tool_error(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    instrument(strict=True)
    fake.enqueue(tool_call_script([EMPTY], finish_reason="length"), answer())
    events = _events(_agent(fake), asynchronous)
    assert body.calls == []
    (execution,) = executions(telemetry)
    assert execution.status.status_code is StatusCode.ERROR
    assert "IncompleteToolCallError" in execution.attributes["error.type"]
    assert execution.links == ()
    # agno's path for a tool that failed: the model reads the error, the run goes on.
    (completed,) = _named(events, "ToolCallCompletedEvent")
    assert completed.tool.tool_call_error is True
    assert "refusing to execute tool call" in str(completed.tool.result)
    assert _named(events, "RunCompletedEvent") and len(fake.requests) == 2


@MODES
def test_cut_stream_ends_the_run_and_executes_nothing(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    fake.enqueue(*cut_turn())
    try:
        events = _events(_agent(fake), asynchronous)
    except ModelProviderError:
        pass  # agno 2.3.5 raises the SDK's error to the run's caller
    else:
        assert _named(events, "RunErrorEvent")  # agno 3.1.10 ends the run with an error event
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


def _paused_mid_arguments(gate: threading.Event, *, text_inside: bool) -> Any:
    """A call whose stream pauses after its first fragment until ``gate`` opens; with
    ``text_inside``, text chunks come inside the call (agno checks cancellation at each)."""
    events = [Event(index=0, id=WHOLE.id, name=WHOLE.name, arguments=""), Event(index=0, arguments='{"loc')]
    if text_inside:
        events += [Event(content="Let me"), Event(content=" check.")]
    events += [Event(index=0, arguments='ation": "Zürich"}'), Event(finish_reason="tool_calls")]
    script = script_for(events, split_characters=False)
    return timed_script(script.writes, {2: gate})


def _cancel_while_paused(agent: Agent | Team, fake: Any, gate: threading.Event, after: int = 0) -> Any:
    def cancel(run_id: str) -> None:
        # Called at RunStartedEvent, before the request: cancel once the server holds the stream.
        def later() -> None:
            while len(fake.requests) <= after:
                threading.Event().wait(0.01)
            agent.cancel_run(run_id)
            gate.set()

        threading.Thread(target=later, daemon=True).start()

    return cancel


@MODES
def test_run_cancelled_mid_arguments_ends_the_call_cancelled(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    instrument(strict=True)
    gate = threading.Event()
    fake.enqueue(_paused_mid_arguments(gate, text_inside=True), answer())
    agent = _agent(fake)
    events = _events(agent, asynchronous, on_start=_cancel_while_paused(agent, fake, gate))
    assert _named(events, "RunCancelledEvent")
    assert body.calls == [] and executions(telemetry) == []
    span = _tool_call_span(telemetry, WHOLE.id)
    assert span.attributes["toolcall.outcome"] == "aborted"
    assert span.attributes["toolcall.abort_reason"] == "cancelled"
    assert telemetry.calls_by_outcome() == {("aborted", "cancelled"): 1}
    assert len(fake.requests) == 1


@MODES
def test_cancel_seen_after_the_stream_leaves_its_calls_completed(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    # No run event during the arguments: agno reads the stream to its end, then cancels the run.
    gate = threading.Event()
    fake.enqueue(_paused_mid_arguments(gate, text_inside=False), answer())
    agent = _agent(fake)
    events = _events(agent, asynchronous, on_start=_cancel_while_paused(agent, fake, gate))
    assert _named(events, "RunCancelledEvent")
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


@MODES
def test_a_team_leader_s_call_is_executed_linked_and_cancelled(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool
) -> None:
    fake.enqueue(tool_call_script([WHOLE]), answer())
    _events(_team(fake), asynchronous)
    (execution,) = executions(telemetry)
    assert [link.context.span_id for link in execution.links] == [
        _tool_call_span(telemetry, WHOLE.id).context.span_id
    ]
    assert body.calls == [("Zürich", execution.context.span_id)]
    # The team's own RunCancelledEvent (agno.run.team) ends its stream's open call.
    telemetry.exporter.clear()
    gate = threading.Event()
    fake.enqueue(_paused_mid_arguments(gate, text_inside=True), answer())
    team = _team(fake)
    requests = len(fake.requests)
    events = _events(team, asynchronous, on_start=_cancel_while_paused(team, fake, gate, after=requests))
    assert _named(events, "RunCancelledEvent") and len(body.calls) == 1
    if asynchronous or TEAM_RUN_REACHES_THE_MODEL:
        expected = "cancelled"
    else:
        # agno before 2.4.0: Team.run does not hand its run to the model (response_stream without
        # run_response), so the stream is not known as the run's: collected, it is abandoned.
        gc.collect()
        expected = "abandoned"
    span = _tool_call_span(telemetry, WHOLE.id)
    assert (span.attributes["toolcall.outcome"], span.attributes["toolcall.abort_reason"]) == (
        "aborted",
        expected,
    )


def test_a_function_call_without_an_id_gets_no_span(instrument: Any, telemetry: Any) -> None:
    from agno.tools.function import Function, FunctionCall

    call = FunctionCall(function=Function.from_callable(get_weather), arguments={"location": "Bern"})
    assert call.execute().status == "success"
    assert body.locations == ["Bern"] and executions(telemetry) == []


def test_the_example_under_opentelemetry_instrument() -> None:
    lines, spans = run_example("agno_agent.py", AGNO_TELEMETRY="false")
    # The cut call never reached the tool body; agno handed the refusal to the model as its error.
    assert [line for line in lines if line.startswith("ran ")] == ["ran get_weather('Zürich')"]
    assert "call_cut: error=True" in lines and "answer: Sunny in Zürich." in lines
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert {k: v["attributes"]["toolcall.outcome"] for k, v in calls.items()} == {
        "call_cut": "aborted",
        "call_whole": "completed",
    }
    runs = {s["attributes"]["gen_ai.tool.call.id"]: s for s in spans if s["name"].startswith("execute_tool ")}
    assert sorted(runs) == ["call_cut", "call_whole"]
    assert runs["call_cut"]["status"]["status_code"] == "ERROR" and runs["call_cut"]["links"] == []
    (link,) = runs["call_whole"]["links"]
    assert link["context"]["span_id"] == calls["call_whole"]["context"]["span_id"]
