"""The real groq SDK against the FakeProvider: the OpenAI chat adapter, ``gen_ai.provider.name = groq``."""

from __future__ import annotations

from typing import Any

import groq
import pytest
from opentelemetry.trace import StatusCode
from test_openai_chat import assert_call, assert_parented, inference

from otel_toolcalls._core import names as n
from otel_toolcalls.testing import Script, sse
from otel_toolcalls.testing.openai_chat import (
    PARALLEL,
    WEATHER,
    arguments_by_index,
    chunk,
    events_for,
    legacy_error,
    request,
    tool_call_script,
)


@pytest.fixture
def client(fake: Any) -> groq.Groq:
    return groq.Groq(base_url=fake.base_url, api_key="test-key", max_retries=0)


@pytest.fixture
def async_client(fake: Any) -> groq.AsyncGroq:
    return groq.AsyncGroq(base_url=fake.base_url, api_key="test-key", max_retries=0)


def test_completed(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script(PARALLEL))
    chunks = list(client.chat.completions.create(**request()))
    assert fake.requests[-1].path == "/openai/v1/chat/completions"
    joined = arguments_by_index(chunks)
    for i, call in enumerate(PARALLEL):
        span = telemetry.one(f"tool_call {call.name}")
        assert_call(telemetry, span, reason=None, delivered=joined[(0, i)], provider="groq")
        assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == len(call.pieces())
    chat = inference(telemetry)
    assert chat.attributes[n.GEN_AI_PROVIDER_NAME] == "groq"
    assert chat.attributes[n.SERVER_PORT] == fake.port
    assert_parented(telemetry)
    assert {p.attributes[n.GEN_AI_PROVIDER_NAME] for p in telemetry.points("toolcall.calls")} == {"groq"}
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


def test_server_cut(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], cut_after=5))
    got: list[Any] = []
    with pytest.raises(Exception) as raised:  # groq does not wrap transport errors in its own type
        for c in client.chat.completions.create(**request()):
            got.append(c)
    span = telemetry.one("tool_call ")
    error_type = span.attributes[n.ERROR_TYPE]
    assert error_type.endswith(type(raised.value).__qualname__)
    delivered = arguments_by_index(got)[(0, 0)]
    assert_call(
        telemetry, span, reason="stream_error", delivered=delivered, error_type=error_type, provider="groq"
    )
    assert inference(telemetry).status.status_code is StatusCode.ERROR
    assert telemetry.calls_by_outcome() == {("aborted", "stream_error"): 1}


def test_legacy_error_payload(telemetry, instrument, fake, client):
    writes = [sse(chunk(e)) for e in events_for([WEATHER], finish_reason=None)[:3]]
    fake.enqueue(Script([*writes, legacy_error("model overloaded")]))
    with pytest.raises(groq.APIError, match="model overloaded"):
        list(client.chat.completions.create(**request()))
    span = telemetry.one("tool_call ")
    assert span.attributes[n.ERROR_TYPE] == "groq.APIError"
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == "stream_error"


def test_with_exit_is_closed(telemetry, instrument, fake, client):
    # close() and a dropped stream: test_outcomes_matrix.py::test_closed[groq], test_abandoned[groq].
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    with client.chat.completions.create(**request()) as stream:
        for _ in range(3):
            next(stream)
    assert telemetry.calls_by_outcome() == {("aborted", "closed"): 1}


def test_with_streaming_response(telemetry, instrument, fake, client):
    fake.enqueue(tool_call_script([WEATHER], pace=0.002))
    with client.chat.completions.with_streaming_response.create(**request()) as response:
        stream = response.parse()
        next(stream), next(stream)
    assert telemetry.one("tool_call ").attributes[n.TOOLCALL_ABORT_REASON] == "closed"
