"""Claude Code's own tools (Bash, Read: run by the CLI itself) through the Claude Agent SDK's
PreToolUse hook (``claude_code_tools``): the real CLI against the fake Anthropic endpoint.

Measured (CLI 2.1.332 in SDK 0.2.189, 2.1.1 in 0.1.19): the CLI runs every tool block it has whole,
whatever the stop reason after it (max_tokens included); 2.1.332 starts it before the block's
``content_block_stop`` line (after the response's ``assistant`` line), 2.1.1 after ``message_stop``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher
from claude_agent_sdk.types import ResultMessage
from opentelemetry.trace import StatusCode

from otel_toolcalls.testing import anthropic as A
from otel_toolcalls.testing.claude_code import cli_options, message_json

hooked: list[tuple[str, Any]] = []


async def _user_hook(input_data: Any, call_id: Any, context: Any) -> dict[str, Any]:
    hooked.append((input_data.get("hook_event_name"), call_id))
    return {}


@pytest.fixture(autouse=True)
def _clear() -> None:
    hooked.clear()


def _bash(call_id: str, command: str) -> A.ToolUse:
    return A.ToolUse(
        name="Bash", id=call_id, arguments=json.dumps({"command": command, "description": "probe"})
    )


def _options(fake: Any, tmp_path: Path, *, hooks: bool = False, **env: Any) -> ClaudeAgentOptions:
    user_hooks = {"PreToolUse": [HookMatcher(matcher=None, hooks=[_user_hook])]}
    if hooks:
        user_hooks["PostToolUse"] = [HookMatcher(matcher="Bash", hooks=[_user_hook])]
    return cli_options(
        fake,
        str(tmp_path),
        **env,
        allowed_tools=["Bash", "Read"],
        max_turns=5,
        hooks=user_hooks,  # type: ignore[arg-type]
    )


async def _run(telemetry: Any, options: ClaudeAgentOptions) -> Any:
    """The turn's messages; the client's hook callbacks as the SDK registered them."""
    with telemetry.tracer_provider.get_tracer("app").start_as_current_span("app"):
        async with ClaudeSDKClient(options=options) as client:
            callbacks = dict(client._query.hook_callbacks)  # what the SDK sent the CLI in initialize
            await client.query("Go.")
            seen = [message async for message in client.receive_response()]
    return seen, callbacks


def _answer() -> Any:
    return A.script_for(A.events_for([A.Text("Done.")], stop_reason="end_turn"))


def _executions(telemetry: Any) -> dict[str, Any]:
    return {
        s.attributes["gen_ai.tool.call.id"]: s
        for s in telemetry.spans()
        if s.name.startswith("execute_tool ")
    }


def _calls(telemetry: Any) -> dict[str, Any]:
    return {s.attributes["toolcall.call.id"]: s for s in telemetry.tool_spans()}


@pytest.mark.parametrize("stop_reason", ["tool_use", "max_tokens"])
async def test_the_cli_tools_are_executed_and_linked(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path, stop_reason: str
) -> None:
    # max_tokens after whole blocks: the CLI runs them all the same, so they are completed.
    instrument(claude_code_tools=True)
    (tmp_path / "notes.txt").write_text("hello\n")
    made = tmp_path / "made.txt"
    bash = _bash("toolu_bash_1", f"echo hi > {made}")
    read = A.ToolUse(
        name="Read", id="toolu_read_1", arguments=json.dumps({"file_path": str(tmp_path / "notes.txt")})
    )
    fake.enqueue(
        A.script_for(A.events_for([A.Text("On it."), bash, read], stop_reason=stop_reason)), _answer()
    )
    seen, callbacks = await _run(telemetry, _options(fake, tmp_path, hooks=True))
    assert made.read_text() == "hi\n"
    # The answer came from the script (CLI 2.1.1's own request about the command's output aside).
    (result,) = [m for m in seen if isinstance(m, ResultMessage)]
    assert result.is_error is False and result.result == "Done."
    calls, executions = _calls(telemetry), _executions(telemetry)
    assert set(executions) == {bash.id, read.id} and len(callbacks) == 3  # the user's two, ours
    for call_id, name in ((bash.id, "Bash"), (read.id, "Read")):
        call, execution = calls[call_id], executions[call_id]
        assert call.attributes["toolcall.outcome"] == "completed"
        assert execution.name == f"execute_tool {name}" and execution.attributes["gen_ai.tool.name"] == name
        assert execution.attributes["toolcall.outcome"] == "completed"
        assert [link.context.span_id for link in execution.links] == [call.context.span_id]
        assert execution.status.status_code is StatusCode.UNSET
    # The user's hooks ran beside the package's, each once per call.
    assert sorted(hooked) == sorted(
        [("PreToolUse", bash.id), ("PreToolUse", read.id), ("PostToolUse", bash.id)]
    )


async def test_a_failed_cli_tool_is_an_execution_error(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    instrument(claude_code_tools=True)
    bash = _bash("toolu_bash_fails", "exit 3")
    fake.enqueue(A.tool_use_script([bash]), _answer())
    await _run(telemetry, _options(fake, tmp_path))
    execution = _executions(telemetry)[bash.id]
    assert execution.attributes["error.type"] == "tool_error"
    assert execution.status.status_code is StatusCode.ERROR and len(execution.links) == 1


@pytest.mark.parametrize("strict", [True, False])
async def test_strict_refuses_a_cut_call_the_cli_would_run(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path, strict: bool
) -> None:
    # The stream breaks inside the arguments; the CLI's non-streaming fallback gets the call whole
    # under the same id and runs it, unless the hook denies it.
    instrument(claude_code_tools=True, strict=strict)
    made = tmp_path / "made.txt"
    bash = _bash("toolu_bash_cut", f"touch {made}")
    whole = {"type": "tool_use", "id": bash.id, "name": "Bash", "input": json.loads(bash.arguments)}
    fake.enqueue(
        A.script_for(A.events_for([bash], pings=False), cut_after=4, pace=0.05),
        message_json([whole]),
        _answer(),
    )
    await _run(telemetry, _options(fake, tmp_path))
    assert _calls(telemetry)[bash.id].attributes["toolcall.outcome"] == "aborted"
    execution = _executions(telemetry)[bash.id]
    assert execution.links == () and execution.attributes["toolcall.outcome"] == "aborted"
    if not strict:
        assert made.exists()  # the body runs without strict mode: the check below can fail
        return
    assert not made.exists()  # the body never ran
    assert execution.status.status_code is StatusCode.ERROR
    assert execution.attributes["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    history = json.dumps(fake.requests[-1].json()["messages"])
    assert "refusing to execute tool call" in history
    assert ("PreToolUse", bash.id) in hooked  # the user's hook still ran


@pytest.mark.parametrize(
    ("keyword", "env", "registered"), [(None, None, False), (None, "true", True), (False, "true", False)]
)
async def test_the_hook_is_a_setting_off_by_default(
    instrument: Any,
    telemetry: Any,
    fake: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    keyword: Any,
    env: Any,
    registered: bool,
) -> None:
    if env is not None:
        monkeypatch.setenv("OTEL_TOOLCALLS_CLAUDE_CODE_TOOLS", env)
    instrument(claude_code_tools=keyword)
    bash = _bash("toolu_bash_setting", "true")
    fake.enqueue(A.tool_use_script([bash]), _answer())
    _, callbacks = await _run(telemetry, _options(fake, tmp_path))
    # The user's PreToolUse hook alone, or with the package's beside it.
    assert len(callbacks) == (2 if registered else 1)
    assert (bash.id in _executions(telemetry)) is registered
    assert hooked == [("PreToolUse", bash.id)]
    assert _calls(telemetry)[bash.id].attributes["toolcall.outcome"] == "completed"


async def test_without_partial_messages_the_execution_is_unknown(
    instrument: Any, telemetry: Any, fake: Any, tmp_path: Path
) -> None:
    # No stream seen: the call is not known, so its execution is unknown, not linked, and ended
    # at its tool_result all the same.
    instrument(claude_code_tools=True, strict=True)
    options = _options(fake, tmp_path)
    options.include_partial_messages = False
    made = tmp_path / "made.txt"
    bash = _bash("toolu_bash_unseen", f"touch {made}")
    fake.enqueue(A.tool_use_script([bash]), _answer())
    await _run(telemetry, options)
    assert made.exists() and telemetry.tool_spans() == []
    execution = _executions(telemetry)[bash.id]
    assert execution.attributes["toolcall.outcome"] == "unknown" and execution.links == ()
