"""execute_tool: the execution span, the link only to completed calls, strict refusal, metrics."""


from __future__ import annotations

from typing import Any

import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
from otel_toolcalls._config import Settings
from otel_toolcalls._core import names as n
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.telemetry import REGISTRY, active
from otel_toolcalls._linking.runner import Execution
from otel_toolcalls.testing.openai_chat import WEATHER, ToolCall, request, tool_call_script


def stream_call(call_id: str, *, reason: str | None, name: str = "get_weather") -> None:
    """One streamed call through the core, ended with ``reason`` (None: completed)."""
    telemetry = active()
    assert telemetry is not None
    state = StreamState(telemetry, RequestInfo(provider="openai", model="m"))
    state.block_started(0, name=name, call_id=call_id)
    state.fragment(0, "{}")
    if reason is None:
        state.settle("tool_calls", completes_open=True)
        state.final_event()
        state.ended()
    else:
        state.finalize(reason)


def tool_span(telemetry: Any, call_id: str) -> Any:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes.get(n.TOOLCALL_CALL_ID) == call_id]
    return span


def executed(telemetry: Any) -> Any:
    return telemetry.one("execute_tool ")


def test_completed_call_gets_a_link(telemetry, instrument, fake):
    fake.enqueue(tool_call_script([WEATHER]))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    for _ in client.chat.completions.create(**request()):
        pass
    assert tool_call_outcome(WEATHER.id) == "completed"
    tracer = telemetry.tracer_provider.get_tracer("agent")
    with tracer.start_as_current_span("agent turn") as turn, execute_tool(WEATHER.id) as span:
        assert span.is_recording()
    run = executed(telemetry)
    assert run.name == "execute_tool get_weather" and run.kind is SpanKind.INTERNAL
    assert run.parent.span_id == turn.get_span_context().span_id
    a = run.attributes
    assert a[n.GEN_AI_OPERATION_NAME] == "execute_tool" and a[n.GEN_AI_TOOL_CALL_ID] == WEATHER.id
    assert a[n.GEN_AI_TOOL_TYPE] == "function" and a[n.TOOLCALL_OUTCOME] == "completed"
    (link,) = run.links
    assert link.context.span_id == tool_span(telemetry, WEATHER.id).context.span_id
    assert dict(link.attributes) == {n.GEN_AI_ATTRIBUTION_LINK_TYPE: "CAUSED_BY_GENERATION"}
    assert run.status.status_code is StatusCode.UNSET


def test_aborted_call_no_link_not_refused_by_default(telemetry, instrument):
    stream_call("c-ab", reason=n.CLOSED)
    assert tool_call_outcome("c-ab") == "aborted"
    ran = []
    with execute_tool("c-ab", name="get_weather"):
        ran.append(True)
    run = executed(telemetry)
    assert ran and not run.links
    assert run.attributes[n.TOOLCALL_OUTCOME] == "aborted"
    assert run.attributes[n.TOOLCALL_ABORT_REASON] == "closed"


def _assert_refused(telemetry: Any) -> None:
    run = executed(telemetry)
    assert run.attributes[n.ERROR_TYPE] == "otel_toolcalls.IncompleteToolCallError"
    assert run.status.status_code is StatusCode.ERROR and not run.links
    (point,) = telemetry.points("gen_ai.execute_tool.duration")
    assert point.attributes[n.ERROR_TYPE] == "otel_toolcalls.IncompleteToolCallError"


def test_strict_keyword_refuses_before_body(telemetry, instrument):
    stream_call("c-strict", reason=n.STREAM_ERROR)
    ran = []
    with pytest.raises(IncompleteToolCallError) as raised, execute_tool("c-strict", strict=True):
        ran.append(True)
    assert not ran
    assert raised.value.call_id == "c-strict" and raised.value.reason == "stream_error"
    _assert_refused(telemetry)


def test_strict_env_refuses(telemetry, instrument, monkeypatch):
    monkeypatch.setenv("OTEL_TOOLCALLS_STRICT", "true")
    instrument()
    stream_call("c-env", reason=n.TRUNCATED)
    ran = []

    @execute_tool(name="get_weather")
    def get_weather(city: str, *, tool_call_id: str) -> str:
        ran.append(city)
        return "sunny"

    with pytest.raises(IncompleteToolCallError):
        get_weather("Oslo", tool_call_id="c-env")
    assert not ran
    _assert_refused(telemetry)
    # strict=False overrides the environment for one call.
    with execute_tool("c-env", strict=False):
        ran.append("ran")
    assert ran == ["ran"]


def test_unknown_is_not_refused(telemetry, instrument):
    instrument(strict=True)
    with execute_tool("never-seen", name="lookup"):
        pass
    run = executed(telemetry)
    assert run.attributes[n.TOOLCALL_OUTCOME] == "unknown" and not run.links
    assert tool_call_outcome("never-seen") is None
    (point,) = telemetry.points("gen_ai.execute_tool.duration")
    assert dict(point.attributes) == {n.GEN_AI_TOOL_NAME: "lookup", n.TOOLCALL_OUTCOME: "unknown"}


def test_failing_body_sets_error_type(telemetry, instrument):
    stream_call("c-fail", reason=None)
    with pytest.raises(KeyError), execute_tool("c-fail"):
        raise KeyError("city")
    run = executed(telemetry)
    assert run.attributes[n.ERROR_TYPE] == "KeyError"
    assert run.status.status_code is StatusCode.ERROR
    assert len(run.links) == 1  # the call completed; the execution failing does not change that
    (point,) = telemetry.points("gen_ai.execute_tool.duration")
    assert (
        point.attributes[n.ERROR_TYPE] == "KeyError" and point.attributes[n.TOOLCALL_OUTCOME] == "completed"
    )


