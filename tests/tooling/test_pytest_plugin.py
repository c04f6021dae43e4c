"""The pytest plugin: fixtures, scenario faults through the real SDKs, and (with pytester) careless
loops failing with messages that name the call, careful loops passing, over the fault matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls.testing.kit import ALL_FAULTS, call, cut_mid_arguments, each_fault

pytest_plugins = ("pytester",)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ARGS = {"city": "Zürich", "days": 14, "note": "naïve ☀️"}


def _drain(api: str, client: Any) -> None:
    """Read one streamed reply to its end (or its failure), as any consumer would."""
    try:
        if api == "openai":
            for _ in client.chat.completions.create(model="m", messages=[], stream=True):
                pass
        elif api == "responses":
            for _ in client.responses.create(model="m", input="x", stream=True):
                pass
        elif api == "bedrock":
            for _ in client.converse_stream(modelId="m", messages=[])["stream"]:
                pass
        else:
            with client.messages.stream(model="m", max_tokens=10, messages=[]) as stream:
                for _ in stream:
                    pass
    except Exception:  # every breaking fault ends in some SDK or transport error; the span says which
        return


@each_fault
@pytest.mark.parametrize("api", ["responses", "bedrock"])  # OpenAI chat, Anthropic: the loops below
def test_each_fault_reaches_the_real_sdk_as_its_outcome(
    toolcalls: Any, fake_llm: Any, fault: Any, api: str
) -> None:
    side = getattr(fake_llm, api)
    reply = side.reply(tool_calls=[call("get_weather", ARGS)], fault=fault)
    _drain(api, side.client)
    seen = toolcalls.call(reply.call_ids[0])
    expected = ("aborted", fault.reason) if fault.breaks else ("completed", None)
    assert (seen.outcome, seen.reason) == expected
    if fault.kind == "cut_mid_arguments":
        assert seen.deltas == fault.after  # cut after exactly that many fragments
    if fault.kind == "buffer":
        (inference,) = toolcalls.inference_spans
        assert inference.attributes["toolcall.stream.buffered"] is True


async def test_async_clients_and_a_fault_on_the_second_parallel_call(toolcalls: Any, fake_llm: Any) -> None:
    reply = fake_llm.openai.reply(
        tool_calls=[call("get_weather", {"city": "Bern"}), call("get_time", {"zone": "Europe/Zürich"})],
        fault=cut_mid_arguments(after=1, call=1),
    )
    client = fake_llm.openai.async_client
    with pytest.raises(Exception, match=r"incomplete chunked read|Connection error"):
        async for _ in await client.chat.completions.create(model="m", messages=[], stream=True):
            pass
    await client.close()
    # OpenAI chat has no per-call completion event: a cut during the second call aborts both.
    assert [(toolcalls.outcome(i), toolcalls.reason(i)) for i in reply.call_ids] == [
        ("aborted", "stream_error")
    ] * 2
    assert toolcalls.call(reply.call_ids[1]).deltas == 1


def test_fragments_are_awkward_by_default(toolcalls: Any, fake_llm: Any) -> None:
    fake_llm.openai.reply(tool_calls=[call("get_weather", ARGS)])
    writes = fake_llm.openai._queue[0].writes
    pieces = []
    for chunk in fake_llm.openai.client.chat.completions.create(model="m", messages=[], stream=True):
        for tc in chunk.choices[0].delta.tool_calls or []:
            pieces.append(tc.function.arguments or "")
    text = "".join(pieces)
    assert text == '{"city": "Zürich", "days": 14, "note": "naïve ☀️"}'
    assert any(p.endswith('"city"') for p in pieces)  # between a key and its colon
    assert any(p.endswith("1") for p in pieces)  # mid-number: "1" | "4"
    assert any(p.endswith("Zü") or p.endswith("Z") for p in pieces)  # inside a string literal
    undecodable = 0
    for data in writes:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            undecodable += 1
    assert undecodable >= 2  # writes cut inside a multi-byte character


def test_replies_queue_per_api_and_requests_are_recorded(toolcalls: Any, fake_llm: Any) -> None:
    first = fake_llm.openai.reply(tool_calls=[call("get_weather", ARGS)], fault=cut_mid_arguments(after=1))
    fake_llm.anthropic.reply(text="Hello.")
    fake_llm.openai.reply(text="Sunny.")
    _drain("openai", fake_llm.openai.client)
    with fake_llm.anthropic.client.messages.stream(model="m", max_tokens=5, messages=[]) as stream:
        assert stream.get_final_text() == "Hello."
    history = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": first.call_ids[0],
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{"},
                }
            ],
        },
    ]
    _drain_history(fake_llm.openai.client, history)
    sent = fake_llm.sent
    assert [(s.method, s.path) for s in sent] == [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/messages"),
        ("POST", "/v1/chat/completions"),
    ]
    assert [s.history_call_ids for s in fake_llm.openai.sent] == [[], [first.call_ids[0]]]
    assert fake_llm.openai.sent[1].body["messages"][0]["content"] == "weather?"
    assert fake_llm.pending() == {}
    toolcalls.assert_no_aborted_call_executed()
    with pytest.raises(
        AssertionError, match=f"call_id='{first.call_ids[0]}' tool='get_weather' reason=stream_error"
    ):
        toolcalls.assert_no_aborted_call_replayed()


def _drain_history(client: Any, messages: list[Any]) -> None:
    for _ in client.chat.completions.create(model="m", messages=messages, stream=True):
        pass


def test_an_empty_queue_answers_with_an_error_naming_the_api(fake_llm: Any) -> None:
    import openai

    with pytest.raises(openai.InternalServerError, match="queued no reply for responses"):
        fake_llm.responses.client.responses.create(model="m", input="x", stream=True)


def test_each_fault_covers_every_fault_kind() -> None:
    kinds = {f.kind for f in ALL_FAULTS}
    assert kinds == {
        "cut_mid_arguments",
        "cut_after_call",
        "truncate",
        "filter",
        "error_event",
        "buffer",
        "pace",
        "stall",
    }


# With pytester: the plugin as a user's test session loads it (opt-in: ``-p``).


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.syspathinsert(EXAMPLES)
    pytester.makepyfile(test_loop=source)
    plugin = ("-p", "otel_toolcalls.testing.pytest_plugin")
    return pytester.runpytest(
        "-p", "no:cacheprovider", *plugin, "-q", "-W", "ignore::DeprecationWarning", *args
    )


def test_careless_loops_fail_with_the_call_named_and_careful_loops_pass(pytester: pytest.Pytester) -> None:
    """examples/test_agent_loops.py as a user runs it, careless loops' xfail markers ignored."""
    result = _run(pytester, (EXAMPLES / "test_agent_loops.py").read_text(encoding="utf-8"), "--runxfail")
    result.assert_outcomes(failed=5, passed=3 * len(ALL_FAULTS))
    for prefix, reason in (
        ("call_fake", "stream_error"),
        ("toolu_fake", "stream_error"),
        ("call_fake", "truncated"),
    ):
        named = f"call_id='{prefix}001' tool='get_weather' reason={reason}"
        result.stdout.fnmatch_lines(
            [
                f"E * aborted tool call executed: {named}",
                "E *   offending span: 'execute_tool get_weather' (span_id=*",
                f"E *   call span: 'tool_call get_weather' (span_id=*): aborted ({reason}), * argument*",
                "E * the loop must roll the turn back*",
            ]
        )
    for prefix in ("call_fake", "toolu_fake"):
        named = f"call_id='{prefix}001' tool='get_weather' reason=stream_error"
        result.stdout.fnmatch_lines(
            [
                f"E * aborted tool call replayed: {named}",
                "E *   offending span: * the request carried the call in its history",
            ]
        )


