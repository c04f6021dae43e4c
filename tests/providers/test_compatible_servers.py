"""Block keying on OpenAI-compatible servers (issue 29, TELEMETRY.md section 6 "Keying on
self-hosted servers"): each server's quirk, replayed by its builder in
``otel_toolcalls.testing.compatible_servers`` through the real openai SDK, gives one span per real
call, with its name, id and outcome; complete calls are linked and run in strict mode."""

from __future__ import annotations

import importlib
from typing import Any

import httpx
import pytest
from outcomes import assert_outcome

from otel_toolcalls import IncompleteToolCallError, execute_tool
from otel_toolcalls._core import names as n
from otel_toolcalls.testing import compatible_servers as servers
from otel_toolcalls.testing.openai_chat import ToolCall, arguments_by_index, request

WEATHER = ToolCall("get_weather", '{"city": "Zürich", "days": 3}', id="call_w")
TIME = ToolCall("get_time", '{"tz": "Europe/Zurich", "nested": {"offset": 120}}', id="call_t")
WEATHER_2 = ToolCall("get_weather", '{"city": "Genève", "days": [1, 2]}', id="call_w2")
CUT = ToolCall("get_weather", '{"city": "Zür', id="call_cut")


def stream(fake: Any, chunks: list[dict[str, Any]], **options: Any) -> list[Any]:
    openai = importlib.import_module("openai")  # after instrument(), as opentelemetry-instrument does
    fake.enqueue(servers.script(chunks, **options))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    return list(client.chat.completions.create(**request()))


def spans_in_order(telemetry: Any) -> list[Any]:
    return sorted(telemetry.tool_spans(), key=lambda s: s.start_time)


def summary(telemetry: Any) -> list[tuple[str, str | None, str | None]]:
    """(name, call id, abort reason) of each tool-call span, in the order the calls started."""
    return [
        (
            s.attributes[n.TOOLCALL_TOOL_NAME],
            s.attributes.get(n.TOOLCALL_CALL_ID),
            s.attributes.get(n.TOOLCALL_ABORT_REASON),
        )
        for s in spans_in_order(telemetry)
    ]


def assert_sizes(telemetry: Any, calls: list[ToolCall]) -> None:
    for span, call in zip(spans_in_order(telemetry), calls, strict=True):
        assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(call.arguments.encode("utf-8"))
        assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == len(call.pieces())


def run_strict(telemetry: Any, call_ids: list[str]) -> None:
    """Strict mode runs each call, and each execution links to its own call's span."""
    by_id = {s.attributes.get(n.TOOLCALL_CALL_ID): s for s in telemetry.tool_spans()}
    ran: list[str] = []
    for call_id in call_ids:
        with execute_tool(call_id, strict=True):
            ran.append(call_id)
    assert ran == call_ids
    runs = [s for s in telemetry.spans() if s.name.startswith(n.EXECUTE_TOOL_SPAN_PREFIX)]
    assert [run.links[0].context.span_id for run in runs] == [by_id[c].context.span_id for c in call_ids]


