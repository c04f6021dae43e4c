"""Google ADK: an ``LlmAgent`` run by ``InMemoryRunner`` with SSE streaming, on its Gemini model
(google-genai) and on its LiteLLM model (OpenAI-compatible), against the fake provider.

Observed (google-adk 2.13, litellm 1.110): Gemini sends each call whole, so a token limit cannot
cut one inside its arguments; a call in the chunk that ends with ``MAX_TOKENS`` is truncated
(TELEMETRY section 6) and ADK runs it all the same, reporting ``MAX_TOKENS`` as an event error.
On LiteLLM, a stream stopped by the token limit inside the arguments gives an event with
``error_code`` ``MAX_TOKENS`` ("arguments were truncated") and runs nothing; a stream cut inside the
arguments raises litellm's ``MidStreamFallbackError`` to the caller and runs nothing. A Gemini call
without an id gets one from ADK (``adk-…``); the package never saw that id in the stream, so its
execution is ``unknown`` (cannot be linked nor refused).

Observed on google-adk 1.39.1 the same; on 1.20.0 a truncated Gemini stream gives no ``MAX_TOKENS``
event (the package's outcomes are the same on every release). The LiteLLM cases run where litellm
is installed: the floor lane has none (tests/frameworks/requirements-floor.txt says why).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import google.adk
import pytest
from framework_spans import (
    ADK_SCOPE,
    PARTIAL,
    WHOLE,
    Body,
    completed_turn,
    cut_turn,
    executions,
    trace_adk,
    truncated_turn,
)
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.trace import StatusCode
from packaging.version import Version

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing import gemini as g

body = Body()
ADK = Version(google.adk.__version__)
# Whether ADK reports a truncated Gemini stream as a MAX_TOKENS event (the module docstring).
MAX_TOKENS_EVENT = Version("1.39.1") <= ADK
needs_litellm = pytest.mark.skipif(
    importlib.util.find_spec("litellm") is None, reason="ADK's LiteLLM model: no litellm in this lane"
)


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


@pytest.fixture(autouse=True)
def _clear(monkeypatch: Any, fake: Any) -> None:
    body.calls.clear()
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
    # Before its Gemini model took a base_url (google-adk 1.x), google-genai reads it from here.
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.base_url)



@pytest.fixture
def adk_traced(telemetry: Any, monkeypatch: Any) -> None:
    trace_adk(telemetry, monkeypatch)


def _gemini_turn(call_id: str | None, finish_reason: str = "STOP") -> list[Any]:
    call = g.whole_call("get_weather", {"location": "Zürich"}, call_id)
    answer = g.script_for(g.one_part_each([g.text("Sunny.")]))
    return [g.script_for(g.one_part_each([call], finish_reason=finish_reason)), answer]


def _gemini(fake: Any) -> Any:
    if "base_url" not in Gemini.model_fields:
        return Gemini(model="gemini-2.5-flash")  # the base URL from the environment (_clear)
    return Gemini(model="gemini-2.5-flash", base_url=fake.base_url)


def _lite(fake: Any) -> Any:
    from google.adk.models.lite_llm import LiteLlm

    return LiteLlm(model="openai/gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="sk-fake")


async def _run(model: Any) -> list[Any]:
    """One streamed run, as ADK's docs show it; returns the events."""
    runner = InMemoryRunner(agent=LlmAgent(name="weather", model=model, tools=[get_weather]), app_name="t")
    session = await runner.session_service.create_session(app_name="t", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="Weather in Zürich?")])
    config = RunConfig(streaming_mode=StreamingMode.SSE)
    return [
        event
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message, run_config=config
        )
    ]


def _assert_annotated_and_linked(telemetry: Any, call_id: str) -> Any:
    (execution,) = executions(telemetry)  # ADK's span only: none of the package's beside it
    call = telemetry.one("tool_call get_weather")
    assert execution.instrumentation_scope.name == ADK_SCOPE
    assert execution.attributes["gen_ai.tool.call.id"] == call_id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]
    return execution


async def test_gemini_completed_call_annotates_adk_span(
    instrument: Any, telemetry: Any, fake: Any, adk_traced: None
) -> None:
    fake.enqueue(*_gemini_turn("fc_1"))
    await _run(_gemini(fake))
    execution = _assert_annotated_and_linked(telemetry, "fc_1")
    assert execution.status.status_code is not StatusCode.ERROR