UNLINKED_AND_RESTORED = """
import json
from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls.testing.kit import call

def test_executes_outside_execute_tool(toolcalls, fake_llm):
    fake_llm.openai.reply(tool_calls=[call("get_weather", {"city": "Bern"})])
    for _ in fake_llm.openai.client.chat.completions.create(model="m", messages=[], stream=True):
        pass
    assert toolcalls.outcome("call_fake001") == "completed"
    toolcalls.assert_all_completed_calls_linked()

def test_instrumentor_is_off_after_the_fixture():
    assert not ToolCallsInstrumentor().is_instrumented_by_opentelemetry
"""


def test_unexecuted_completed_call_is_reported_and_the_instrumentor_restored(
    pytester: pytest.Pytester,
) -> None:
    result = _run(pytester, UNLINKED_AND_RESTORED)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "E * completed tool call not linked: call_id='call_fake001' tool='get_weather'",
            "E *   execution spans with this id: none",
        ]
    )
    assert not ToolCallsInstrumentor().is_instrumented_by_opentelemetry


@pytest.mark.toolcalls(strict=True)
def test_the_marker_passes_settings_and_a_strict_refusal_is_not_an_execution(
    toolcalls: Any, fake_llm: Any
) -> None:
    from otel_toolcalls import IncompleteToolCallError, execute_tool

    reply = fake_llm.openai.reply(tool_calls=[call("get_weather", ARGS)], fault=cut_mid_arguments())
    _drain("openai", fake_llm.openai.client)
    ran = []
    with pytest.raises(IncompleteToolCallError), execute_tool(reply.call_ids[0], name="get_weather"):
        ran.append(True)
    assert ran == [] and len(toolcalls.executions) == 1  # refused before the body: a span, no execution
    toolcalls.assert_no_aborted_call_executed()