def test_sglang_two_complete_calls_on_index_0(telemetry, instrument, fake):
    chunks = servers.sglang_shared_index([WEATHER, TIME])
    assert {tc["index"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", ())} == {0}
    got = stream(fake, chunks)
    # What the SDK hands a naive consumer: both calls joined under index 0.
    assert arguments_by_index(got)[(0, 0)] == WEATHER.arguments + TIME.arguments
    assert summary(telemetry) == [("get_weather", "0", None), ("get_time", "1", None)]
    assert_sizes(telemetry, [WEATHER, TIME])
    for span in telemetry.tool_spans():
        assert_outcome(span, None)
        assert span.attributes[n.TOOLCALL_INDEX] == 0
    assert telemetry.calls_by_outcome() == {("completed", None): 2}
    assert telemetry.one("chat ").attributes[n.TOOLCALL_COUNT] == 2
    run_strict(telemetry, ["0", "1"])


def test_sglang_cut_call_then_another_on_index_0(telemetry, instrument, fake):
    stream(fake, servers.sglang_shared_index([CUT, TIME]))
    assert summary(telemetry) == [("get_weather", "0", "unterminated"), ("get_time", "1", None)]
    cut = spans_in_order(telemetry)[0]
    assert_outcome(cut, n.UNTERMINATED)
    # Ended when the next call started, not at the finish reason.
    assert cut.end_time <= spans_in_order(telemetry)[1].start_time
    with pytest.raises(IncompleteToolCallError), execute_tool("0", strict=True):
        pass
    run_strict_one = []
    with execute_tool("1", strict=True):
        run_strict_one.append("1")
    assert run_strict_one == ["1"]


def test_sglang_closed_call_then_a_stream_cut_aborts_both(telemetry, instrument, fake):
    # A closed earlier call on a reused index completes with the rest, or aborts with it.
    chunks = servers.sglang_shared_index([WEATHER, TIME], finish_reason=None)
    # openai 3.x raises APIConnectionError, earlier releases the transport's own error.
    with pytest.raises((importlib.import_module("openai").APIConnectionError, httpx.TransportError)):
        stream(fake, chunks, end="cut", done=False)
    assert [reason for _, _, reason in summary(telemetry)] == ["stream_error", "stream_error"]


def test_sglang_ids_only_on_index_0(telemetry, instrument, fake):
    stream(fake, servers.sglang_ids_only_on_index_0([WEATHER, TIME]))
    assert summary(telemetry) == [("get_weather", "call_w", None), ("get_time", None, None)]
    assert_sizes(telemetry, [WEATHER, TIME])
    run_strict(telemetry, ["call_w"])


@pytest.mark.parametrize("shared_index", [False, True])
def test_vllm_empty_continuation_ids(telemetry, instrument, fake, shared_index):
    stream(fake, servers.vllm_empty_continuation_ids([WEATHER, TIME], shared_index=shared_index))
    assert summary(telemetry) == [("get_weather", "call_w", None), ("get_time", "call_t", None)]
    assert_sizes(telemetry, [WEATHER, TIME])
    run_strict(telemetry, ["call_w", "call_t"])


def test_vllm_cut_labelled_tool_calls(telemetry, instrument, fake):
    stream(fake, servers.cut_but_labelled(WEATHER, keep=12))
    assert summary(telemetry) == [("get_weather", "call_w", "unterminated")]
    with pytest.raises(IncompleteToolCallError), execute_tool("call_w", strict=True):
        pass


def test_glm_id_in_first_chunk_only(telemetry, instrument, fake):
    stream(fake, servers.glm_id_in_first_chunk_only([WEATHER, TIME]))
    assert summary(telemetry) == [("get_weather", "call_w", None), ("get_time", "call_t", None)]
    assert_sizes(telemetry, [WEATHER, TIME])
    run_strict(telemetry, ["call_w", "call_t"])


def test_gemma_index_is_the_tools_position(telemetry, instrument, fake):
    calls = [TIME, WEATHER, WEATHER_2]
    chunks = servers.gemma_tool_position_index(calls, tools=["get_weather", "get_time"])
    stream(fake, chunks)
    assert summary(telemetry) == [
        ("get_time", "call_t", None),
        ("get_weather", "call_w", None),
        ("get_weather", "call_w2", None),
    ]
    assert [s.attributes[n.TOOLCALL_INDEX] for s in spans_in_order(telemetry)] == [1, 0, 0]
    assert_sizes(telemetry, calls)
    run_strict(telemetry, ["call_t", "call_w", "call_w2"])


def test_ollama_whole_calls_on_index_0(telemetry, instrument, fake):
    calls = [WEATHER, TIME, WEATHER_2]
    stream(fake, servers.ollama_shared_index_whole(calls))
    assert summary(telemetry) == [(c.name, c.id, None) for c in calls]
    for span, call in zip(spans_in_order(telemetry), calls, strict=True):
        assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 1
        assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(call.arguments.encode("utf-8"))
    run_strict(telemetry, ["call_w", "call_t", "call_w2"])


def test_interleaved_parallel_calls(telemetry, instrument, fake):
    stream(fake, servers.interleaved([WEATHER, TIME]))
    assert summary(telemetry) == [("get_weather", "call_w", None), ("get_time", "call_t", None)]
    assert_sizes(telemetry, [WEATHER, TIME])
    run_strict(telemetry, ["call_w", "call_t"])


def test_several_calls_in_one_delta(telemetry, instrument, fake):
    stream(fake, servers.side_by_side([WEATHER, TIME, WEATHER_2]))
    assert summary(telemetry) == [
        ("get_weather", "call_w", None),
        ("get_time", "call_t", None),
        ("get_weather", "call_w2", None),
    ]
    assert_sizes(telemetry, [WEATHER, TIME, WEATHER_2])
    run_strict(telemetry, ["call_w", "call_t", "call_w2"])


def test_no_ids_at_all(telemetry, instrument, fake):
    stream(fake, servers.no_ids([WEATHER, TIME]))
    assert summary(telemetry) == [("get_weather", None, None), ("get_time", None, None)]
    assert_sizes(telemetry, [WEATHER, TIME])


def test_no_ids_on_a_shared_index_split_by_the_documents(telemetry, instrument, fake):
    # No id tells them apart; a "{" after a closed "}" cannot belong to the same document.
    stream(fake, servers.no_ids([WEATHER, TIME, WEATHER_2], shared_index=True))
    assert summary(telemetry) == [(c.name, None, None) for c in (WEATHER, TIME, WEATHER_2)]
    assert_sizes(telemetry, [WEATHER, TIME, WEATHER_2])


def test_poolside_changing_ids_is_one_call(telemetry, instrument, fake):
    stream(fake, servers.poolside_changing_ids([WEATHER]))
    assert summary(telemetry) == [("get_weather", "call_w", None)]
    assert_sizes(telemetry, [WEATHER])
    run_strict(telemetry, ["call_w"])


def test_no_finish_reason_leaves_calls_incomplete(telemetry, instrument, fake):
    # Some servers end the body without finish_reason (and [DONE]): nothing said the calls completed.
    stream(fake, servers.glm_id_in_first_chunk_only([WEATHER], finish_reason=None), done=False)
    assert summary(telemetry) == [("get_weather", "call_w", "incomplete")]
