"""The real google-genai Live client (``client.aio.live.connect``) against the fake provider's wss://
endpoint: whole calls delivered, executed and linked, cancelled by the server, the session dying."""

from __future__ import annotations

import asyncio
import gc
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from console_spans import console_spans
from google import genai
from google.genai import types
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from outcomes import assert_outcome
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from otel_toolcalls import IncompleteToolCallError, ToolCallsInstrumentor, execute_tool, tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls._core import process
from otel_toolcalls.testing.gemini_live import (
    MODEL,
    WEATHER,
    Await,
    Close,
    Drop,
    FunctionCall,
    LiveEndpoint,
    cancellation,
    session,
    text,
    tool_call,
    turn_complete,
    usage,
)

LOOKUP = FunctionCall("lookup", {"q": "straße", "n": 12345}, "fc_lookup_2")
ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "collector-config" / "prometheus" / "rules" / "toolcalls.rules.yaml"
VENV_BIN = Path(sys.executable).parent
ASKED = Await("client_content")
ANSWERED = Await("tool_response")


@pytest.fixture(scope="module")
def shared_live() -> Iterator[LiveEndpoint]:
    live = LiveEndpoint()
    yield live
    live.stop()


@pytest.fixture
def live(shared_live: LiveEndpoint) -> Iterator[LiveEndpoint]:
    shared_live.reset()
    yield shared_live
    shared_live.reset()


@dataclass
class App:
    """A Live app: asks once, reads the session's messages; ``execute_at``: the kind of message
    (``tool_call``, ``tool_call_cancellation``) after which it runs the calls gathered so far, each
    in ``execute_tool`` (``strict``), and answers the ones that ran (``answer_all``: all of them)."""

    execute_at: str = "tool_call"
    strict: bool | None = None
    answer_all: bool = False
    turns: int = 1  # receive() ends at each turnComplete: the app reads this many turns
    vertex: bool = False
    ran: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    raised: BaseException | None = None

    async def run(self, live: LiveEndpoint, *, close_after: str | None = None) -> None:
        client = _client(live, vertex=self.vertex)
        config = {
            "response_modalities": ["TEXT"],
            "tools": [{"function_declarations": [{"name": "get_weather"}]}],
        }
        async with client.aio.live.connect(model=MODEL, config=config) as connection:
            await connection.send_client_content(turns={"role": "user", "parts": [{"text": "Weather?"}]})
            try:
                await self._read(connection, close_after)
            except Exception as exc:
                self.raised = exc

    async def _read(self, connection: Any, close_after: str | None) -> None:
        for _ in range(self.turns):
            if await self._turn(connection, close_after):
                return

    async def _turn(self, connection: Any, close_after: str | None) -> bool:
        pending: list[Any] = []
        async for message in connection.receive():
            self.messages.append(message)
            if message.tool_call is not None:
                pending += message.tool_call.function_calls or []
            if getattr(message, self.execute_at) is not None and pending:
                await self._execute(connection, pending)
                pending = []
            if close_after is not None and getattr(message, close_after) is not None:
                await connection.close()
                return True
        return False

    async def _execute(self, connection: Any, calls: list[Any]) -> None:
        responses = []
        for call in calls:
            try:
                async with execute_tool(call.id, name=call.name, strict=self.strict):
                    self.ran.append(call.id)  # the tool's body
            except IncompleteToolCallError:
                self.refused.append(call.id)
                if not self.answer_all:
                    continue
            responses.append(types.FunctionResponse(id=call.id, name=call.name, response={"ok": True}))
        if responses:
            await connection.send_tool_response(function_responses=responses)


def _client(live: LiveEndpoint, *, vertex: bool = False) -> Any:
    if vertex:
        # No project, location or key: an API gateway to google-genai, reached at base_url as is.
        return genai.Client(vertexai=True, http_options=live.client_options(vertex=True))
    return genai.Client(api_key="fake-key", http_options=live.client_options())


