"""LiteLLM completion(stream=True) / acompletion against the fake provider writing OpenAI chat SSE.

``openai/...`` goes through the openai SDK (its adapter traces the stream); ``hosted_vllm/...``
goes through LiteLLM's own HTTP handler (this adapter traces it).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import gc
from typing import Any

import litellm
import pytest

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER, ToolCall, tool_call_script

MESSAGES = [{"role": "user", "content": "Weather in Zürich, and the time?"}]
CLOCK = ToolCall(name="get_time", id="call_time_2", arguments='{"tz": "Europe/Zurich", "offset": -120}')
VLLM = "hosted_vllm/qwen3-8b"


def options(fake: FakeProvider, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "api_base": f"{fake.base_url}/v1",
        "api_key": "x",
        "messages": MESSAGES,
        "stream": True,
    }


def completion(fake: FakeProvider, model: str = VLLM) -> Any:
    return litellm.completion(**options(fake, model))


def by_index(telemetry: Any) -> list[Any]:
    return sorted(telemetry.tool_spans(), key=lambda s: s.attributes["toolcall.index"])


def assert_completed(span: Any, call: ToolCall, provider: str, inference: Any) -> None:
    a = span.attributes
    assert a["gen_ai.provider.name"] == provider
    assert a["toolcall.call.id"] == call.id
    assert a["toolcall.outcome"] == "completed"
    assert a["toolcall.arguments.deltas"] == len(call.pieces())
    assert a["toolcall.arguments.size"] == len(call.arguments.encode("utf-8"))
    assert span.parent.span_id == inference.context.span_id


@pytest.mark.parametrize(("model", "provider"), [("openai/gpt-4o", "openai"), (VLLM, "hosted_vllm")])
def test_one_set_of_spans_per_request(
    instrument: Any, telemetry: Any, fake: FakeProvider, model: str, provider: str
) -> None:
    fake.enqueue(tool_call_script([WEATHER, CLOCK]))
    list(completion(fake, model))
    inference = telemetry.one("chat ")  # exactly one inference span
    spans = by_index(telemetry)
    assert len(spans) == 2
    assert_completed(spans[0], WEATHER, provider, inference)
    assert_completed(spans[1], CLOCK, provider, inference)
    assert inference.attributes["gen_ai.provider.name"] == provider
    assert inference.attributes["server.address"] == "127.0.0.1"
    assert telemetry.calls_by_outcome() == {("completed", None): 2}


async def test_one_set_of_spans_per_async_request_through_the_openai_sdk(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    fake.enqueue(tool_call_script([WEATHER]))
    stream = await litellm.acompletion(**options(fake, "openai/gpt-4o"))
    [chunk async for chunk in stream]
    (span,) = telemetry.tool_spans()
    assert span.attributes["gen_ai.provider.name"] == "openai"
    telemetry.one("chat ")


def test_dropped_stream_is_abandoned_at_the_latest_at_exit(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    from otel_toolcalls._core.stream import _end_live_streams

    fake.enqueue(tool_call_script([WEATHER]))
    stream = completion(fake)
    for _ in range(3):
        next(stream)
    del stream
    gc.collect()
    # LiteLLM's own logging keeps a reference to the wrapper, so collection may not come; the
    # interpreter-exit hook then ends the call as abandoned.
    _end_live_streams()
    (span,) = telemetry.tool_spans()
    assert span.attributes["toolcall.abort_reason"] == "abandoned"


def test_what_litellm_yields_is_unchanged(instrument: Any, telemetry: Any, fake: FakeProvider) -> None:
    def run() -> list[Any]:
        fake.enqueue(tool_call_script([WEATHER, CLOCK]))
        stream = completion(fake)
        # created timestamps are LiteLLM's own clock reads
        return [type(stream), *({**c.model_dump(), "created": 0} for c in stream)]

    traced = run()
    instrument().uninstrument()
    bare = run()
    assert traced == bare
    assert len(telemetry.tool_spans()) == 2


def test_the_wrapper_keeps_only_what_litellm_put_in_it(
    instrument: Any, telemetry: Any, fake: FakeProvider
) -> None:
    # The per-stream state is kept beside LiteLLM's wrapper (keyed weakly on it), never in its
    # __dict__: code that copies, pickles or compares a wrapper's attributes sees LiteLLM's alone.
    from otel_toolcalls import ToolCallsInstrumentor

    fake.enqueue(tool_call_script([WEATHER]), tool_call_script([WEATHER]))
    traced = completion(fake)
    list(traced)
    assert len(telemetry.tool_spans()) == 1  # this one was traced by this adapter
    ToolCallsInstrumentor().uninstrument()
    bare = completion(fake)
    list(bare)
    assert sorted(vars(traced)) == sorted(vars(bare))
