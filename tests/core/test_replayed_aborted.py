"""Replayed aborted calls (TELEMETRY.md section 7): an agent loop that keeps an aborted call's turn
and sends the next request is flagged; one that rolls back to the last complete turn is not."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import httpx
import openai
import pytest
from opentelemetry import trace

from otel_toolcalls._core.telemetry import REGISTRY
from otel_toolcalls._providers.bedrock.converse import history_ids as bedrock_ids
from otel_toolcalls._providers.formats.anthropic_messages import history_ids as anthropic_ids
from otel_toolcalls._providers.formats.chat_completions import history_ids as openai_chat_ids
from otel_toolcalls._providers.formats.responses import history_ids as openai_responses_ids
from otel_toolcalls._providers.openai import adapter as openai_adapter
from otel_toolcalls._sdks import stainless
from otel_toolcalls.testing import Script
from otel_toolcalls.testing.openai_chat import WEATHER, events_for, script_for, tool_call_script

USER = {"role": "user", "content": "weather in Zürich?"}


def _client(fake: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)


def _answer() -> Any:
    return script_for(events_for([], text="Sunny.", finish_reason="stop"))


def _stream_cut_mid_arguments(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=[USER], stream=True)
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        for _ in stream:
            pass


def _kept_turn(arguments: str = '{"location": "Zü') -> list[dict[str, Any]]:
    # The wrong loop: it persisted the partial call and answered it.
    call = {"id": WEATHER.id, "type": "function", "function": {"name": WEATHER.name, "arguments": arguments}}
    return [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": WEATHER.id, "content": "sunny"},
    ]


def _inference_spans(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("chat ")]


def _replayed_points(telemetry: Any) -> list[Any]:
    return telemetry.points("toolcall.replayed_aborted")


def test_kept_aborted_turn_is_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([WEATHER], cut_after=3), _answer())
    client = _client(fake)
    _stream_cut_mid_arguments(client)
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}

    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=_kept_turn(), stream=True):
        pass
    first, second = _inference_spans(telemetry)
    assert "toolcall.replayed_aborted" not in first.attributes
    assert second.attributes["toolcall.replayed_aborted"] == 1
    (event,) = second.events  # one per distinct id: the id appears twice in the history
    assert event.name == "toolcall.replayed_aborted"
    assert event.attributes["gen_ai.tool.call.id"] == WEATHER.id
    assert event.attributes["gen_ai.tool.name"] == "get_weather"
    assert event.attributes["toolcall.abort_reason"] == "stream_error"
    (point,) = _replayed_points(telemetry)
    assert point.value == 1
    assert point.attributes["gen_ai.provider.name"] == "openai"
    assert point.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert point.attributes["gen_ai.tool.name"] == "get_weather"


def test_rolled_back_loop_is_not_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([WEATHER], cut_after=3), tool_call_script([WEATHER]))
    client = _client(fake)
    _stream_cut_mid_arguments(client)
    # The right loop: back to the last complete turn, the same request again.
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[USER], stream=True):
        pass
    assert all("toolcall.replayed_aborted" not in s.attributes for s in _inference_spans(telemetry))
    assert all(not s.events for s in _inference_spans(telemetry))
    assert _replayed_points(telemetry) == []


def test_completed_history_is_not_flagged(instrument: Any, telemetry: Any, fake: Any) -> None:
    fake.enqueue(tool_call_script([WEATHER]), _answer())
    client = _client(fake)
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[USER], stream=True):
        pass
    for _ in client.chat.completions.create(
        model="gpt-4o-mini", messages=_kept_turn(WEATHER.arguments), stream=True
    ):
        pass
    assert _replayed_points(telemetry) == []
    assert all(not s.events for s in _inference_spans(telemetry))


def test_no_scan_while_nothing_aborted_is_remembered(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans: list[Any] = []
    route = openai_adapter.SDK.routes[0]
    original = route.history_ids
    assert original is not None

    def counting(body: Any) -> Any:
        scans.append(body)
        return original(body)

    monkeypatch.setattr(route, "history_ids", counting)
    fake.enqueue(tool_call_script([WEATHER]), _answer(), tool_call_script([WEATHER], cut_after=3), _answer())
    client = _client(fake)
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[USER], stream=True):
        pass
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=_kept_turn(), stream=True):
        pass
    assert scans == []
    _stream_cut_mid_arguments(client)
    assert REGISTRY.aborted_count == 1
    for _ in client.chat.completions.create(model="gpt-4o-mini", messages=_kept_turn(), stream=True):
        pass
    assert len(scans) == 1  # once per request


def test_non_streamed_request_is_counted_on_the_current_span(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(tool_call_script([WEATHER], cut_after=3))
    body = json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
            ],
        }
    ).encode()
    fake.enqueue(Script([body], content_type="application/json"))
    client = _client(fake)
    _stream_cut_mid_arguments(client)
    tracer = telemetry.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent turn"):
        client.chat.completions.create(model="gpt-4o-mini", messages=_kept_turn())
    agent = telemetry.one("agent turn")
    assert agent.attributes["toolcall.replayed_aborted"] == 1
    assert [e.name for e in agent.events] == ["toolcall.replayed_aborted"]
    assert sum(p.value for p in _replayed_points(telemetry)) == 1


def test_inference_spans_off_records_on_the_current_span(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(inference_spans=False)
    fake.enqueue(tool_call_script([WEATHER], cut_after=3), _answer())
    client = _client(fake)
    _stream_cut_mid_arguments(client)
    tracer = telemetry.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent turn"):
        for _ in client.chat.completions.create(model="gpt-4o-mini", messages=_kept_turn(), stream=True):
            pass
    agent = telemetry.one("agent turn")
    assert agent.attributes["toolcall.replayed_aborted"] == 1
    assert _inference_spans(telemetry) == []
    assert sum(p.value for p in _replayed_points(telemetry)) == 1
    assert trace.get_current_span().is_recording() is False


# -- the id readers, per provider API: ids only, repeats kept, anything else ignored ---------------


def test_openai_chat_ids_read_assistant_calls_and_tool_results() -> None:
    body = {"messages": [*_kept_turn(), {"role": "user", "content": "tool_call_id"}]}
    assert list(openai_chat_ids(body)) == [WEATHER.id, WEATHER.id]


def test_openai_chat_ids_read_sdk_message_objects() -> None:
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(_kept_turn()[1])
    assert list(openai_chat_ids({"messages": [USER, message]})) == [WEATHER.id]


def test_responses_ids() -> None:
    body = {
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "call_a", "name": "f", "arguments": "{"},
            {"type": "function_call_output", "call_id": "call_a", "output": "x"},
            {"type": "message", "id": "msg_1", "content": []},
        ]
    }
    assert list(openai_responses_ids(body)) == ["call_a", "call_a"]
    assert list(openai_responses_ids({"input": "just text"})) == []


def test_anthropic_ids() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "x"},
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]},
        ]
    }
    assert list(anthropic_ids(body)) == ["toolu_1", "toolu_1"]


def test_bedrock_ids() -> None:
    body = {
        "messages": [
            {"role": "user", "content": [{"text": "hi"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "f", "input": {}}}],
            },
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": []}}]},
        ]
    }
    assert list(bedrock_ids(body)) == ["tooluse_1", "tooluse_1"]


# -- Anthropic Messages ----------------------------------------------------------------------------


def _anthropic_turn(kept: bool) -> list[dict[str, Any]]:
    from otel_toolcalls.testing.anthropic import WEATHER as TOOL_USE

    user = {"role": "user", "content": "weather in Zürich?"}
    if not kept:
        return [user]
    use = {"type": "tool_use", "id": TOOL_USE.id, "name": TOOL_USE.name, "input": {"location": "Zü"}}
    result = {"type": "tool_result", "tool_use_id": TOOL_USE.id, "content": "sunny"}
    return [user, {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


@pytest.mark.parametrize("kept", [True, False])
def test_anthropic_loop(instrument: Any, telemetry: Any, fake: Any, kept: bool) -> None:
    import anthropic

    from otel_toolcalls.testing.anthropic import WEATHER as TOOL_USE
    from otel_toolcalls.testing.anthropic import Text, tool_use_script

    # The token limit cuts the tool block: the call is aborted (truncated).
    fake.enqueue(tool_use_script([TOOL_USE], stop_reason="max_tokens"))
    fake.enqueue(tool_use_script([Text("Sunny.")], stop_reason="end_turn"))
    client = anthropic.Anthropic(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    for messages in (_anthropic_turn(False), _anthropic_turn(kept)):
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=64, messages=messages) as stream:
            for _ in stream:
                pass
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}
    second = [s for s in telemetry.spans() if s.name.startswith("chat ")][-1]
    points = _replayed_points(telemetry)
    if kept:
        assert second.attributes["toolcall.replayed_aborted"] == 1
        (event,) = second.events
        assert event.attributes["gen_ai.tool.call.id"] == TOOL_USE.id
        assert event.attributes["toolcall.abort_reason"] == "truncated"
        assert [(p.value, p.attributes["gen_ai.provider.name"]) for p in points] == [(1, "anthropic")]
    else:
        assert "toolcall.replayed_aborted" not in second.attributes
        assert points == []


# -- AWS Bedrock ConverseStream ----------------------------------------------------------------------


def _bedrock_turn(kept: bool) -> list[dict[str, Any]]:
    from otel_toolcalls.testing.bedrock import WEATHER as TOOL_USE

    user = {"role": "user", "content": [{"text": "weather in Zürich?"}]}
    if not kept:
        return [user]
    use = {"toolUse": {"toolUseId": TOOL_USE.id, "name": TOOL_USE.name, "input": {"location": "Zü"}}}
    result = {"toolResult": {"toolUseId": TOOL_USE.id, "content": [{"text": "sunny"}]}}
    return [user, {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


@pytest.mark.parametrize("kept", [True, False])
def test_bedrock_loop(instrument: Any, telemetry: Any, fake: Any, kept: bool) -> None:
    from otel_toolcalls.testing.bedrock import MODEL, Text, client, tool_use_script
    from otel_toolcalls.testing.bedrock import WEATHER as TOOL_USE

    fake.enqueue(tool_use_script([TOOL_USE], stop_reason="max_tokens"))
    fake.enqueue(tool_use_script([Text("Sunny.")], stop_reason="end_turn"))
    bedrock = client(fake.base_url)
    for messages in (_bedrock_turn(False), _bedrock_turn(kept)):
        for _ in bedrock.converse_stream(modelId=MODEL, messages=messages)["stream"]:
            pass
    assert telemetry.calls_by_outcome() == {("aborted", "truncated"): 1}
    second = [s for s in telemetry.spans() if s.name.startswith("chat ")][-1]
    points = _replayed_points(telemetry)
    if kept:
        assert second.attributes["toolcall.replayed_aborted"] == 1
        (event,) = second.events
        assert event.attributes["gen_ai.tool.call.id"] == TOOL_USE.id
        assert [(p.value, p.attributes["gen_ai.provider.name"]) for p in points] == [(1, "aws.bedrock")]
    else:
        assert "toolcall.replayed_aborted" not in second.attributes
        assert points == []


def test_non_streamed_requests_look_up_no_span_unless_a_replayed_call_is_found(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The current span is read for a non-streamed request only to record a replayed aborted call
    on it: with nothing aborted remembered, or a history without one, it is never looked up."""
    lookups: list[Any] = []

    def counting(*args: Any) -> Any:
        lookups.append(args)
        return trace.get_current_span(*args)

    monkeypatch.setattr(stainless, "trace", SimpleNamespace(get_current_span=counting))
    whole = json.dumps(
        {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                      "finish_reason": "stop"}]}
    ).encode()  # fmt: skip
    answer = Script([whole], content_type="application/json")
    fake.enqueue(answer, tool_call_script([WEATHER], cut_after=3), answer, answer)
    client = _client(fake)
    client.chat.completions.create(model="gpt-4o-mini", messages=_kept_turn())
    assert lookups == []  # nothing aborted remembered: no scan, no lookup
    _stream_cut_mid_arguments(client)
    client.chat.completions.create(model="gpt-4o-mini", messages=[USER])
    assert lookups == []  # scanned, nothing found
    client.chat.completions.create(model="gpt-4o-mini", messages=_kept_turn())
    assert len(lookups) == 1
    assert sum(p.value for p in _replayed_points(telemetry)) == 1