def run(live: LiveEndpoint, app: App, *steps: Any, close_after: str | None = None) -> App:
    live.enqueue(session(ASKED, *steps))
    asyncio.run(app.run(live, close_after=close_after))
    return app


def tool_span(telemetry: Any, call: FunctionCall) -> ReadableSpan:
    found = [
        s for s in telemetry.tool_spans() if (s.attributes or {}).get(n.TOOLCALL_CALL_ID) == call.call_id
    ]
    assert len(found) == 1, [s.name for s in telemetry.spans()]
    return found[0]


def execution(telemetry: Any, call: FunctionCall) -> ReadableSpan:
    found = [s for s in telemetry.spans() if s.name == f"execute_tool {call.name}"
             and (s.attributes or {}).get(n.GEN_AI_TOOL_CALL_ID) == call.call_id]  # fmt: skip
    assert len(found) == 1, [s.name for s in telemetry.spans()]
    return found[0]


def turns(telemetry: Any) -> list[ReadableSpan]:
    return sorted(
        (s for s in telemetry.spans() if s.kind is SpanKind.CLIENT), key=lambda s: s.start_time or 0
    )


def assert_whole_call(span: ReadableSpan, call: FunctionCall, index: int = 0) -> None:
    attrs = span.attributes or {}
    assert span.name == f"tool_call {call.name}"
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "gcp.gemini"
    assert attrs[n.TOOLCALL_REQUEST_MODEL] == MODEL
    assert attrs[n.TOOLCALL_INDEX] == index
    # Whole and parsed: no fragments, no size (TELEMETRY section 6), no argument text.
    assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == 0
    assert attrs.get(n.TOOLCALL_ARGUMENTS_SIZE, 0) == 0
    assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs
    assert_outcome(span, None)


def assert_turn(span: ReadableSpan, *, reason: str | None, count: int, error_type: str | None = None) -> None:
    attrs = span.attributes or {}
    assert span.name == f"generate_content {MODEL}"
    assert attrs[n.SERVER_ADDRESS] == "127.0.0.1"
    assert attrs[n.TOOLCALL_COUNT] == count
    if reason is None:
        assert attrs[n.TOOLCALL_OUTCOME] == "completed"
    else:
        assert (attrs[n.TOOLCALL_OUTCOME], attrs[n.TOOLCALL_ABORT_REASON]) == ("aborted", reason)
    assert attrs.get(n.ERROR_TYPE) == error_type


def assert_linked(execution_span: ReadableSpan, call_span: ReadableSpan) -> None:
    attrs = execution_span.attributes or {}
    assert attrs[n.TOOLCALL_OUTCOME] == "completed"
    (link,) = execution_span.links
    assert link.context.span_id == call_span.context.span_id
    assert (link.attributes or {})[n.GEN_AI_ATTRIBUTION_LINK_TYPE] == n.LINK_TYPE_CAUSED_BY_GENERATION


# -- completed ---------------------------------------------------------------------------------------


def test_a_completed_call_executed_and_linked(live: LiveEndpoint, instrument: Any, telemetry: Any) -> None:
    app = run(
        live, App(), tool_call(WEATHER), ANSWERED, text("Sunny, 21 °C."), usage(40, 12), turn_complete()
    )
    assert app.raised is None and app.ran == [WEATHER.call_id]
    call = tool_span(telemetry, WEATHER)
    assert_whole_call(call, WEATHER)
    (turn,) = turns(telemetry)
    assert_turn(turn, reason=None, count=1)
    attrs = turn.attributes or {}
    assert (attrs[n.GEN_AI_USAGE_INPUT_TOKENS], attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS]) == (40, 12)
    assert call.parent is not None and call.parent.span_id == turn.context.span_id
    assert_linked(execution(telemetry, WEATHER), call)
    assert tool_call_outcome(WEATHER.call_id) == "completed"
    # The answer reached the server as the app sent it.
    (answer,) = live.received("tool_response")
    assert answer["functionResponses"][0]["id"] == WEATHER.call_id


