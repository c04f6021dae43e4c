"""DSPy: ``dspy.Predict`` with tools (native function calling, streamed with ``dspy.streamify``) and
``dspy.ReAct`` (its text fields), ``dspy.LM`` against the fake provider, on each of its engines: the
LiteLLM engine (the litellm adapter traces the stream) and, from 3.4.0, the default one, DSPy's
bundled lm15 client (the dspy_lm15 adapter traces it). The dspy adapter adds the execution spans.

Observed (3.1.0, 3.4.1, LiteLLM engine): on a stream stopped by the token limit inside the
arguments, DSPy repairs the cut JSON (``json_repair``) and ``execute`` runs the tool body with the
cut value (``"Zürich, Sch"``). 3.4's default lm15 engine hands ``{"partial_json": <the text>}``
on instead, which the tool's signature refuses before its body.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from examples_run import run_example

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="dspy-cache-"))  # not in $HOME

import dspy
from framework_spans import PARTIAL, WHOLE, Body, cut_turn, executions
from opentelemetry.trace import StatusCode

from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls.testing import Script
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

body = Body()
# Cut by the token limit, its arguments whole JSON by chance: DSPy runs it.
LIMITED = ToolCall(name="get_weather", id="call_limited", arguments='{"location": "Zürich"}')

dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return body.ran(location)


class Ask(dspy.Signature):
    """Answer with a tool call."""

    question: str = dspy.InputField()
    tools: list[dspy.Tool] = dspy.InputField()
    tool_calls: dspy.ToolCalls = dspy.OutputField()


@pytest.fixture(autouse=True)
def _clear() -> None:
    body.calls.clear()


# From 3.4.0 dspy.LM prefers its bundled lm15 client (the default engine="auto"); LiteLLM is asked
# for by name. Every native-call test runs on each engine the release has (no lm15 before 3.4.0).
ENGINES = "engine" in inspect.signature(dspy.LM.__init__).parameters


@pytest.fixture(params=["litellm", "default"] if ENGINES else ["litellm"])
def engine(request: Any) -> str:
    return str(request.param)


def _lm(fake: Any, engine: str = "litellm", **options: Any) -> dspy.LM:
    if ENGINES and engine == "litellm":
        options.setdefault("engine", "litellm")
    return dspy.LM(
        "openai/gpt-4o-mini",
        api_base=fake.base_url + "/v1",
        api_key="sk-fake",
        cache=False,
        num_retries=0,
        **options,
    )


def _calls(fake: Any, engine: str, lm: dspy.LM | None = None) -> list[Any]:
    """The model's calls, as ``dspy.Predict`` streamed them through ``dspy.streamify``."""
    with dspy.context(lm=lm or _lm(fake, engine), adapter=dspy.JSONAdapter()):
        program = dspy.streamify(dspy.Predict(Ask), async_streaming=False)
        outputs = list(program(question="Weather in Zürich?", tools=[dspy.Tool(get_weather)]))
    (prediction,) = [o for o in outputs if isinstance(o, dspy.Prediction)]
    return prediction.tool_calls.tool_calls


def _tool_call_span(telemetry: Any, call_id: str) -> Any:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes.get("toolcall.call.id") == call_id]
    return span


def test_native_call_executed_and_linked(instrument: Any, telemetry: Any, fake: Any, engine: str) -> None:
    fake.enqueue(tool_call_script([WHOLE]))
    (call,) = _calls(fake, engine)
    # No functions: DSPy looks the tool up in its caller's frame, as without the package.
    assert call.execute() == "sunny"
    (execution,) = executions(telemetry)
    assert execution.attributes["gen_ai.tool.name"] == "get_weather"
    assert body.calls == [("Zürich", execution.context.span_id)]
    assert len(telemetry.tool_spans()) == 1  # the stream traced once (the litellm adapter)
    assert execution.attributes["gen_ai.tool.call.id"] == WHOLE.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    call_span = _tool_call_span(telemetry, WHOLE.id)
    assert [link.context.span_id for link in execution.links] == [call_span.context.span_id]


def test_native_call_streamed_async_executed_and_linked(
    instrument: Any, telemetry: Any, fake: Any, engine: str
) -> None:
    async def calls() -> list[Any]:
        with dspy.context(lm=_lm(fake, engine), adapter=dspy.JSONAdapter()):
            program = dspy.streamify(dspy.Predict(Ask))
            streamed = program(question="Weather in Zürich?", tools=[dspy.Tool(get_weather)])
            outputs = [o async for o in streamed]
        (prediction,) = [o for o in outputs if isinstance(o, dspy.Prediction)]
        return list(prediction.tool_calls.tool_calls)

    fake.enqueue(tool_call_script([WHOLE]))
    (call,) = asyncio.run(calls())
    assert call.execute(functions=[dspy.Tool(get_weather)]) == "sunny"
    (execution,) = executions(telemetry)
    call_span = _tool_call_span(telemetry, WHOLE.id)
    assert [link.context.span_id for link in execution.links] == [call_span.context.span_id]