async def test_adk_model_span_is_the_inference_span_where_it_says_so(
    instrument: Any, telemetry: Any, fake: Any, adk_traced: None
) -> None:
    # ADK's `generate_content {model}` span (INTERNAL, gen_ai.operation.name generate_content) is
    # current while google-genai streams: the request's inference span, none of the package's
    # beside it. Older releases' `call_llm` span names no operation: the package's is the one.
    fake.enqueue(*_gemini_turn("fc_1"))
    await _run(_gemini(fake))
    inference = [
        s for s in telemetry.spans()
        if (s.attributes or {}).get("gen_ai.operation.name") in ("generate_content", "chat")
    ]  # fmt: skip
    says_so = hasattr(importlib.import_module("google.adk.telemetry.tracing"), "use_generate_content_span")
    assert inference and {s.instrumentation_scope.name for s in inference} == (
        {ADK_SCOPE} if says_so else {"otel_toolcalls"}
    )
    call = telemetry.one("tool_call get_weather")
    assert call.parent.span_id in {s.context.span_id for s in inference}


@needs_litellm
async def test_litellm_completed_call_annotates_adk_span(
    instrument: Any, telemetry: Any, fake: Any, adk_traced: None
) -> None:
    fake.enqueue(*completed_turn())
    await _run(_lite(fake))
    _assert_annotated_and_linked(telemetry, WHOLE.id)


async def test_without_adk_tracing_the_package_makes_the_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*_gemini_turn("fc_1"))
    await _run(_gemini(fake))
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert len(execution.links) == 1
    assert body.calls == [("Zürich", execution.context.span_id)]


async def test_gemini_call_without_id_runs_under_adk_id_unknown(
    instrument: Any, telemetry: Any, fake: Any, adk_traced: None
) -> None:
    fake.enqueue(*_gemini_turn(None))
    events = await _run(_gemini(fake))
    (adk_id,) = {call.id for event in events for call in event.get_function_calls()}
    assert adk_id.startswith("adk-")
    (execution,) = executions(telemetry)
    assert execution.attributes["gen_ai.tool.call.id"] == adk_id
    assert execution.attributes["toolcall.outcome"] == "unknown"
    assert execution.links == ()
    assert body.locations == ["Zürich"]


async def test_gemini_truncated_call_runs_unlinked(
    instrument: Any, telemetry: Any, fake: Any, adk_traced: None
) -> None:
    fake.enqueue(*_gemini_turn("fc_1", finish_reason="MAX_TOKENS"))
    events = await _run(_gemini(fake))
    assert any(event.error_code == "MAX_TOKENS" for event in events) is MAX_TOKENS_EVENT
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich", execution.context.span_id)]  # ADK ran it all the same
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


@pytest.mark.parametrize("traced", [True, False])
async def test_strict_refuses_the_truncated_call_inside_adk_span(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: Any, traced: bool
) -> None:
    if traced:
        trace_adk(telemetry, monkeypatch)
    instrument(strict=True)
    fake.enqueue(*_gemini_turn("fc_1", finish_reason="MAX_TOKENS"))
    with pytest.raises(IncompleteToolCallError) as raised:
        await _run(_gemini(fake))
    assert raised.value.call_id == "fc_1" and raised.value.reason == "truncated"
    assert body.calls == []
    assert len(fake.requests) == 1
    (execution,) = executions(telemetry)
    assert execution.instrumentation_scope.name == (ADK_SCOPE if traced else "otel_toolcalls")
    assert execution.status.status_code is StatusCode.ERROR
    assert "IncompleteToolCallError" in execution.attributes["error.type"]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.links == ()


@pytest.mark.parametrize("strict", [False, True])
@needs_litellm
async def test_litellm_truncated_stream_is_an_error_event_and_runs_nothing(
    instrument: Any, telemetry: Any, fake: Any, adk_traced: None, strict: bool
) -> None:
    instrument(strict=strict)
    fake.enqueue(*truncated_turn())
    events = await _run(_lite(fake))
    assert any(event.error_code == "MAX_TOKENS" for event in events)
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}


@needs_litellm
async def test_litellm_cut_stream_raises_and_runs_nothing(
    instrument: Any, telemetry: Any, fake: Any, adk_traced: None
) -> None:
    fake.enqueue(*cut_turn())
    from litellm.exceptions import MidStreamFallbackError

    with pytest.raises(MidStreamFallbackError):
        await _run(_lite(fake))
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}
    assert PARTIAL.id == telemetry.one("tool_call get_weather").attributes["toolcall.call.id"]