def test_vertex_a_completed_call_and_a_cancelled_one(
    live: LiveEndpoint, instrument: Any, telemetry: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    app = App(execute_at="tool_call_cancellation", strict=True, vertex=True)
    run(live, app, tool_call(WEATHER, LOOKUP), cancellation(LOOKUP.call_id), ANSWERED, turn_complete())
    assert app.ran == [WEATHER.call_id] and app.refused == [LOOKUP.call_id]
    call = tool_span(telemetry, WEATHER)
    assert (call.attributes or {})[n.GEN_AI_PROVIDER_NAME] == "gcp.vertex_ai"
    assert_linked(execution(telemetry, WEATHER), call)
    assert (execution(telemetry, LOOKUP).attributes or {})[n.TOOLCALL_OUTCOME] == "aborted"
    assert live.websocket.paths == ["/vertex"]


def test_parallel_calls_in_one_message_and_turns_on_one_session(
    live: LiveEndpoint, instrument: Any, telemetry: Any
) -> None:
    second = FunctionCall("get_weather", {"city": "Bern"}, "fc_weather_2")
    app = run(live, App(turns=2), text("Checking."), tool_call(WEATHER, LOOKUP), ANSWERED, turn_complete(),
              tool_call(second), ANSWERED, turn_complete())  # fmt: skip
    assert app.ran == [WEATHER.call_id, LOOKUP.call_id, second.call_id]
    first, later = turns(telemetry)
    assert_turn(first, reason=None, count=2)
    assert_turn(later, reason=None, count=1)
    for index, call in enumerate((WEATHER, LOOKUP)):
        span = tool_span(telemetry, call)
        assert_whole_call(span, call, index)
        assert span.parent is not None and span.parent.span_id == first.context.span_id
        assert_linked(execution(telemetry, call), span)
    assert_linked(execution(telemetry, second), tool_span(telemetry, second))


def test_fragmented_frames(live: LiveEndpoint, instrument: Any, telemetry: Any) -> None:
    # Each message in three WebSocket fragments cut mid-JSON (inside "Zürich" too): the SDK reassembles them.
    live.enqueue(
        session(ASKED, tool_call(WEATHER), ANSWERED, turn_complete(), pace=0.001, fragment_at=(0.3, 0.61))
    )
    asyncio.run(App().run(live))
    assert_whole_call(tool_span(telemetry, WEATHER), WEATHER)


# -- cancelled by the server -------------------------------------------------------------------------


def test_a_cancelled_call_is_refused_in_strict_mode(
    live: LiveEndpoint, instrument: Any, telemetry: Any
) -> None:
    app = App(execute_at="tool_call_cancellation", strict=True)
    run(live, app, tool_call(WEATHER, LOOKUP), cancellation(WEATHER.call_id), ANSWERED, turn_complete())
    # The tool body never ran for the cancelled call; the other ran, linked.
    assert app.ran == [LOOKUP.call_id] and app.refused == [WEATHER.call_id]
    refused = execution(telemetry, WEATHER)
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})[n.ERROR_TYPE] == "otel_toolcalls.IncompleteToolCallError"
    assert (refused.attributes or {})[n.TOOLCALL_OUTCOME] == "aborted"
    assert refused.links == ()
    assert tool_call_outcome(WEATHER.call_id) == "aborted"
    assert_linked(execution(telemetry, LOOKUP), tool_span(telemetry, LOOKUP))
    # Revoked after its block ended: its span, held till then, ends aborted like its outcome.
    assert_outcome(tool_span(telemetry, WEATHER), "cancelled")
    assert_whole_call(tool_span(telemetry, LOOKUP), LOOKUP, 1)
    # The app answered only the call it ran.
    (answer,) = live.received("tool_response")
    assert [r["id"] for r in answer["functionResponses"]] == [LOOKUP.call_id]