def test_execute_with_dspy_tools_is_one_span(instrument: Any, telemetry: Any, fake: Any, engine: str) -> None:
    fake.enqueue(tool_call_script([WHOLE]))
    (call,) = _calls(fake, engine)
    # A dspy.Tool handed to execute: Tool.__call__ runs inside the call's span, not a second one.
    assert call.execute(functions={"get_weather": dspy.Tool(get_weather)}) == "sunny"
    (execution,) = executions(telemetry)
    assert body.calls == [("Zürich", execution.context.span_id)]


def test_execute_not_found_raises_as_before(instrument: Any, telemetry: Any, fake: Any, engine: str) -> None:
    fake.enqueue(tool_call_script([WHOLE]))
    (call,) = _calls(fake, engine)
    with pytest.raises(ValueError, match="not found"):
        call.execute(functions={})
    assert body.calls == []


def test_cut_inside_the_arguments_runs_on_repaired_json(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([PARTIAL], finish_reason="length"))
    (call,) = _calls(fake, "litellm")
    assert call.execute(functions=[dspy.Tool(get_weather)]) == "sunny"
    assert body.locations == ["Zürich, Sch"]  # DSPy closed the cut JSON and ran the tool on it
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "truncated"
    assert execution.links == ()


@pytest.mark.skipif(not ENGINES, reason="before 3.4.0 dspy.LM has only LiteLLM")
def test_cut_inside_the_arguments_on_lm15_fails_in_the_tool_signature(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    # lm15 hands the cut text on as {"partial_json": ...}: execute fails before the body, in an
    # execution span that says the call was aborted and links nothing.
    fake.enqueue(tool_call_script([PARTIAL], finish_reason="length"))
    (call,) = _calls(fake, "default")
    assert call.args == {"partial_json": PARTIAL.arguments}
    with pytest.raises(RuntimeError):
        call.execute(functions=[dspy.Tool(get_weather)])
    assert body.calls == []
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.abort_reason"] == "truncated" and execution.links == ()


def test_cut_inside_the_arguments_refused_in_strict_mode(
    instrument: Any, telemetry: Any, fake: Any, engine: str
) -> None:
    fake.enqueue(tool_call_script([PARTIAL], finish_reason="length"))
    (call,) = _calls(fake, engine)
    instrument(strict=True)
    with pytest.raises(IncompleteToolCallError):
        call.execute(functions=[dspy.Tool(get_weather)])
    assert body.calls == []  # the body never ran
    (execution,) = executions(telemetry)
    assert execution.status.status_code is StatusCode.ERROR and execution.links == ()
    assert execution.attributes["toolcall.abort_reason"] == "truncated"


def test_cut_stream_raises_and_nothing_runs(instrument: Any, telemetry: Any, fake: Any, engine: str) -> None:
    fake.enqueue(cut_turn()[0])  # the connection drops inside the arguments
    with pytest.raises(Exception):  # noqa: B017 (whatever LiteLLM makes of httpx's error)
        _calls(fake, engine)
    assert body.calls == [] and executions(telemetry) == []
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


def test_limited_call_runs_unlinked_and_strict_refuses_it(
    instrument: Any, telemetry: Any, fake: Any, engine: str
) -> None:
    fake.enqueue(tool_call_script([LIMITED], finish_reason="length"))
    (call,) = _calls(fake, engine)
    assert call.execute(functions=[dspy.Tool(get_weather)]) == "sunny"
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted" and execution.links == ()
    assert body.locations == ["Zürich"]
    # Strict: refused before the body; IncompleteToolCallError is the RuntimeError execute raises.
    body.calls.clear()
    instrument(strict=True)
    with pytest.raises(RuntimeError) as raised:
        call.execute(functions=[dspy.Tool(get_weather)])
    assert isinstance(raised.value, IncompleteToolCallError) and body.calls == []


def _package_warnings(caplog: Any) -> list[str]:
    ours = [r for r in caplog.records if r.name.startswith("otel_toolcalls")]
    return [r.getMessage() for r in ours if r.levelno >= logging.WARNING]


def test_each_engine_is_traced_and_says_nothing(
    instrument: Any, telemetry: Any, fake: Any, caplog: Any, engine: str
) -> None:
    lm = _lm(fake, engine)
    with caplog.at_level(logging.WARNING, logger="otel_toolcalls"):
        for _ in range(2):
            fake.enqueue(tool_call_script([WHOLE]))
            (call,) = _calls(fake, engine, lm)
            assert call.id == WHOLE.id
    assert len(fake.requests) == 2 and len(telemetry.tool_spans()) == 2
    assert _package_warnings(caplog) == []


def _fields(streamed: bool, **fields: str) -> Any:
    """One ChatAdapter reply: each output field under its ``[[ ## name ## ]]`` header."""
    text = "".join(f"[[ ## {name} ## ]]\n{value}\n\n" for name, value in fields.items())
    text += "[[ ## completed ## ]]"
    if streamed:
        return script_for(events_for([], text=text, finish_reason="stop"))
    message = {"role": "assistant", "content": text}
    reply = {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
    }
    return Script(writes=[json.dumps(reply).encode()], content_type="application/json")


def _react_turns(streamed: bool = False) -> list[Any]:
    tool_args = '{"location": "Zürich"}'
    return [
        _fields(streamed, next_thought="Look it up.", next_tool_name="get_weather", next_tool_args=tool_args),
        _fields(streamed, next_thought="Done.", next_tool_name="finish", next_tool_args="{}"),
        _fields(streamed, reasoning="It is sunny.", answer="Sunny."),
    ]


def _react_spans(telemetry: Any) -> dict[str, Any]:
    return {s.attributes["gen_ai.tool.name"]: s for s in executions(telemetry)}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["forward", "aforward"])
