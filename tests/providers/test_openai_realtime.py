"""The real openai SDK's Realtime client (``client.realtime`` and ``client.beta.realtime``, sync and
async) against the fake provider's WebSocket endpoint: every way a response and a connection end."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import inspect
from dataclasses import replace
from typing import Any

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind
from outcomes import assert_outcome

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls._providers.openai import realtime as openai_realtime
from otel_toolcalls.testing.openai_realtime import (
    MODEL,
    USAGE,
    WEATHER,
    ToolCall,
    error_event,
    frames,
    response_events,
    turn,
)

SURFACES = [
    surface
    for surface, module in (("ga", openai_realtime.MODULES[0]), ("beta", openai_realtime.MODULES[1]))
    if importlib.util.find_spec(module.rpartition(".")[0]) is not None
]
if not SURFACES or importlib.util.find_spec("websockets") is None:
    pytest.skip(f"openai {openai.__version__} has no Realtime API", allow_module_level=True)

LOOKUP = ToolCall("lookup", '{"q": "straße", "n": 12345}', call_id="call_lookup_2")
MODES = ["sync", "async"]


@pytest.fixture(params=SURFACES)
def surface(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _resource(client: Any, surface: str) -> Any:
    return client.realtime if surface == "ga" else client.beta.realtime


def _client(fake: Any, mode: str) -> Any:
    cls = openai.OpenAI if mode == "sync" else openai.AsyncOpenAI
    return cls(api_key="sk-test", base_url=fake.base_url + "/v1", websocket_base_url=fake.websocket.base_url)


# The consumer's side, as a list of actions: ("create",), ("cancel",), ("close",), and
# ("until", event_type, count): read events until `count` of that type arrived, or the connection ended.


def _read(events: list[Any], event: Any, kind: str, count: int) -> bool:
    events.append(event)
    return sum(1 for e in events if e.type == kind) >= count


def run_sync(client: Any, surface: str, actions: list[tuple[Any, ...]]) -> tuple[list[Any], Any]:
    events: list[Any] = []
    with _resource(client, surface).connect(model=MODEL) as connection:
        stream = iter(connection)
        for action, *args in actions:
            if action == "until":
                try:
                    while not _read(events, next(stream), *args):
                        pass
                except StopIteration:
                    return events, None
                except Exception as exc:
                    return events, exc
            else:
                getattr(connection.response, action)() if action != "close" else connection.close()
    return events, None


async def run_async(client: Any, surface: str, actions: list[tuple[Any, ...]]) -> tuple[list[Any], Any]:
    events: list[Any] = []
    async with _resource(client, surface).connect(model=MODEL) as connection:
        stream = connection.__aiter__()
        for action, *args in actions:
            if action == "until":
                try:
                    while not _read(events, await stream.__anext__(), *args):
                        pass
                except StopAsyncIteration:
                    return events, None
                except Exception as exc:
                    return events, exc
            elif action == "close":
                await connection.close()
            else:
                await getattr(connection.response, action)()
    return events, None


def run(fake: Any, mode: str, surface: str, actions: list[tuple[Any, ...]]) -> tuple[list[Any], Any]:
    client = _client(fake, mode)
    if mode == "sync":
        return run_sync(client, surface, actions)
    return asyncio.run(run_async(client, surface, actions))


ONE_RESPONSE = [("create",), ("until", "response.done", 1)]


def tool_span(telemetry: Any, call: ToolCall) -> ReadableSpan:
    found = [
        s for s in telemetry.tool_spans() if (s.attributes or {}).get(n.TOOLCALL_CALL_ID) == call.call_id
    ]
    assert len(found) == 1, [s.name for s in telemetry.spans()]
    return found[0]


def inference_spans(telemetry: Any) -> list[ReadableSpan]:
    return sorted(
        (s for s in telemetry.spans() if s.kind is SpanKind.CLIENT), key=lambda s: s.start_time or 0
    )


def assert_call(span: ReadableSpan, call: ToolCall, *, reason: str | None, delivered: int | None = None,
                error_type: str | None = None) -> None:  # fmt: skip
    attrs = span.attributes or {}
    pieces = call.pieces()[:delivered]
    assert span.name == f"tool_call {call.name}"
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs[n.TOOLCALL_REQUEST_MODEL] == MODEL
    assert attrs[n.TOOLCALL_TOOL_TYPE] == "function"
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(pieces)
    assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(pieces).encode("utf-8"))
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs  # content capture is off
    assert_outcome(span, reason, error_type)


def assert_response(span: ReadableSpan, *, reason: str | None, count: int, response_id: str = "resp_fake_1",
                    finish: str | None = "completed", error_type: str | None = None) -> None:  # fmt: skip
    attrs = span.attributes or {}
    assert span.name == f"chat {MODEL}"
    assert attrs[n.GEN_AI_OPERATION_NAME] == "chat"
    assert attrs[n.GEN_AI_RESPONSE_ID] == response_id
    assert attrs[n.GEN_AI_RESPONSE_MODEL] == MODEL
    assert attrs[n.SERVER_ADDRESS] == "127.0.0.1"
    assert attrs[n.TOOLCALL_COUNT] == count
    if reason is None:
        assert attrs[n.TOOLCALL_OUTCOME] == "completed"
    else:
        assert (attrs[n.TOOLCALL_OUTCOME], attrs[n.TOOLCALL_ABORT_REASON]) == ("aborted", reason)
    # The inference span has an error.type only when it failed.
    assert attrs.get(n.ERROR_TYPE) == error_type
    assert attrs[n.GEN_AI_RESPONSE_FINISH_REASONS] == (finish or "error",)


def delta_count(events: list[Any]) -> int:
    return sum(1 for e in events if e.type == "response.function_call_arguments.delta")


# -- completed -------------------------------------------------------------------------------------------


def test_a_completed_call_with_usage(
    fake: Any, instrument: Any, telemetry: Any, mode: str, surface: str
) -> None:
    fake.websocket.enqueue(frames(turn(response_events([WEATHER], usage=USAGE))))
    events, raised = run(fake, mode, surface, ONE_RESPONSE)
    assert raised is None and events[-1].type == "response.done"
    (response,) = inference_spans(telemetry)
    assert_response(response, reason=None, count=1)
    attrs = response.attributes or {}
    assert (attrs[n.GEN_AI_USAGE_INPUT_TOKENS], attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS]) == (120, 40)
    assert attrs[n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 64
    assert attrs[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] >= 0
    span = tool_span(telemetry, WEATHER)
    assert_call(span, WEATHER, reason=None)
    assert span.parent is not None and span.parent.span_id == response.context.span_id
    assert tool_call_outcome(WEATHER.call_id) == "completed"
    assert fake.websocket.paths == [f"/v1/realtime?model={MODEL}"]


def test_parallel_calls_after_text_complete_each(
    fake: Any, instrument: Any, telemetry: Any, mode: str
) -> None:
    fake.websocket.enqueue(frames(turn(response_events([WEATHER, LOOKUP], text="Checking."))))
    run(fake, mode, SURFACES[0], ONE_RESPONSE)
    (response,) = inference_spans(telemetry)
    assert_response(response, reason=None, count=2)
    for index, call in ((1, WEATHER), (2, LOOKUP)):
        span = tool_span(telemetry, call)
        assert_call(span, call, reason=None)
        assert (span.attributes or {})[n.TOOLCALL_INDEX] == index


def test_fragmented_frames_and_pacing(fake: Any, instrument: Any, telemetry: Any, mode: str) -> None:
    # Each message in three WebSocket fragments, cut mid-JSON; the SDK reassembles them.
    fake.websocket.enqueue(frames(turn(response_events([WEATHER])), pace=0.002, fragment_at=(0.2, 0.6)))
    run(fake, mode, SURFACES[0], ONE_RESPONSE)
    assert_call(tool_span(telemetry, WEATHER), WEATHER, reason=None)


def test_many_responses_on_one_connection(fake: Any, instrument: Any, telemetry: Any, mode: str) -> None:
    second = replace(LOOKUP, call_id="call_second", status="incomplete")
    fake.websocket.enqueue(frames(
        turn(response_events([WEATHER], response_id="resp_a")),
        turn(response_events([], text="It is sunny.", response_id="resp_b")),
        turn(response_events([second], response_id="resp_c", end="incomplete", reason="max_output_tokens")),
    ))  # fmt: skip
    actions = [("create",), ("until", "response.done", 1), ("create",), ("until", "response.done", 2),
               ("create",), ("until", "response.done", 3)]  # fmt: skip
    run(fake, mode, SURFACES[0], actions)
    first, text, third = inference_spans(telemetry)
    assert_response(first, reason=None, count=1, response_id="resp_a")
    assert_response(text, reason=None, count=0, response_id="resp_b")
    assert_response(third, reason=n.TRUNCATED, count=1, response_id="resp_c", finish="max_output_tokens")
    # One inference span per response, each call under its own.
    assert tool_span(telemetry, WEATHER).parent.span_id == first.context.span_id  # type: ignore[union-attr]
    assert tool_span(telemetry, second).parent.span_id == third.context.span_id  # type: ignore[union-attr]
    assert_call(tool_span(telemetry, second), second, reason=n.TRUNCATED)


# -- how a response ends -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("end", "reason", "abort", "finish", "error_type"),
    [
        ("incomplete", "max_output_tokens", n.TRUNCATED, "max_output_tokens", None),
        ("incomplete", "content_filter", n.FILTERED, "content_filter", None),
        ("failed", None, n.STREAM_ERROR, "error", "server_error"),
    ],
)
def test_a_response_that_ends_before_the_call(fake: Any, instrument: Any, telemetry: Any, mode: str,
                                              end: str, reason: Any, abort: str, finish: str,
                                              error_type: Any) -> None:  # fmt: skip
    cut = replace(WEATHER, status="incomplete" if end == "incomplete" else None)
    fake.websocket.enqueue(frames(turn(response_events([cut], end=end, reason=reason))))
    run(fake, mode, SURFACES[0], ONE_RESPONSE)
    (response,) = inference_spans(telemetry)
    # A failed response has no finish reason: "error" in its place, as for OpenAI Responses.
    assert_response(response, reason=abort, count=1, finish=finish, error_type=error_type)
    assert_call(tool_span(telemetry, cut), cut, reason=abort, error_type=error_type)
    assert tool_call_outcome(cut.call_id) == "aborted"


def test_response_cancel_mid_arguments(
    fake: Any, instrument: Any, telemetry: Any, mode: str, surface: str
) -> None:
    cut = replace(WEATHER, status="incomplete")
    events = response_events([cut], end="cancelled", reason="client_cancelled")
    fake.websocket.enqueue(frames(turn(events, cancel_after=4)))  # created, added, two deltas
    actions = [("create",), ("until", "response.function_call_arguments.delta", 2), ("cancel",),
               ("until", "response.done", 1)]  # fmt: skip
    _, raised = run(fake, mode, surface, actions)
    assert raised is None and "response.cancel" in fake.websocket.received_types()
    (response,) = inference_spans(telemetry)
    assert_response(response, reason=n.CANCELLED, count=1, finish="cancelled")
    assert_call(tool_span(telemetry, cut), cut, reason=n.CANCELLED, delivered=2)


def test_a_dropped_socket_mid_arguments(
    fake: Any, instrument: Any, telemetry: Any, mode: str, surface: str
) -> None:
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]), cut_after=5)))  # three deltas
    events, raised = run(fake, mode, surface, ONE_RESPONSE)
    assert raised is not None and delta_count(events) == 3
    error_type = f"{type(raised).__module__}.{type(raised).__qualname__}"
    (response,) = inference_spans(telemetry)
    assert_response(response, reason=n.STREAM_ERROR, count=1, finish=None, error_type=error_type)
    assert_call(
        tool_span(telemetry, WEATHER), WEATHER, reason=n.STREAM_ERROR, delivered=3, error_type=error_type
    )


def test_a_clean_server_close_mid_arguments_is_incomplete(fake: Any, instrument: Any, telemetry: Any,
                                                          mode: str) -> None:  # fmt: skip
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]), close_after=4)))
    events, _ = run(fake, mode, SURFACES[0], ONE_RESPONSE)
    assert delta_count(events) == 2
    (response,) = inference_spans(telemetry)
    assert_response(response, reason=n.INCOMPLETE, count=1, finish=None)
    assert_call(tool_span(telemetry, WEATHER), WEATHER, reason=n.INCOMPLETE, delivered=2)


@pytest.mark.parametrize("how", ["close", "exit"])
def test_closed_by_the_user_mid_arguments(fake: Any, instrument: Any, telemetry: Any, mode: str, surface: str,
                                          how: str) -> None:  # fmt: skip
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]), cancel_after=5)))  # holds after 3 deltas
    actions = [("create",), ("until", "response.function_call_arguments.delta", 3)]
    run(fake, mode, surface, actions + ([("close",)] if how == "close" else []))
    (response,) = inference_spans(telemetry)
    assert_response(response, reason=n.CLOSED, count=1, finish=None)
    assert_call(tool_span(telemetry, WEATHER), WEATHER, reason=n.CLOSED, delivered=3)


def test_an_error_event_does_not_end_the_response(
    fake: Any, instrument: Any, telemetry: Any, mode: str
) -> None:
    # Realtime error events answer a client event; the session and the response go on.
    events = response_events([WEATHER])
    fake.websocket.enqueue(frames(turn([*events[:4], error_event(), *events[4:]])))
    seen, _ = run(fake, mode, SURFACES[0], ONE_RESPONSE)
    assert "error" in [e.type for e in seen]
    assert_call(tool_span(telemetry, WEATHER), WEATHER, reason=None)


def test_a_cancelled_recv_ends_nothing(fake: Any, instrument: Any, telemetry: Any) -> None:
    """asyncio.wait_for(connection.recv(), ...) timing out: the SDK says cancelling recv is safe, and
    the response goes on to complete."""
    # The arguments whole in the one delta sent before the hold: a response that completes after
    # the cancel came too late has sent its call whole (cut, it would be unterminated).
    whole = replace(WEATHER, fragments=[WEATHER.arguments])
    fake.websocket.enqueue(frames(turn(response_events([whole]), cancel_after=3)))  # one delta

    async def main() -> None:
        async with _resource(_client(fake, "async"), SURFACES[0]).connect(model=MODEL) as connection:
            await connection.response.create()
            while (await connection.recv()).type != "response.function_call_arguments.delta":
                pass
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(connection.recv(), timeout=0.05)  # the server holds
            await connection.response.cancel()  # too late: the server completes the response
            while (await connection.recv()).type != "response.done":
                pass

    asyncio.run(main())
    assert_call(tool_span(telemetry, WEATHER), whole, reason=None, delivered=1)


def test_a_connection_dropped_by_the_user_is_abandoned(fake: Any, instrument: Any, telemetry: Any) -> None:
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]), cancel_after=4)))
    connection = _resource(_client(fake, "sync"), SURFACES[0]).connect(model=MODEL).enter()
    connection.response.create()
    while connection.recv().type != "response.function_call_arguments.delta":
        pass
    socket = connection._connection  # closed by hand below, so the server's thread ends
    del connection
    gc.collect()
    socket.close()
    assert_call(tool_span(telemetry, WEATHER), WEATHER, reason=n.ABANDONED, delivered=1)


# -- execution, privacy, the host ---------------------------------------------------------------------


def test_execute_tool_links_completed_calls_and_strict_refuses_aborted(fake: Any, instrument: Any,
                                                                        telemetry: Any) -> None:  # fmt: skip
    cut = replace(LOOKUP, status=None)
    fake.websocket.enqueue(frames(
        turn(response_events([WEATHER], response_id="resp_a")),
        turn(response_events([cut], response_id="resp_b"), cut_after=3),
    ))  # fmt: skip
    run(fake, "sync", SURFACES[0], [("create",), ("until", "response.done", 1), ("create",),
                                    ("until", "response.done", 2)])  # fmt: skip
    with execute_tool(WEATHER.call_id, name=WEATHER.name):
        pass
    with pytest.raises(IncompleteToolCallError), execute_tool(cut.call_id, name=cut.name, strict=True):
        pytest.fail("the body of a refused execution ran")
    executions = {s.attributes[n.GEN_AI_TOOL_CALL_ID]: s for s in telemetry.spans()  # type: ignore[index]
                  if s.name.startswith("execute_tool ")}  # fmt: skip
    (link,) = executions[WEATHER.call_id].links
    assert link.context.span_id == tool_span(telemetry, WEATHER).context.span_id
    assert executions[cut.call_id].links == ()
    assert executions[cut.call_id].attributes[n.TOOLCALL_OUTCOME] == "aborted"  # type: ignore[index]


def test_arguments_only_with_content_capture(fake: Any, instrument: Any, telemetry: Any) -> None:
    instrument(capture_content=True)
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]))))
    run(fake, "sync", SURFACES[0], ONE_RESPONSE)
    assert tool_span(telemetry, WEATHER).attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] == WEATHER.arguments  # type: ignore[index]


def test_the_parent_is_the_span_current_when_the_response_starts(fake: Any, instrument: Any,
                                                                 telemetry: Any) -> None:  # fmt: skip
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]))))
    with telemetry.tracer_provider.get_tracer("test").start_as_current_span("agent turn") as turn_span:
        run(fake, "sync", SURFACES[0], ONE_RESPONSE)
    (response,) = inference_spans(telemetry)
    assert response.parent is not None and response.parent.span_id == turn_span.get_span_context().span_id
    assert trace.get_current_span() is trace.INVALID_SPAN


def _raw_reads(fake: Any, mode: str, surface: str, count: int) -> list[Any]:
    client = _client(fake, mode)
    if mode == "sync":
        with _resource(client, surface).connect(model=MODEL) as connection:
            connection.response.create()
            return [connection.recv_bytes() for _ in range(count)]

    async def run() -> list[Any]:
        async with _resource(client, surface).connect(model=MODEL) as connection:
            await connection.response.create()
            return [await connection.recv_bytes() for _ in range(count)]

    return asyncio.run(run())


def _said_about_recv_bytes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records
        if r.name == "otel_toolcalls" and r.levelname == "WARNING" and "recv_bytes()" in r.getMessage()
    ]  # fmt: skip


def test_events_read_with_recv_bytes_are_said_once_not_to_be_traced(
    fake: Any, instrument: Any, telemetry: Any, mode: str, surface: str, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    from otel_toolcalls._core import process

    process.reset()  # sites warned about by earlier tests: said again
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]))))
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]))))
    with caplog.at_level("WARNING", logger="otel_toolcalls"):
        raw = _raw_reads(fake, mode, surface, 2) + _raw_reads(fake, mode, surface, 2)
    assert all(isinstance(message, bytes) for message in raw)  # what the SDK returned, untouched
    (said,) = _said_about_recv_bytes(caplog)
    assert "RealtimeConnection.recv_bytes() are not traced" in said


def test_recv_and_iteration_say_nothing_about_recv_bytes(
    fake: Any, instrument: Any, telemetry: Any, mode: str, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # The SDK's recv() reads through its own recv_bytes(): that call is the package's to see.
    from otel_toolcalls._core import process

    process.reset()  # sites warned about by earlier tests: said again
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]))))
    with caplog.at_level("WARNING", logger="otel_toolcalls"):
        run(fake, mode, SURFACES[0], ONE_RESPONSE)
    assert _said_about_recv_bytes(caplog) == []
    assert_call(tool_span(telemetry, WEATHER), WEATHER, reason=None)


def test_the_sdk_returns_what_it_returned(fake: Any, instrument: Any, telemetry: Any) -> None:
    module = __import__(openai_realtime.MODULES[0] if "ga" in SURFACES else openai_realtime.MODULES[1],
                        fromlist=["x"])  # fmt: skip
    assert inspect.iscoroutinefunction(module.AsyncRealtimeConnection.recv)
    assert inspect.iscoroutinefunction(module.AsyncRealtimeConnection.close)
    assert not inspect.iscoroutinefunction(module.RealtimeConnection.recv)
    fake.websocket.enqueue(frames(turn(response_events([WEATHER]))))
    events, _ = run(fake, "sync", SURFACES[0], ONE_RESPONSE)
    assert type(events[-1]).__module__.startswith("openai.types")
