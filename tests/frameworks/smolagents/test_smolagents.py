"""smolagents: a ``ToolCallingAgent`` with ``stream_outputs=True`` on ``OpenAIServerModel`` (the
openai SDK) against the fake provider. The openai adapter traces the stream; the smolagents
adapter adds the execution spans.

Observed (smolagents 1.26.0): on a stream stopped by the token limit inside the arguments,
``parse_json_if_needed`` fails quietly and hands on the raw text, and for a tool of one string
input ``validate_tool_arguments`` accepts it: the tool body runs with the cut JSON text as its
argument. On a stream cut inside the arguments, the SDK's error becomes ``AgentGenerationError``,
which ends ``run()``; nothing is executed.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from examples_run import run_example

# LiteLLMModel imports litellm: its model cost map from the package, not the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from framework_spans import PARTIAL, WHOLE, Body, cut_turn, executions, truncated_turn
from opentelemetry.trace import StatusCode
from smolagents import OpenAIServerModel, ToolCallingAgent, tool
from smolagents.monitoring import LogLevel
from smolagents.utils import AgentGenerationError, AgentToolCallError

from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls.testing import Script
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

body = Body()
FINAL = ToolCall(name="final_answer", id="call_final_1", arguments='{"answer": "Sunny."}')


@tool
def get_weather(location: str) -> str:
    """Current weather for a location.

    Args:
        location: The place to look up.
    """
    return body.ran(location)


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


def _agent(fake: Any) -> ToolCallingAgent:
    model = OpenAIServerModel(
        model_id="gpt-4o-mini",
        api_base=fake.base_url + "/v1",
        api_key="sk-fake",
        client_kwargs={"max_retries": 0},
    )
    return ToolCallingAgent(
        tools=[get_weather], model=model, stream_outputs=True, max_steps=3, verbosity_level=LogLevel.OFF
    )


def _final() -> Any:
    return tool_call_script([FINAL])


def _by_call(telemetry: Any) -> dict[str, Any]:
    return {s.attributes["gen_ai.tool.call.id"]: s for s in executions(telemetry)}


def _tool_call_span(telemetry: Any, call_id: str) -> Any:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes.get("toolcall.call.id") == call_id]
    return span


def test_completed_call_is_executed_and_linked(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([WHOLE]), _final())
    assert _agent(fake).run("Weather in Zürich?") == "Sunny."
    executed = _by_call(telemetry)
    # One execution span per call (the final answer is a tool too), one tool_call span per call.
    assert sorted(executed) == sorted([WHOLE.id, FINAL.id]) and len(executions(telemetry)) == 2
    assert len(telemetry.tool_spans()) == 2
    assert len([s for s in telemetry.spans() if s.name.startswith("chat ")]) == 2
    execution = executed[WHOLE.id]
    assert execution.instrumentation_scope.name == "otel_toolcalls"
    assert execution.attributes["toolcall.outcome"] == "completed"
    call = _tool_call_span(telemetry, WHOLE.id)
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert body.calls == [("Zürich", execution.context.span_id)]


def test_parallel_calls_each_linked_to_its_own(instrument: Any, telemetry: Any, fake: Any) -> None:
    # Two calls of one tool in one message: smolagents runs them in its thread pool.
    first = ToolCall(name="get_weather", id="call_zrh", arguments='{"location": "Zürich"}')
    second = ToolCall(name="get_weather", id="call_bsl", arguments='{"location": "Basel"}')
    fake.enqueue(tool_call_script([first, second]), _final())
    _agent(fake).run("Weather in Zürich and Basel?")
    executed = _by_call(telemetry)
    for call, location in ((first, "Zürich"), (second, "Basel")):
        execution = executed[call.id]
        assert execution.attributes["toolcall.outcome"] == "completed"
        assert [link.context.span_id for link in execution.links] == [
            _tool_call_span(telemetry, call.id).context.span_id
        ]
        assert (location, execution.context.span_id) in body.calls
    assert len(body.calls) == 2


def test_truncated_mid_arguments_runs_on_the_raw_text_unlinked(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(*truncated_turn()[:1], _final())
    _agent(fake).run("Weather in Zürich?")
    # smolagents could not parse the arguments and ran the tool on their text.
    assert body.locations == [PARTIAL.arguments]
    execution = _by_call(telemetry)[WHOLE.id]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


def test_strict_refuses_before_the_body_and_the_run_goes_on(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    instrument(strict=True)
    fake.enqueue(*truncated_turn()[:1], _final())
    agent = _agent(fake)
    assert agent.run("Weather in Zürich?") == "Sunny."
    assert body.calls == []
    execution = _by_call(telemetry)[WHOLE.id]
    assert execution.status.status_code is StatusCode.ERROR
    assert "IncompleteToolCallError" in execution.attributes["error.type"]
    assert execution.links == ()
    # smolagents' own error for a call it cannot run: the step keeps it, the model is asked again.
    (error,) = [step.error for step in agent.memory.steps if getattr(step, "error", None) is not None]
    assert isinstance(error, AgentToolCallError)
    assert isinstance(error.__cause__, IncompleteToolCallError)
    assert "refusing to execute tool call" in str(error)
    assert len(fake.requests) == 2


def test_cut_stream_ends_the_run_and_executes_nothing(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(*cut_turn())
    with pytest.raises(AgentGenerationError):
        _agent(fake).run("Weather in Zürich?")
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


def _litellm_model(fake: Any) -> Any:
    pytest.importorskip("litellm")
    from smolagents import LiteLLMModel

    return LiteLLMModel(model_id="openai/gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="sk-fake")


def _inference_client_model(fake: Any) -> Any:
    from smolagents import InferenceClientModel

    # An endpoint URL as the model (smolagents passes model_id as the client's model: no base_url).
    return InferenceClientModel(model_id=fake.base_url + "/v1/chat/completions", api_key="hf-fake")


# LiteLLMModel streams through litellm, which streams through the openai SDK (both adapters see the
# stream); InferenceClientModel through huggingface_hub's InferenceClient.
@pytest.mark.parametrize(
    "model_of", [_litellm_model, _inference_client_model], ids=["litellm", "huggingface"]
)
def test_other_model_classes_are_traced_once(
    instrument: Any, telemetry: Any, fake: Any, model_of: Any
) -> None:
    agent = ToolCallingAgent(
        tools=[get_weather],
        model=model_of(fake),
        stream_outputs=True,
        max_steps=3,
        verbosity_level=LogLevel.OFF,
    )
    fake.enqueue(tool_call_script([WHOLE]), _final())
    assert agent.run("Weather in Zürich?") == "Sunny."
    # One tool_call span per call, the execution linked to it.
    assert sorted(s.attributes["toolcall.call.id"] for s in telemetry.tool_spans()) == sorted(
        [WHOLE.id, FINAL.id]
    )
    execution = _by_call(telemetry)[WHOLE.id]
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [
        _tool_call_span(telemetry, WHOLE.id).context.span_id
    ]
    assert body.calls == [("Zürich", execution.context.span_id)]


def _completion(call: ToolCall) -> Script:
    """A chat completion, not streamed, carrying ``call``."""
    function = {"name": call.name, "arguments": call.arguments}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call.id, "type": "function", "function": function}],
    }
    body = {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},  # smolagents reads it
    }
    return Script(writes=[json.dumps(body).encode()], content_type="application/json")


def test_not_streamed_the_execution_is_unknown_and_not_refused(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    # stream_outputs=False: the call was never seen streamed; strict refuses only calls known cut.
    instrument(strict=True)
    fake.enqueue(_completion(WHOLE), _completion(FINAL))
    agent = _agent(fake)
    agent.stream_outputs = False
    assert agent.run("Weather in Zürich?") == "Sunny."
    execution = _by_call(telemetry)[WHOLE.id]
    assert execution.attributes["toolcall.outcome"] == "unknown" and execution.links == ()
    assert body.calls == [("Zürich", execution.context.span_id)]


def test_a_direct_call_gets_no_span(instrument: Any, telemetry: Any, fake: Any) -> None:
    # Not a model's call: no id to link, no span (as for LangChain's tools run without a ToolCall).
    assert _agent(fake).execute_tool_call("get_weather", {"location": "Bern"}) == "sunny"
    assert body.locations == ["Bern"] and executions(telemetry) == []



def test_the_example_under_opentelemetry_instrument() -> None:
    lines, spans = run_example("smolagents_agent.py")
    # The cut call never reached the tool body; smolagents kept the refusal as step 1's error.
    assert [line for line in lines if line.startswith("ran ")] == ["ran get_weather('Zürich')"]
    assert "step 1: AgentToolCallError" in lines and "answer: Sunny in Zürich." in lines
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert {k: v["attributes"]["toolcall.outcome"] for k, v in calls.items()} == {
        "call_cut": "aborted",
        "call_whole": "completed",
        "call_final": "completed",
    }
    assert calls["call_cut"]["attributes"]["toolcall.abort_reason"] == "truncated"
    runs = {s["attributes"]["gen_ai.tool.call.id"]: s for s in spans if s["name"].startswith("execute_tool ")}
    assert sorted(runs) == ["call_cut", "call_final", "call_whole"]
    assert runs["call_cut"]["status"]["status_code"] == "ERROR" and runs["call_cut"]["links"] == []
    (link,) = runs["call_whole"]["links"]
    assert link["context"]["span_id"] == calls["call_whole"]["context"]["span_id"]
