"""AnthropicBedrock: the anthropic SDK's Bedrock client, reading AWS event-stream frames (its own
decoder) through the same Stream classes, against the fake provider writing those frames."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from sdk_compat import bare_error, dropped_connection, traces_itself
from test_anthropic import assert_call

from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as wire
from otel_toolcalls.testing.anthropic import MODEL, WEATHER, Text


def bedrock(fake: FakeProvider) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE",
        aws_secret_key="secret",
        aws_region="us-east-1",
        base_url=fake.base_url,
        max_retries=0,
        **({"open_telemetry": False} if traces_itself(anthropic.AnthropicBedrock) else {}),
    )


def read(fake: FakeProvider, script: Any) -> list[Any]:
    fake.enqueue(script)
    events: list[Any] = []
    stream = bedrock(fake).messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "weather?"}], stream=True
    )
    for event in stream:
        events.append(event)
    return events


def chat_span(telemetry: Any) -> Any:
    return telemetry.one("chat ")


def test_completed_call_over_event_stream(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    events = read(fake, wire.bedrock_script_for(wire.events_for([Text("Let me check."), WEATHER])))
    assert fake.requests[-1].path.endswith("/invoke-with-response-stream")
    assert any(e.type == "content_block_delta" for e in events)
    (span,) = telemetry.tool_spans()
    assert_call(span, reason=None, delivered=WEATHER.arguments, provider="aws.bedrock")
    assert (span.attributes or {})[n.TOOLCALL_ARGUMENTS_DELTAS] == len(WEATHER.pieces())
    assert span.parent is not None and span.parent.span_id == chat_span(telemetry).context.span_id
    assert (chat_span(telemetry).attributes or {})[n.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
    assert telemetry.calls_by_outcome() == {("completed", None): 1}


def test_cut_mid_arguments_is_a_stream_error(telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    events = wire.events_for([WEATHER])
    cut_after = 5  # message_start, ping, block start, two fragments
    delivered = "".join(WEATHER.pieces()[:2])
    script = wire.bedrock_script_for(events, cut_after=cut_after)
    bare = bare_error(lambda: read(fake, script))
    # The application sees the SDK's own exception unchanged, whichever this release raises.
    with pytest.raises(bare):
        read(fake, script)
    (span,) = telemetry.tool_spans()
    assert_call(
        span,
        reason="stream_error",
        delivered=delivered,
        error_type=dropped_connection(anthropic, bare),
        provider="aws.bedrock",
    )
    assert (span.attributes or {})[n.TOOLCALL_ARGUMENTS_DELTAS] == 2