async def test_async_context_manager_and_decorator(telemetry, instrument):
    stream_call("c-async", reason=None, name="fetch")

    @execute_tool(call_id_arg="call")
    async def fetch(url: str, call: str) -> str:
        return url.upper()

    assert await fetch("x", call="c-async") == "X"
    async with execute_tool("c-async") as span:
        assert span.is_recording()
    runs = [s for s in telemetry.spans() if s.name == "execute_tool fetch"]
    assert len(runs) == 2
    assert all(len(r.links) == 1 and r.attributes[n.TOOLCALL_OUTCOME] == "completed" for r in runs)


async def test_async_strict_refusal(telemetry, instrument):
    stream_call("c-async-ab", reason=n.CANCELLED)

    @execute_tool(strict=True)
    async def act(*, tool_call_id: str) -> None:
        raise AssertionError("must not run")

    with pytest.raises(IncompleteToolCallError):
        await act(tool_call_id="c-async-ab")
    _assert_refused(telemetry)


def test_registry_bounded_and_keeps_aborted(telemetry, instrument):
    instrument(registry_size=3)
    stream_call("r1", reason=None)
    stream_call("r2", reason=n.CLOSED)
    stream_call("r3", reason=None)
    stream_call("r4", reason=n.ABANDONED)
    assert tool_call_outcome("r1") is None  # evicted: oldest first
    assert [tool_call_outcome(i) for i in ("r2", "r3", "r4")] == ["aborted", "completed", "aborted"]
    assert len(REGISTRY) == 3
    with execute_tool("r1", name="get_weather"):
        pass
    assert executed(telemetry).attributes[n.TOOLCALL_OUTCOME] == "unknown"


def test_tool_name_cap_in_metrics_not_spans(telemetry, instrument):
    instrument(metrics_max_tool_names=2)
    for name in ("a", "b", "c", "d"):
        with execute_tool(None, name=name):
            pass
    names = {p.attributes[n.GEN_AI_TOOL_NAME] for p in telemetry.points("gen_ai.execute_tool.duration")}
    assert names == {"a", "b", n.OTHER}
    assert {s.attributes[n.GEN_AI_TOOL_NAME] for s in telemetry.spans()} == {"a", "b", "c", "d"}


def test_tool_call_metrics_name_cap(telemetry, instrument):
    instrument(metrics_max_tool_names=1)
    stream_call("m1", reason=None, name="first")
    stream_call("m2", reason=None, name="second")
    names = {p.attributes[n.GEN_AI_TOOL_NAME] for p in telemetry.points("toolcall.calls")}
    assert names == {"first", n.OTHER}
    assert tool_span(telemetry, "m2").name == "tool_call second"


def test_capture_content_off_by_default(telemetry, instrument, fake):
    call = ToolCall(name="get_weather", id="call_cc", arguments='{"q": "' + "y" * 5000 + '"}')
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    fake.enqueue(tool_call_script([call]))
    list(client.chat.completions.create(**request()))
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in tool_span(telemetry, "call_cc").attributes


@pytest.mark.parametrize("via", ["keyword", "env"])
def test_capture_content_on(telemetry, instrument, fake, monkeypatch, via):
    if via == "env":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
        instrument()
    else:
        instrument(capture_content=True)
    arguments = '{"q": "' + "y" * 5000 + '"}'
    call = ToolCall(
        name="get_weather", id="call_cc", arguments=arguments, fragments=[arguments[:9], arguments[9:]]
    )
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    fake.enqueue(tool_call_script([call]))
    list(client.chat.completions.create(**request()))
    span = tool_span(telemetry, "call_cc")
    assert span.attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] == arguments[:4096]
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(arguments)


def test_settings_default_capture_off():
    assert Settings().capture_content is False


def test_a_long_tool_name_is_cut_on_the_execution_span(telemetry, instrument):
    long_name = "tool_" + "x" * 400
    with execute_tool("call_long", name=long_name):
        pass
    run = executed(telemetry)
    assert run.name == "execute_tool " + long_name[:256]
    assert run.attributes[n.GEN_AI_TOOL_NAME] == long_name[:256]


@pytest.mark.parametrize("framework_id", [None, "call_" + "x" * 300])
def test_a_framework_span_gets_the_call_id_only_where_it_has_none(telemetry, instrument, framework_id):
    # A framework's own execution span (mcp 2.x's tools/call span names no call): adopted, it says
    # which call it ran; an id the framework wrote itself (here whole, longer than the package cuts
    # to) is left as it is.
    call_id = framework_id or "call_adopted"
    stream_call(call_id, reason=None)
    tracer = telemetry.tracer_provider.get_tracer("framework")
    attributes = {n.GEN_AI_OPERATION_NAME: "execute_tool"}
    if framework_id is not None:
        attributes[n.GEN_AI_TOOL_CALL_ID] = framework_id
    adopting = Execution(call_id, "get_weather", active())
    with tracer.start_as_current_span("tools/call get_weather", attributes=attributes), adopting:
        pass
    (run,) = [s for s in telemetry.spans() if s.name == "tools/call get_weather"]
    assert run.attributes[n.GEN_AI_TOOL_CALL_ID] == call_id
    assert run.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert len(run.links) == 1
    assert [s.name for s in telemetry.spans() if s.name.startswith("execute_tool")] == []  # adopted
