"""Claude Agent SDK: the real Claude Code CLI (bundled in the SDK's wheel) against the fake
Anthropic endpoint, with an in-process SDK MCP tool (``@tool``).

Measured (CLI 2.1.332 in SDK 0.2.189; 2.1.1 in 0.1.19): the CLI writes each raw stream event as a
``stream_event`` line and starts an SDK MCP tool at its block's ``content_block_stop``, before the
message's stop reason. It never runs a call whose arguments do not parse (it answers the model with
an ``InputValidationError`` itself). A stream cut inside the arguments: without retries or fallback,
a synthetic assistant message with ``error: server_error``, a synthetic ``message_stop`` and a
result with ``terminal_reason: api_error``; with its (default) non-streaming fallback, the fallback's
whole response, whose calls the CLI runs.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import stat
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, create_sdk_mcp_server, tool
from claude_agent_sdk.types import ResultMessage, StreamEvent
from examples_run import run_example
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from otel_toolcalls.testing import anthropic as A
from otel_toolcalls.testing.claude_code import cli_options, message_json

WEATHER = A.ToolUse(name="mcp__w__get_weather", id="toolu_weather_1", arguments='{"location": "Zürich"}')
ran: list[tuple[Any, int]] = []


@tool("get_weather", "Current weather for a location.", {"location": str})
async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
    ran.append((args.get("location"), trace.get_current_span().get_span_context().span_id))
    return {"content": [{"type": "text", "text": "sunny"}]}


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def _options(fake: Any, tmp_path: Path, **env: Any) -> ClaudeAgentOptions:
    server = create_sdk_mcp_server("w", tools=[get_weather])
    return cli_options(
        fake,
        str(tmp_path),
        **env,
        mcp_servers={"w": server},
        allowed_tools=["mcp__w__get_weather"],
        max_turns=3,
    )


async def _run(
    telemetry: Any, options: ClaudeAgentOptions, prompt: str = "Weather in Zürich?"
) -> tuple[list[Any], Any]:
    """Every message of one turn, and what the SDK raised (None: nothing), inside an app span."""
    seen: list[Any] = []
    raised = None
    with telemetry.tracer_provider.get_tracer("app").start_as_current_span("app"):
        try:
            async with ClaudeSDKClient(options=options) as client:
                await client.query(prompt)
                async for message in client.receive_response():
                    seen.append(message)
        except Exception as exc:
            raised = exc
    return seen, raised


def _answer() -> Any:
    return A.script_for(A.events_for([A.Text("Sunny.")], stop_reason="end_turn"))


def _the(telemetry: Any, prefix: str) -> Any:
    (span,) = [s for s in telemetry.spans() if s.name.startswith(prefix)]
    return span


def _executions(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if (s.attributes or {}).get("gen_ai.tool.call.id")]


def _result(seen: list[Any]) -> Any:
    (result,) = [m for m in seen if isinstance(m, ResultMessage)]
    return result


async def test_completed_call_is_executed_and_linked(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    fake.enqueue(A.tool_use_script([A.Text("Let me look."), WEATHER]), _answer())
    seen, raised = await _run(telemetry, _options(fake, tmp_path))
    assert raised is None and _result(seen).is_error is False
    call = _the(telemetry, "tool_call ")
    assert call.attributes["toolcall.call.id"] == WEATHER.id
    assert call.attributes["toolcall.outcome"] == "completed"
    assert call.attributes["toolcall.arguments.deltas"] == len(WEATHER.pieces())
    (execution,) = _executions(telemetry)
    assert execution.attributes["gen_ai.tool.call.id"] == WEATHER.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    # The tool body ran once, inside its execution span.
    assert ran == [("Zürich", execution.context.span_id)]
    # Two model turns, each its own inference span under the app's span; the call under the first.
    app = _the(telemetry, "app")
    chats = [s for s in telemetry.spans() if s.name == f"chat {A.MODEL}"]
    assert len(chats) == 2 and {s.parent.span_id for s in chats} == {app.context.span_id}
    assert call.parent.span_id in {s.context.span_id for s in chats}
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_use",)


async def test_whole_call_then_max_tokens_runs_and_is_completed(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # The CLI runs a whole block whatever the stop reason after it, as it does its own Bash.
    fake.enqueue(A.tool_use_script([WEATHER], stop_reason="max_tokens"), _answer())
    await _run(telemetry, _options(fake, tmp_path))
    call = _the(telemetry, "tool_call ")
    assert call.attributes["toolcall.outcome"] == "completed"
    (execution,) = _executions(telemetry)
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert ran == [("Zürich", execution.context.span_id)]


async def test_query_function_completed_call_linked(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # query(): the one-shot API. 0.1.19 closes the CLI's input after a string prompt, before the
    # CLI's SDK MCP requests are answered ("ProcessTransport is not ready for writing"): the SDK's
    # own limit there, not the package's.
    if _version() < (0, 2):
        pytest.skip("query() with an SDK MCP server needs the client before 0.2")
    fake.enqueue(A.tool_use_script([WEATHER]), _answer())
    with telemetry.tracer_provider.get_tracer("app").start_as_current_span("app"):
        seen = [m async for m in claude_agent_sdk.query(prompt="Weather?", options=_options(fake, tmp_path))]
    assert _result(seen).is_error is False
    call = _the(telemetry, "tool_call ")
    (execution,) = _executions(telemetry)
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    assert ran == [("Zürich", execution.context.span_id)]


def _version() -> tuple[int, ...]:
    return tuple(int(part) for part in importlib.metadata.version("claude-agent-sdk").split(".")[:2])


async def test_cut_mid_arguments_is_aborted_and_never_run(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # Message start, block start, two fragments; then the connection drops.
    fake.enqueue(A.script_for(A.events_for([WEATHER], pings=False), cut_after=4, pace=0.05))
    seen, _ = await _run(telemetry, _options(fake, tmp_path, fallback=False))
    assert any(isinstance(m, StreamEvent) for m in seen)
    call = _the(telemetry, "tool_call ")
    assert call.attributes["toolcall.outcome"] == "aborted"
    assert call.attributes["toolcall.abort_reason"] == "stream_error"
    # The CLI's error: from its synthetic message (2.1.332: server_error; 2.1.1: unknown), else
    # from its result (error_during_execution).
    assert call.attributes["error.type"] in ("server_error", "unknown", "error_during_execution")
    # The fragments counted are those the CLI passed on before it saw the drop.
    fragments = [
        m for m in seen if isinstance(m, StreamEvent) and m.event.get("type") == "content_block_delta"
    ]
    assert call.attributes["toolcall.arguments.deltas"] == len(fragments) >= 1
    assert ran == [] and _executions(telemetry) == []
    assert getattr(_result(seen), "terminal_reason", None) in (None, "api_error")


async def test_strict_refuses_a_cut_call_the_cli_runs(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # The stream breaks inside the arguments; the CLI's non-streaming fallback gets the call whole
    # under the same id (a real server would name it anew) and runs it: strict mode refuses it.
    instrument(strict=True)
    whole = {"type": "tool_use", "id": WEATHER.id, "name": WEATHER.name, "input": {"location": "Zürich"}}
    fake.enqueue(
        A.script_for(A.events_for([WEATHER], pings=False), cut_after=4, pace=0.05),
        message_json([whole]),
        _answer(),
    )
    _, raised = await _run(telemetry, _options(fake, tmp_path))
    assert raised is None
    assert ran == []  # the tool body never ran
    call = _the(telemetry, "tool_call ")
    assert call.attributes["toolcall.outcome"] == "aborted"
    (execution,) = _executions(telemetry)
    assert execution.status.status_code is StatusCode.ERROR
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert execution.links == ()
    # The CLI handed the refusal to the model as the tool's error result.
    history = json.dumps(fake.requests[-1].json()["messages"])
    assert "refusing to execute tool call" in history and WEATHER.id in history


async def test_not_strict_the_cut_call_runs_unlinked(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    whole = {"type": "tool_use", "id": WEATHER.id, "name": WEATHER.name, "input": {"location": "Zürich"}}
    fake.enqueue(
        A.script_for(A.events_for([WEATHER], pings=False), cut_after=4, pace=0.05),
        message_json([whole]),
        _answer(),
    )
    await _run(telemetry, _options(fake, tmp_path))
    (execution,) = _executions(telemetry)
    assert [location for location, _ in ran] == ["Zürich"]
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "incomplete"
    assert execution.links == ()


async def test_interrupt_mid_arguments_is_cancelled(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # Paced: the client interrupts at the first fragment, while the rest is still to come.
    slow = A.ToolUse(
        name=WEATHER.name, id=WEATHER.id, arguments=WEATHER.arguments, fragments=list(WEATHER.arguments)
    )
    fake.enqueue(A.script_for(A.events_for([slow], pings=False), pace=0.2), _answer())
    seen: list[Any] = []
    async with ClaudeSDKClient(options=_options(fake, tmp_path)) as client:
        await client.query("Weather in Zürich?")
        async for message in client.receive_response():
            seen.append(message)
            event = getattr(message, "event", None) or {}
            if event.get("delta", {}).get("type") == "input_json_delta" and len(seen) < 1000:
                await client.interrupt()
                seen.append("interrupted")
    assert "interrupted" in seen
    result = _result([m for m in seen if m != "interrupted"])
    call = _the(telemetry, "tool_call ")
    assert call.attributes["toolcall.outcome"] == "aborted"
    if getattr(result, "terminal_reason", None) == "aborted_streaming":
        assert call.attributes["toolcall.abort_reason"] == "cancelled"
    else:
        # A CLI before terminal_reason (2.1.1) says only error_during_execution.
        assert result.subtype == "error_during_execution"
        assert call.attributes["toolcall.abort_reason"] == "stream_error"
    assert ran == []


def _wrapped_cli(fake: Any, tmp_path: Path, record: str) -> ClaudeAgentOptions:
    """Options whose CLI is a wrapper that runs ``record`` (sh) first, then the bundled CLI in its place."""
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    wrapper = tmp_path / "claude"
    wrapper.write_text(f'#!/bin/sh\n{record}\nexec "{bundled}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    options = _options(fake, tmp_path)
    options.cli_path = str(wrapper)
    return options


async def test_the_cli_dying_mid_arguments_is_a_stream_error(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    options = _wrapped_cli(fake, tmp_path, f'echo $$ > "{pid_file}"')
    slow = A.ToolUse(
        name=WEATHER.name, id=WEATHER.id, arguments=WEATHER.arguments, fragments=list(WEATHER.arguments)
    )
    fake.enqueue(A.script_for(A.events_for([slow], pings=False), pace=0.2), _answer())
    killed, raised = False, None
    try:
        async with ClaudeSDKClient(options=options) as client:
            await client.query("Weather in Zürich?")
            async for message in client.receive_response():
                event = getattr(message, "event", None) or {}
                if not killed and event.get("delta", {}).get("type") == "input_json_delta":
                    os.kill(int(pid_file.read_text()), signal.SIGKILL)
                    killed = True
    except Exception as exc:
        raised = exc
    assert killed and raised is not None
    call = _the(telemetry, "tool_call ")
    assert call.attributes["toolcall.outcome"] == "aborted"
    assert call.attributes["toolcall.abort_reason"] == "stream_error"
    assert call.attributes["error.type"] == "claude_agent_sdk.ProcessError"  # the CLI killed: exit -9
    assert ran == [] and _executions(telemetry) == []


async def test_without_partial_messages_no_stream_is_seen(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # The CLI writes whole assistant messages only: no call is seen streaming, so the execution
    # is unknown: not linked, and not refused in strict mode.
    instrument(strict=True)
    options = _options(fake, tmp_path)
    options.include_partial_messages = False
    fake.enqueue(A.tool_use_script([WEATHER]), _answer())
    _, raised = await _run(telemetry, options)
    assert raised is None and [location for location, _ in ran] == ["Zürich"]
    assert telemetry.tool_spans() == []
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "unknown" and execution.links == ()


async def test_the_cli_gets_the_app_span_as_traceparent(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # A CLI wrapper records the environment the SDK started the CLI with.
    seen_env = tmp_path / "env.txt"
    options = _wrapped_cli(fake, tmp_path, f'env > "{seen_env}"')
    fake.enqueue(_answer())
    await _run(telemetry, options)
    env = dict(line.split("=", 1) for line in seen_env.read_text().splitlines() if "=" in line)
    app = _the(telemetry, "app")
    chat = _the(telemetry, "chat ")
    assert chat.parent.span_id == app.context.span_id
    if "TRACEPARENT" not in env:
        pytest.skip("this release of the SDK passes no TRACEPARENT to the CLI")
    _, trace_id, span_id, _ = env["TRACEPARENT"].split("-")
    assert int(trace_id, 16) == app.context.trace_id and int(span_id, 16) == app.context.span_id
    assert "TOOLCALL" not in env  # no call in flight at connect: the toolcalls header stays out


def test_the_example_under_opentelemetry_instrument() -> None:
    lines, spans = run_example("claude_agent_sdk_agent.py", OTEL_TOOLCALLS_CLAUDE_CODE_TOOLS="true")
    # The cut call never reached the tool body; the whole one ran once.
    assert [line for line in lines if line.startswith("ran ")] == ["ran get_weather('Zürich')"]
    assert "answer: Sunny in Zürich." in lines
    assert "toolu_cut: aborted" in lines and "toolu_whole: completed" in lines
    # Bash, run by the CLI: the cut command denied by the package's hook, never run; the whole one
    # run in its execution span, linked.
    assert "cut.txt written: False; whole.txt written: True" in lines
    assert "toolu_bash_cut: aborted" in lines and "toolu_bash_whole: completed" in lines
    bash = {s["attributes"].get("gen_ai.tool.call.id"): s for s in spans if s["name"] == "execute_tool Bash"}
    assert bash["toolu_bash_cut"]["attributes"]["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert bash["toolu_bash_cut"]["links"] == [] and len(bash["toolu_bash_whole"]["links"]) == 1
    (refused,) = [s for s in spans if s["attributes"].get("gen_ai.tool.call.id") == "toolu_cut"]
    # The SDK's own MCP span (mcp 2.x, recording under a global provider) is the execution span:
    # refused, not linked; mcp itself marks it with the isError result it answered.
    assert refused["attributes"]["toolcall.outcome"] == "aborted" and refused["links"] == []
    assert refused["status"]["status_code"] == "ERROR"
    # mcp's own span (from 0.2.140) records its reading of the refusal's isError result over the
    # package's error.type (TELEMETRY section 6, Claude Agent SDK); the package's own keeps it.
    mcp_own = refused["name"].startswith("tools/call ")
    assert refused["attributes"]["error.type"] == (
        "tool_error" if mcp_own else "otel_toolcalls.IncompleteToolCallError"
    )
    (linked,) = [s for s in spans if s["attributes"].get("gen_ai.tool.call.id") == "toolu_whole"]
    assert len(linked["links"]) == 1