def test_a_revoked_call_is_counted_aborted_where_the_alert_rule_reads(
    live: LiveEndpoint, telemetry: Any
) -> None:
    # Metrics to an in-memory reader and to the Prometheus reader the rules' series come from.
    registry = CollectorRegistry()
    memory = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[memory, PrometheusMetricReader(registry=registry)])
    process.reset()
    instrumentor = ToolCallsInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider, meter_provider=meters)
    try:
        app = App(execute_at="tool_call_cancellation", strict=True)
        run(live, app, tool_call(WEATHER, LOOKUP), cancellation(WEATHER.call_id), ANSWERED,
            turn_complete())  # fmt: skip
    finally:
        instrumentor.uninstrument()
    # The revoked call's body never ran and got no link; the completed one ran, linked.
    assert app.ran == [LOOKUP.call_id] and app.refused == [WEATHER.call_id]
    assert execution(telemetry, WEATHER).links == ()
    assert_linked(execution(telemetry, LOOKUP), tool_span(telemetry, LOOKUP))
    # Span, outcome and count say one thing, each call counted once.
    assert_outcome(tool_span(telemetry, WEATHER), "cancelled")
    assert (tool_call_outcome(WEATHER.call_id), tool_call_outcome(LOOKUP.call_id)) == ("aborted", "completed")
    points = {(p.attributes[n.GEN_AI_TOOL_NAME], p.attributes[n.TOOLCALL_OUTCOME],
               p.attributes.get(n.TOOLCALL_ABORT_REASON), p.attributes.get(n.ERROR_TYPE)): p.value
              for m in memory.get_metrics_data().resource_metrics for sm in m.scope_metrics
              for metric in sm.metrics if metric.name == "toolcall.calls"
              for p in metric.data.data_points}  # fmt: skip
    assert points == {("get_weather", "aborted", "cancelled", "cancelled"): 1,
                      ("lookup", "completed", None, None): 1}  # fmt: skip
    # The aborted ratio as the alert's recording rule computes it, over the scraped series (one
    # scrape of counters that started at 0: each series' value is its increase).
    samples = [s for family in text_string_to_metric_families(generate_latest(registry).decode())
               for s in family.samples if s.name == "toolcall_calls_total"]  # fmt: skip
    aborted, every = rule_selectors("toolcall:aborted:ratio_rate5m")
    selected = [s.value for s in samples if aborted.items() <= s.labels.items()]
    assert sum(selected) / sum(s.value for s in samples if every.items() <= s.labels.items()) == 0.5
    reasons = {s.labels["toolcall_abort_reason"] for s in samples if aborted.items() <= s.labels.items()}
    assert reasons == {"cancelled"}


