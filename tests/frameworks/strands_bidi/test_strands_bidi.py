"""Strands' BidiAgent with Nova Sonic (``BedrockNovaSonicModel``) against the fake Nova Sonic
service (TLS, HTTP/2, event-stream frames through the SDK's own CRT client): the agent starts a
tool at its ``toolUse`` event, before the block's ``contentEnd``; its execution waits for the block
to settle, is linked to a completed call, and in strict mode a call the connection cut or the
user interrupted (barge-in) is refused before its body. Python 3.12+: the ``bidi`` lane."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from console_spans import console_spans
from outcomes import assert_outcome
from strands import tool
from strands.bidi import BidiAgent
from strands.bidi.models.bedrock import BedrockNovaSonicModel

from otel_toolcalls import tool_call_outcome
from otel_toolcalls.testing import nova_sonic as nova

MODEL = "amazon.nova-sonic-v1:0"
REGION = "us-east-1"
ARGS = {"city": "Zürich"}
# The model's answer to a tool result (the fake's next reply): no earlier event has a transcript block.
ANSWERED = "BidiTranscriptBlockEvent"
ran: list[dict[str, Any]] = []


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    ran.append({"city": city})
    return f"Sunny in {city}."


@pytest.fixture(autouse=True)
def _clean() -> None:
    ran.clear()


async def _conversation(until: str, stop: bool) -> list[str]:
    """Starts the agent, says one thing, reads its events till one whose type is ``until`` (or
    the session's end); the event types read. ``stop``: the agent is stopped (after a dropped
    connection Strands' ``stop()`` never returns, bare as well: left to ``asyncio.run``'s end)."""
    session = boto3.Session(
        aws_access_key_id="AKIDFAKE", aws_secret_access_key="fake", region_name="us-east-1"
    )
    agent = BidiAgent(model=BedrockNovaSonicModel(model_id=MODEL, boto_session=session), tools=[get_weather])
    seen: list[str] = []
    await agent.start()
    try:
        await agent.send("Weather in Zürich?")
        async for event in agent.receive():
            seen.append(type(event).__name__)
            if seen[-1] == until:
                break
    except Exception as exc:
        seen.append(f"raised {type(exc).__name__}")
    if stop:
        await agent.stop()
    return seen


def _run(replies: list[nova.Reply], until: str, stop: bool = True) -> tuple[list[str], Any]:
    with nova.NovaSonicServer(replies) as fake, nova.strands_pointed_at(fake):
        # A hang guard only: every scenario ends on its own events.
        seen = asyncio.run(asyncio.wait_for(_conversation(until, stop), 60))
    return seen, fake


def _executions(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("execute_tool")]


def _tool_results(fake: Any) -> list[dict[str, Any]]:
    return [e["toolResult"] for x in fake.exchanges for e in x.events if "toolResult" in e]


def test_completed_call_runs_linked(telemetry: Any, instrument: Any) -> None:
    call = nova.tool_block("c_tool", "get_weather", "tu_1", ARGS)
    seen, fake = _run([call, nova.spoken("c_say", "Sunny.")], "BidiResponseStopEvent")
    assert "BidiToolUseBlocksEvent" in seen and ran == [ARGS]
    span = telemetry.one("tool_call get_weather")
    assert_outcome(span, None)
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [span.context.span_id]
    assert len(_tool_results(fake)) == 1


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (nova.tool_block("c_tool", "get_weather", "tu_1", ARGS, stop_reason="INTERRUPTED"), "cancelled"),
        ([*nova.tool_block("c_tool", "get_weather", "tu_1", ARGS)[:2], nova.DROP], "incomplete"),
    ],
    ids=["barge-in", "dropped-between-events"],
)
def test_strict_refuses_the_unsettled_call(
    telemetry: Any, instrument: Any, reply: nova.Reply, reason: str
) -> None:
    instrument(strict=True)
    replies = [reply, nova.spoken("c_say", "Okay.")]
    dropped = nova.DROP in reply
    # Read till the model's answer to the tool result (its transcript), so the result was sent.
    seen, fake = _run(replies, "ToolResultMessageEvent" if dropped else ANSWERED, stop=not dropped)
    assert "BidiToolUseBlocksEvent" in seen and "ToolResultMessageEvent" in seen
    assert ran == []
    assert_outcome(telemetry.one("tool_call get_weather"), reason)
    assert tool_call_outcome("tu_1") == "aborted"
    if not dropped:  # the refusal went to the model as the tool's error
        (result,) = _tool_results(fake)
        assert "IncompleteToolCallError" in result["content"] or "refusing" in result["content"]
    for execution in _executions(telemetry):
        assert execution.links == ()
        assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"


def test_without_strict_the_interrupted_call_runs_unlinked(telemetry: Any, instrument: Any) -> None:
    interrupted = nova.tool_block("c_tool", "get_weather", "tu_1", ARGS, stop_reason="INTERRUPTED")
    _, fake = _run([interrupted, nova.spoken("c_say", "Okay.")], ANSWERED)
    assert ran == [ARGS] and len(_tool_results(fake)) == 1  # Strands runs it and answers it
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.links == ()


# -- a real process: the example, strict from the environment, in both import orders --------------

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "strands_bidi_agent.py"
VENV_BIN = Path(sys.executable).parent
# The SDKs imported before the instrumentation initializes (opentelemetry-instrument's own
# initialize(), as its sitecustomize runs it), then the example run as a script.
SDK_FIRST = (
    "import runpy, sys\n"
    "import strands.bidi.agent.loop, aws_sdk_bedrock_runtime.client, smithy_aws_event_stream.aio\n"
    "from opentelemetry.instrumentation.auto_instrumentation import initialize\n"
    "initialize()\n"
    "runpy.run_path(sys.argv[1], run_name='__main__')\n"
)


@pytest.mark.parametrize("order", ["instrument-first", "sdk-first"])
def test_the_example_under_opentelemetry_instrument(order: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", OTEL_TRACES_EXPORTER="console",
               OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none",
               OTEL_TOOLCALLS_STRICT="true")  # fmt: skip
    if order == "instrument-first":
        command = [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, str(EXAMPLE)]
    else:
        command = [sys.executable, "-c", SDK_FIRST, str(EXAMPLE)]
    # A hang guard, not a bound.
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.splitlines()
    assert "ran get_weather('Zürich')" in lines
    assert not any(line.startswith("ran book_table") for line in lines)  # refused before its body
    assert "answered tu_weather: success" in lines and "answered tu_book: error" in lines
    spans = console_spans(result.stdout)
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert {k: s["attributes"]["toolcall.outcome"] for k, s in calls.items()} == {
        "tu_weather": "completed", "tu_book": "aborted",
    }  # fmt: skip
    assert calls["tu_book"]["attributes"]["toolcall.abort_reason"] == "cancelled"
    # The package's executions (Strands' own bidi tool spans, beside them, carry no outcome).
    runs = {
        s["attributes"]["gen_ai.tool.call.id"]: s
        for s in spans
        if s["name"].startswith("execute_tool ") and "toolcall.outcome" in s["attributes"]
    }
    (link,) = runs["tu_weather"]["links"]
    assert link["context"]["span_id"] == calls["tu_weather"]["context"]["span_id"]
    refused = runs["tu_book"]
    assert refused["links"] == []
    assert refused["attributes"]["error.type"] == "otel_toolcalls.IncompleteToolCallError"
