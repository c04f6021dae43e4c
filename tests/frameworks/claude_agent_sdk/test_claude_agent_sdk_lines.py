"""The claude_agent_sdk adapter's reading of the CLI's stdout lines, fed as the transport yields
them (dicts), without the SDK or the CLI: threads, the lines that end a message, the transport's
end, and the settling of a stopped call. The real CLI runs in test_claude_agent_sdk.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from otel_toolcalls._core.telemetry import in_force
from otel_toolcalls._frameworks import claude_agent_sdk as adapter
from otel_toolcalls.testing import anthropic as A

CALL = A.ToolUse(name="get_weather", id="toolu_lines_1", arguments='{"location": "Zürich"}')


def _events(thread: str | None, blocks: list[Any], **options: Any) -> list[dict[str, Any]]:
    return [
        {"type": "stream_event", "event": data, "parent_tool_use_id": thread}
        for _, data in A.events_for(blocks, **options)
    ]


def _tools_call(call_id: str) -> dict[str, Any]:
    message = {
        "method": "tools/call",
        "params": {"name": "get_weather", "_meta": {adapter.TOOL_USE_ID: call_id}},
    }
    return {"type": "control_request", "request": {"subtype": "mcp_message", "message": message}}


def _result(**fields: Any) -> dict[str, Any]:
    return {"type": "result", "subtype": "success", **fields}


async def _lines(lines: list[Any], end: BaseException | None = None) -> AsyncIterator[Any]:
    for line in lines:
        yield line
    if end is not None:
        raise end


async def _read(lines: list[Any], end: BaseException | None = None) -> list[Any]:
    seen = []
    async for line in adapter._reading(adapter._Reader(in_force()), _lines(lines, end)):
        seen.append(line)
    return seen


def _outcome(telemetry: Any, call_id: str = CALL.id) -> tuple[Any, Any]:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes["toolcall.call.id"] == call_id]
    return span.attributes["toolcall.outcome"], span.attributes.get("toolcall.abort_reason")


async def test_lines_pass_unchanged_and_threads_are_streams_of_their_own(
    instrument: Any, telemetry: Any
) -> None:
    sub = A.ToolUse(name="get_weather", id="toolu_lines_sub", arguments='{"location": "Basel"}')
    main, agent = _events(None, [CALL]), _events("toolu_task_1", [sub])
    # Interleaved: the subagent's message runs inside the main thread's.
    lines = [*main[:3], *agent, *main[3:], _result(terminal_reason="completed")]
    assert await _read(lines) == lines
    assert _outcome(telemetry) == ("completed", None)
    assert _outcome(telemetry, sub.id) == ("completed", None)
    chats = [s for s in telemetry.spans() if s.name == "chat"]  # no init line: no model
    calls = {s.attributes["toolcall.call.id"]: s.parent.span_id for s in telemetry.tool_spans()}
    assert len(chats) == 2 and calls[CALL.id] != calls[sub.id]


@pytest.mark.parametrize(
    ("terminal", "reason"),
    [
        ("aborted_streaming", "cancelled"),
        ("aborted_tools", "cancelled"),
        ("api_error", "stream_error"),
        ("max_turns", "incomplete"),
    ],
)
async def test_a_message_open_at_the_result_takes_its_terminal_reason(
    instrument: Any, telemetry: Any, terminal: str, reason: str
) -> None:
    cut = A.ToolUse(name=CALL.name, id=CALL.id, arguments=CALL.arguments, stop=False)
    lines = _events(None, [cut], stop_reason=None, final=False)
    await _read([*lines, _result(terminal_reason=terminal)])
    assert _outcome(telemetry) == ("aborted", reason)


async def test_a_synthetic_stop_then_another_response_is_incomplete(instrument: Any, telemetry: Any) -> None:
    # The CLI's own message_stop after a broken stream, then its non-streaming fallback's message.
    cut = A.ToolUse(name=CALL.name, id=CALL.id, arguments=CALL.arguments, stop=False)
    lines = _events(None, [cut], stop_reason=None)
    other = {"type": "assistant", "message": {"id": "msg_other", "content": []}, "parent_tool_use_id": None}
    reading = adapter._reading(adapter._Reader(in_force()), _lines([*lines, other, *lines]))
    while await reading.__anext__() is not other:
        assert telemetry.tool_spans() == []  # still open: the synthetic stop alone says nothing
    # Ended by that line, before the transport ends; the response too, as its call did.
    assert _outcome(telemetry) == ("aborted", "incomplete")
    (chat,) = [s for s in telemetry.spans() if s.name == "chat"]
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert (chat.attributes["toolcall.outcome"], chat.attributes.get("toolcall.abort_reason")) == (
        "aborted",
        "incomplete",
    )
    await reading.aclose()


async def test_the_cli_error_message_ends_open_calls_as_stream_errors(
    instrument: Any, telemetry: Any
) -> None:
    cut = A.ToolUse(name=CALL.name, id=CALL.id, arguments=CALL.arguments, stop=False)
    lines = _events(None, [cut], stop_reason=None, final=False)
    error = {"type": "assistant", "message": {"model": "<synthetic>"}, "error": "rate_limit"}
    await _read([*lines, error, _result(terminal_reason="api_error")])
    (span,) = telemetry.tool_spans()
    assert (
        _outcome(telemetry) == ("aborted", "stream_error") and span.attributes["error.type"] == "rate_limit"
    )


@pytest.mark.parametrize(
    ("end", "reason"),
    [(None, "incomplete"), (OSError("pipe"), "stream_error"), (asyncio.CancelledError(), "cancelled")],
)
async def test_the_transport_ending_mid_arguments(
    instrument: Any, telemetry: Any, end: BaseException | None, reason: str
) -> None:
    lines = _events(None, [CALL])[:4]  # message start, ping, block start, a fragment
    with pytest.raises(type(end)) if end is not None else _nothing():
        await _read(lines, end)
    assert _outcome(telemetry) == ("aborted", reason)


async def test_the_transport_closed_mid_arguments(instrument: Any, telemetry: Any) -> None:
    inner = _lines(_events(None, [CALL]))
    reading = adapter._reading(adapter._Reader(in_force()), inner)
    for _ in range(4):
        await reading.__anext__()
    await reading.aclose()
    assert _outcome(telemetry) == ("aborted", "closed")
    # The transport's own generator is closed with it, not left to the collector.
    assert inner.ag_frame is None


@pytest.mark.parametrize(
    ("arguments", "outcome"),
    [(CALL.arguments, ("completed", None)), ('{"location": "Zü', ("aborted", "unterminated"))],
)
@pytest.mark.parametrize("executed", [True, False])
async def test_a_stopped_block_is_settled_by_its_arguments_whatever_the_stop_reason(
    instrument: Any, telemetry: Any, arguments: str, outcome: Any, executed: bool
) -> None:
    # The CLI runs every tool block it has whole (its own tools and SDK MCP ones alike), also
    # when max_tokens follows: one rule, whether or not a tools/call for it came before the reason.
    call = A.ToolUse(name=CALL.name, id=CALL.id, arguments=arguments)
    lines = _events(None, [call], stop_reason="max_tokens")
    stop = next(i for i, line in enumerate(lines) if line["event"]["type"] == "content_block_stop")
    if executed:
        lines.insert(stop + 1, _tools_call(CALL.id))
    await _read(lines)
    assert _outcome(telemetry) == outcome


async def test_the_assistant_line_before_the_block_stop_settles_the_call(
    instrument: Any, telemetry: Any
) -> None:
    # The CLI writes a response's assistant line (the block whole) before its content_block_stop,
    # and runs the tool at once: its PreToolUse hook finds the call completed.
    lines = _events(None, [CALL], stop_reason="max_tokens")
    response = lines[0]["event"]["message"]["id"]
    stop = next(i for i, line in enumerate(lines) if line["event"]["type"] == "content_block_stop")
    block = {"type": "tool_use", "id": CALL.id, "name": CALL.name, "input": {"location": "Zürich"}}
    assistant = {"type": "assistant", "message": {"id": response, "content": [block]}}
    ordered = [*lines[:stop], assistant, *lines[stop:]]
    reading = adapter._reading(adapter._Reader(in_force()), _lines(ordered))
    while await reading.__anext__() is not assistant:
        pass
    assert _outcome(telemetry) == ("completed", None)
    async for _ in reading:
        pass
    assert _outcome(telemetry) == ("completed", None)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