def rule_selectors(record: str) -> tuple[dict[str, str], dict[str, str]]:
    """The label matchers of the numerator's and the denominator's ``toolcall_calls_total`` in a
    recording rule of collector-config's rules (equality matchers only, as they are written)."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    (expr,) = [r["expr"] for g in groups for r in g["rules"] if r.get("record") == record]
    found = re.findall(r"toolcall_calls_total(?:\{([^}]*)\})?\[", expr)
    assert len(found) == 2, expr
    return tuple(dict(re.findall(r'(\w+)="([^"]*)"', matchers)) for matchers in found)  # type: ignore[return-value]


def test_a_cancelled_call_runs_unlinked_when_not_strict(
    live: LiveEndpoint, instrument: Any, telemetry: Any
) -> None:
    app = App(execute_at="tool_call_cancellation", strict=False)
    run(live, app, tool_call(WEATHER), cancellation(WEATHER.call_id), ANSWERED, turn_complete())
    assert app.ran == [WEATHER.call_id]
    span = execution(telemetry, WEATHER)
    assert (span.attributes or {})[n.TOOLCALL_OUTCOME] == "aborted" and span.links == ()


def test_an_answer_for_a_cancelled_call_is_passed_on(
    live: LiveEndpoint, instrument: Any, telemetry: Any
) -> None:
    # Strict refused it, the app answers it anyway: the SDK sends it, nothing raises.
    app = App(execute_at="tool_call_cancellation", strict=True, answer_all=True)
    run(live, app, tool_call(WEATHER), cancellation(WEATHER.call_id), ANSWERED, turn_complete())
    assert app.raised is None and app.refused == [WEATHER.call_id]
    (answer,) = live.received("tool_response")
    assert [r["id"] for r in answer["functionResponses"]] == [WEATHER.call_id]
    assert tool_call_outcome(WEATHER.call_id) == "aborted"


def test_a_cancellation_after_the_answer_changes_nothing(
    live: LiveEndpoint, instrument: Any, telemetry: Any
) -> None:
    # The call ran and was answered; a late cancellation (or one for an id never delivered) is no news.
    app = run(
        live,
        App(),
        tool_call(WEATHER),
        ANSWERED,
        cancellation(WEATHER.call_id, "fc_unknown"),
        turn_complete(),
    )
    assert app.ran == [WEATHER.call_id]
    assert tool_call_outcome(WEATHER.call_id) == "completed"
    assert tool_call_outcome("fc_unknown") is None


# -- the session ends -------------------------------------------------------------------------------


def test_the_session_dying_after_delivery(live: LiveEndpoint, instrument: Any, telemetry: Any) -> None:
    # The socket drops (no close frame) before the app answers: the SDK raises from receive().
    app = App(execute_at="go_away")  # never comes: the calls are left unrun by the loop
    run(live, app, text("Let me check."), tool_call(WEATHER), Drop())
    assert app.raised is not None and app.ran == []
    (turn,) = turns(telemetry)
    assert_turn(turn, reason="stream_error", count=1, error_type=_qualified(app.raised))
    # Delivered whole before the socket died: complete (TELEMETRY section 6, "Stopped but not settled").
    assert_whole_call(tool_span(telemetry, WEATHER), WEATHER)
    assert tool_call_outcome(WEATHER.call_id) == "completed"


def test_the_server_closing_cleanly_mid_turn(live: LiveEndpoint, instrument: Any, telemetry: Any) -> None:
    app = run(live, App(), tool_call(WEATHER), ANSWERED, text("Sunny"), Close())
    assert app.ran == [WEATHER.call_id]
    (turn,) = turns(telemetry)
    # The turn ended without its turnComplete.
    assert_turn(turn, reason="incomplete", count=1)
    assert_whole_call(tool_span(telemetry, WEATHER), WEATHER)


def test_the_app_closing_the_session_mid_turn(live: LiveEndpoint, instrument: Any, telemetry: Any) -> None:
    app = run(
        live,
        App(),
        tool_call(WEATHER),
        ANSWERED,
        text("Sunny"),
        text("and warm"),
        close_after="server_content",
    )
    assert app.raised is None
    (turn,) = turns(telemetry)
    assert_turn(turn, reason="closed", count=1)


def test_leaving_the_session_mid_turn_without_close(
    live: LiveEndpoint, instrument: Any, telemetry: Any
) -> None:
    # The manager's exit closes the socket but not the session (no close() to see): the open turn
    # ends when the session object is collected.
    async def leave() -> None:
        client = genai.Client(api_key="fake-key", http_options=live.client_options())
        async with client.aio.live.connect(model=MODEL) as connection:
            await connection.send_client_content(turns={"role": "user", "parts": [{"text": "Hi"}]})
            async for _ in connection.receive():
                break

    live.enqueue(session(ASKED, text("Hel"), text("lo")))
    asyncio.run(leave())
    gc.collect()
    (turn,) = turns(telemetry)
    assert_turn(turn, reason="abandoned", count=0)


def test_a_session_opened_before_instrument(live: LiveEndpoint, instrument: Any, telemetry: Any) -> None:
    instrumentor = instrument()
    instrumentor.uninstrument()

    async def converse() -> None:
        client = genai.Client(api_key="fake-key", http_options=live.client_options())
        async with client.aio.live.connect(model=MODEL) as connection:
            instrument()  # the session exists already: its messages are traced from here on
            await connection.send_client_content(turns={"role": "user", "parts": [{"text": "Hi"}]})
            async for message in connection.receive():
                for call in message.tool_call.function_calls if message.tool_call else []:
                    async with execute_tool(call.id, name=call.name):
                        pass
                    answer = types.FunctionResponse(id=call.id, name=call.name, response={})
                    await connection.send_tool_response(function_responses=[answer])

    live.enqueue(session(ASKED, tool_call(WEATHER), ANSWERED, turn_complete()))
    asyncio.run(converse())
    span = tool_span(telemetry, WEATHER)
    assert n.TOOLCALL_REQUEST_MODEL not in (span.attributes or {})  # connect() was not seen
    assert_outcome(span, None)
    assert_linked(execution(telemetry, WEATHER), span)


def test_uninstrumented_the_app_sees_the_same(live: LiveEndpoint, instrument: Any, telemetry: Any) -> None:
    steps = (
        tool_call(WEATHER, LOOKUP),
        cancellation(LOOKUP.call_id),
        ANSWERED,
        text("Sunny"),
        turn_complete(),
    )
    traced = run(live, App(execute_at="tool_call_cancellation"), *steps)
    instrument().uninstrument()
    before = len(telemetry.spans())
    bare = run(live, App(execute_at="tool_call_cancellation"), *steps)
    assert [m.model_dump() for m in bare.messages] == [m.model_dump() for m in traced.messages]
    assert (bare.ran, bare.raised) == (traced.ran, traced.raised)
    assert len(telemetry.spans()) == before  # nothing reaches the uninstrumented exporter


def _qualified(exc: BaseException) -> str:
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"


# -- a real process: the example under opentelemetry-instrument, strict from the environment ---------


def test_the_example_under_opentelemetry_instrument() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", OTEL_TRACES_EXPORTER="console",
               OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none",
               OTEL_TOOLCALLS_STRICT="true")  # fmt: skip
    example = str(ROOT / "examples/gemini_live_agent.py")
    result = subprocess.run(
        [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, example],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT,  # a hang guard, not a bound
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.splitlines()
    # The cancelled tool's body never ran; the other ran and was answered.
    assert "ran get_weather (fc_weather)" in lines and "refused book_table (fc_booking): cancelled" in lines
    assert not any(line.startswith("ran book_table") for line in lines)
    assert "otel_toolcalls" not in result.stderr, result.stderr[-4000:]
    spans = console_spans(result.stdout)
    calls = {s["attributes"]["toolcall.call.id"]: s for s in spans if s["name"].startswith("tool_call ")}
    assert {k: s["attributes"]["toolcall.outcome"] for k, s in calls.items()} == {
        "fc_weather": "completed", "fc_booking": "aborted",  # the server revoked fc_booking
    }  # fmt: skip
    assert calls["fc_booking"]["attributes"]["toolcall.abort_reason"] == "cancelled"
    runs = {s["attributes"]["gen_ai.tool.call.id"]: s for s in spans if s["name"].startswith("execute_tool ")}
    (link,) = runs["fc_weather"]["links"]
    assert link["context"]["span_id"] == calls["fc_weather"]["context"]["span_id"]
    refused = runs["fc_booking"]
    assert refused["links"] == [] and refused["attributes"]["toolcall.outcome"] == "aborted"
    assert refused["attributes"]["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    (turn,) = [s for s in spans if s["name"] == f"generate_content {MODEL}"]
    assert turn["attributes"]["toolcall.outcome"] == "completed"