def test_react_text_steps_are_unknown_and_never_refused(
    instrument: Any, telemetry: Any, fake: Any, asynchronous: bool, engine: str
) -> None:
    # ReAct names its tool in text fields: no tool-call block, no id.
    instrument(strict=True)
    fake.enqueue(*_react_turns())
    react = dspy.ReAct("question -> answer", tools=[get_weather], max_iters=3)
    with dspy.context(lm=_lm(fake, engine), adapter=dspy.ChatAdapter()):
        if asynchronous:
            result = asyncio.run(react.acall(question="Weather in Zürich?"))
        else:
            result = react(question="Weather in Zürich?")
    assert result.answer == "Sunny."
    spans = _react_spans(telemetry)
    assert sorted(spans) == ["finish", "get_weather"]
    for span in spans.values():
        assert span.attributes["toolcall.outcome"] == "unknown" and span.links == ()
        assert "gen_ai.tool.call.id" not in span.attributes
    assert body.calls == [("Zürich", spans["get_weather"].context.span_id)]
    assert telemetry.tool_spans() == []


def test_react_streamed_with_streamify(instrument: Any, telemetry: Any, fake: Any, engine: str) -> None:
    fake.enqueue(*_react_turns(streamed=True))
    react = dspy.ReAct("question -> answer", tools=[get_weather], max_iters=3)
    with dspy.context(lm=_lm(fake, engine), adapter=dspy.ChatAdapter()):
        outputs = list(dspy.streamify(react, async_streaming=False)(question="Weather in Zürich?"))
    assert [o.answer for o in outputs if isinstance(o, dspy.Prediction)] == ["Sunny."]
    assert sorted(_react_spans(telemetry)) == ["finish", "get_weather"]
    assert [location for location, _ in body.calls] == ["Zürich"]
    assert telemetry.tool_spans() == []  # the streams were traced: they hold no tool-call block
    assert len([s for s in telemetry.spans() if s.name.startswith("chat ")]) == 3


def test_a_direct_tool_call_is_an_unknown_execution(instrument: Any, telemetry: Any) -> None:
    assert dspy.Tool(get_weather)(location="Bern") == "sunny"
    (execution,) = executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "unknown" and body.locations == ["Bern"]



def test_the_example_under_opentelemetry_instrument(tmp_path: Path) -> None:
    lines, spans = run_example(
        "dspy_agent.py", LITELLM_LOCAL_MODEL_COST_MAP="True", DSPY_CACHEDIR=str(tmp_path)
    )
    stdout = "\n".join(lines)
    assert "ran get_weather('Zürich')" in stdout
    executed = {
        s["attributes"].get("gen_ai.tool.call.id"): s
        for s in spans
        if s["attributes"].get("gen_ai.operation.name") == "execute_tool"
    }
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call")}
    assert calls["call_cut"]["attributes"]["toolcall.outcome"] == "aborted"
    assert "call_cut: refused (IncompleteToolCallError)" in stdout
    assert "ran get_weather('Zürich, Sch')" not in stdout
    assert executed["call_cut"]["status"]["status_code"] == "ERROR"
    assert [link["context"]["span_id"] for link in executed["call_whole"]["links"]] == [
        calls["call_whole"]["context"]["span_id"]
    ]
