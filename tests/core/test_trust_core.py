"""The core under attack (issue 10): threads, faulty span processors, fork, long ids, empty calls,
exception text and big arguments. Each test proves a class of failure cannot come back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from typing import Any

import openai
import pytest
from internal_errors import RaisingProcessor
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_toolcalls._config import Settings
from otel_toolcalls._core import names as n
from otel_toolcalls._core import process
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.telemetry import REGISTRY, Telemetry


class Ledger(SpanProcessor):
    """Every tool-call span started and how many times it reached on_end."""

    def __init__(self) -> None:
        self.started: dict[int, Span] = {}
        self.ended: Counter[int] = Counter()
        self._lock = threading.Lock()
        self.on_start_hook: Any = None

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        if span.name.startswith(n.TOOL_CALL_SPAN_PREFIX):
            with self._lock:
                self.started[span.context.span_id] = span
            if self.on_start_hook is not None:
                self.on_start_hook(span)

    def on_end(self, span: ReadableSpan) -> None:
        if span.name.startswith(n.TOOL_CALL_SPAN_PREFIX):
            with self._lock:
                self.ended[span.context.span_id] += 1


@pytest.fixture
def ledger(telemetry: Any) -> Ledger:
    processor = Ledger()
    telemetry.tracer_provider.add_span_processor(processor)
    return processor


@pytest.fixture
def core(telemetry: Any) -> Any:
    process.reset()

    def build(**settings: Any) -> StreamState:
        t = Telemetry(Settings(**settings), telemetry.tracer_provider, telemetry.meter_provider)
        return StreamState(t, RequestInfo(provider="openai", model="m-1"))

    yield build
    process.reset()


def calls_counted(telemetry: Any) -> int:
    return sum(point.value for point in telemetry.points(n.METRIC_TOOLCALL_CALLS))


def assert_every_call_accounted(telemetry: Any, ledger: Ledger) -> None:
    """Started once, ended exactly once, exported, counted, and in the registry under its span."""
    assert ledger.started, "no tool-call span started"
    never = [sid for sid in ledger.started if ledger.ended[sid] == 0]
    assert not never, f"{len(never)} of {len(ledger.started)} tool-call spans never ended"
    twice = [sid for sid, count in ledger.ended.items() if count != 1]
    assert not twice, f"{len(twice)} tool-call spans ended more than once"
    exported = {s.context.span_id for s in telemetry.tool_spans()}
    assert exported == set(ledger.started)
    assert calls_counted(telemetry) == len(ledger.started), "toolcall.calls disagrees with the spans"
    for span_id, span in ledger.started.items():
        call_id = span.attributes[n.TOOLCALL_CALL_ID]
        record = REGISTRY.get(call_id)
        assert record is not None, f"{call_id} not in the registry"
        assert record.span_context.span_id == span_id


# -- 1. every way a stream ends, from any thread, reaches the one finalize-once path ---------------

_BLOCKS = 12


def _consume(state: StreamState, trial: int, midway: threading.Event) -> None:
    # The event mix of real streams: calls completed, stopped-then-settled, and left open.
    for i in range(_BLOCKS):
        if i == trial % _BLOCKS:
            midway.set()  # the closer goes now, racing the rest of the stream
        state.block_started(i, name="f", call_id=f"t{trial}-b{i}")
        state.fragment(i, '{"a": 1}')
        if i % 3 == 0:
            state.block_completed(i)
        elif i % 3 == 1:
            state.block_stopped(i)
            state.other_block_started()
    state.settle("tool_calls", completes_open=True)
    state.final_event()
    state.ended()


def _run(errors: list[BaseException], action: Any, *args: Any) -> None:
    try:
        action(*args)
    except BaseException as exc:  # reported by the test, not lost in the thread
        errors.append(exc)


def test_close_from_another_thread_while_consuming(telemetry, ledger, core):
    """Two real threads: one consumes events, the other closes the stream once the consumer is
    midway (an event, at a different block each trial). Whatever the interleaving, no call is left
    open and none is ended twice."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # many interleavings per trial, on any machine
    try:
        for trial in range(150):
            state = core()
            midway = threading.Event()
            errors: list[BaseException] = []

            def close(state: StreamState = state, midway: threading.Event = midway) -> None:
                midway.wait()
                state.closed()

            threads = [
                threading.Thread(target=_run, args=(errors, _consume, state, trial, midway)),
                threading.Thread(target=_run, args=(errors, close)),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert not errors, errors
    finally:
        sys.setswitchinterval(interval)
    assert_every_call_accounted(telemetry, ledger)


def test_real_stream_closed_from_another_thread(telemetry, ledger, instrument, fake, openai_client):
    """The user's path: a thread iterates a real openai stream, another calls ``stream.close()`` as
    soon as the first call's span is being started (an event set from the span processor)."""
    from dataclasses import replace

    from otel_toolcalls.testing.openai_chat import PARALLEL, request, tool_call_script

    trials = 10
    for trial in range(trials):
        calls = [replace(c, id=f"{c.id}-{trial}") for c in PARALLEL]
        # Paced, so the close usually lands mid-stream; what is asserted holds wherever it lands.
        fake.enqueue(tool_call_script(calls, pace=0.002))
    for _ in range(trials):
        stream = openai_client.chat.completions.create(**request())
        started = threading.Event()
        ledger.on_start_hook = lambda span, started=started: started.set()
        errors: list[BaseException] = []
        sdk_errors: list[BaseException] = []

        def consume(stream: Any = stream, sdk_errors: list[BaseException] = sdk_errors) -> None:
            try:
                for _ in stream:
                    pass
            except Exception as exc:  # the SDK's own error for a response closed under it
                sdk_errors.append(exc)

        def close(stream: Any = stream, started: threading.Event = started) -> None:
            started.wait()
            stream.close()

        threads = [threading.Thread(target=_run, args=(errors, f)) for f in (consume, close)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        assert not [e for e in sdk_errors if type(e).__module__.startswith("otel_toolcalls")]
    assert_every_call_accounted(telemetry, ledger)


def test_close_while_a_span_is_being_started(telemetry, ledger, core):
    """The stream ends (here: a span processor closes it, as a collection in the consuming thread
    would) between the check that the stream is open and the new call's registration."""
    state = core()
    ledger.on_start_hook = lambda span: state.closed()
    state.block_started(0, name="f", call_id="late-1")
    state.fragment(0, "{}")
    state.block_started(1, name="f", call_id="late-2")  # the stream is closed: no span
    assert_every_call_accounted(telemetry, ledger)
    (span,) = telemetry.tool_spans()
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == n.CLOSED


# -- 2. someone else's faulty span processor costs neither the registry nor the metrics ----------


@pytest.fixture
def openai_client(fake: Any) -> Any:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0)


@pytest.mark.parametrize("where", ["on_end", "on_start"])
def test_raising_span_processor_keeps_registry_metrics_and_strict(
    telemetry, instrument, fake, openai_client, where
):
    from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
    from otel_toolcalls.testing.openai_chat import PARALLEL, WEATHER, request, tool_call_script

    telemetry.tracer_provider.add_span_processor(RaisingProcessor(where))
    instrument(strict=True)
    fake.enqueue(tool_call_script(PARALLEL), tool_call_script([WEATHER], cut_after=3))
    list(openai_client.chat.completions.create(**request()))
    with pytest.raises(openai.APIConnectionError):  # dropped mid-arguments: the SDK's error
        list(openai_client.chat.completions.create(**request()))

    assert tool_call_outcome("call_par_1") == "completed"
    assert tool_call_outcome("call_par_2") == "completed"
    assert tool_call_outcome("call_weather_1") == "aborted"
    assert telemetry.calls_by_outcome() == {("completed", None): 2, ("aborted", "stream_error"): 1}
    assert sum(p.count for p in telemetry.points(n.METRIC_TOOLCALL_DURATION)) == 3
    ran: list[str] = []
    with execute_tool("call_par_1"):
        ran.append("call_par_1")
    with pytest.raises(IncompleteToolCallError), execute_tool("call_weather_1"):
        ran.append("call_weather_1")  # pragma: no cover - strict mode refuses it
    assert ran == ["call_par_1"]
    durations = telemetry.points(n.METRIC_EXECUTE_TOOL_DURATION)
    assert sum(p.count for p in durations) == 2  # the refused execution is measured too


# -- 3. state inherited across a fork is the parent's ------------------------------------------

_FORKING_APP = r'''
import atexit, gc, json, os, sys

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

out, url = sys.argv[1], sys.argv[2]


class FileExporter(SpanExporter):
    """One file per process, so parent and child exports can be compared."""

    def export(self, spans):
        with open(os.path.join(out, f"spans-{os.getpid()}.jsonl"), "a") as f:
            for s in spans:
                f.write(json.dumps({"name": s.name, "span_id": s.context.span_id}) + "\n")
        return SpanExportResult.SUCCESS


reader = InMemoryMetricReader()


def dump_calls():
    # Registered before the package's exit hook, so it runs after it (atexit is last in, first out).
    points = []
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == "toolcall.calls":
                    points += [[dict(p.attributes), p.value] for p in m.data.data_points]
    with open(os.path.join(out, f"calls-{os.getpid()}.json"), "w") as f:
        json.dump(points, f)


atexit.register(dump_calls)
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
from otel_toolcalls import ToolCallsInstrumentor

ToolCallsInstrumentor().instrument(
    tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader])
)
import openai

client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
request = dict(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True)
stream = client.chat.completions.create(**request)
chunks = iter(stream)
next(chunks)  # the tool call's block start: the call is open
pid = os.fork()
if pid == 0:
    del stream, chunks
    gc.collect()  # the child's copy of the parent's stream is collected
    list(client.chat.completions.create(**request))  # the child's own stream
    sys.exit(0)  # interpreter exit: the package's exit hook runs
_, status = os.waitpid(pid, 0)
stream.close()
with open(os.path.join(out, "pids"), "w") as f:
    f.write(f"{os.getpid()} {pid} {status}")
'''


def _read_spans(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_with_a_stream_open(tmp_path, fake):
    """A real process forks with a call open; the child drops its copy of the stream, streams on
    its own and exits. The parent's calls are ended and exported by the parent alone."""
    from otel_toolcalls.testing.openai_chat import WEATHER, tool_call_script

    fake.enqueue(tool_call_script([WEATHER]), tool_call_script([WEATHER]))
    app = tmp_path / "app.py"
    app.write_text(_FORKING_APP)
    done = subprocess.run(
        [sys.executable, str(app), str(tmp_path), fake.base_url], capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stderr.decode()
    parent_pid, child_pid, status = map(int, (tmp_path / "pids").read_text().split())
    assert status == 0
    parent = _read_spans(tmp_path / f"spans-{parent_pid}.jsonl")
    child = _read_spans(tmp_path / f"spans-{child_pid}.jsonl")
    assert sorted(s["name"] for s in parent) == ["chat gpt-4o-mini", "tool_call get_weather"]
    # The child exported its own stream's spans, and none of the parent's.
    assert sorted(s["name"] for s in child) == ["chat gpt-4o-mini", "tool_call get_weather"]
    assert not {s["span_id"] for s in parent} & {s["span_id"] for s in child}, "a span exported twice"
    assert _calls(tmp_path, child_pid) == [("completed", None, 1)]
    assert _calls(tmp_path, parent_pid) == [("aborted", "closed", 1)]


def _calls(tmp_path: Any, pid: int) -> list[tuple[str, str | None, int]]:
    points = json.loads((tmp_path / f"calls-{pid}.json").read_text())
    return [(a[n.TOOLCALL_OUTCOME], a.get(n.TOOLCALL_ABORT_REASON), v) for a, v in points]


# -- 4. one normalization of call ids, wherever one is stored or looked up ---------------------

LONG_DONE = "call_" + "d" * 295  # 300 characters: longer than the 256 an id is cut to
LONG_CUT = "call_" + "c" * 295


def _repeating_ids(call: Any) -> list[Any]:
    # Mistral and some OpenAI-compatible servers repeat name and id on every delta of the call.
    from otel_toolcalls.testing.openai_chat import Event

    return [Event(index=0, id=call.id, name=call.name, arguments=piece) for piece in call.pieces()]


def test_ids_over_256_characters(telemetry, instrument, fake, openai_client):
    from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
    from otel_toolcalls._core.telemetry import in_force
    from otel_toolcalls._linking.runner import Execution, run
    from otel_toolcalls.testing.openai_chat import Event, ToolCall, request, script_for

    done = ToolCall(name="get_weather", id=LONG_DONE, arguments='{"city": "Zürich"}')
    cut = ToolCall(name="get_weather", id=LONG_CUT, arguments='{"city": "Bern", "days": 3}')
    instrument(strict=True)
    fake.enqueue(
        script_for([*_repeating_ids(done), Event(finish_reason="tool_calls")]),
        script_for(_repeating_ids(cut), cut_after=3),
        script_for([Event(content="ok", finish_reason="stop")]),
    )
    list(openai_client.chat.completions.create(**request()))
    with pytest.raises(openai.APIConnectionError):
        list(openai_client.chat.completions.create(**request()))

    spans = {s.attributes[n.TOOLCALL_CALL_ID]: s for s in telemetry.tool_spans()}
    assert len(telemetry.tool_spans()) == 2, "one span per call, the repeated id starts no other"
    assert set(spans) == {LONG_DONE[:256], LONG_CUT[:256]}
    assert tool_call_outcome(LONG_DONE) == "completed"
    assert tool_call_outcome(LONG_CUT) == "aborted"
    assert tool_call_outcome(LONG_DONE[:256]) == "completed"  # the exported id finds it too

    with execute_tool(LONG_DONE) as span:
        # A framework adapter inside this execution sees the same call: no second execution span.
        assert run(Execution(LONG_DONE, "get_weather", in_force()), lambda: "sunny", (), {}) == "sunny"
    (execution,) = [s for s in telemetry.spans() if s.name.startswith(n.EXECUTE_TOOL_SPAN_PREFIX)]
    assert execution.context.span_id == span.get_span_context().span_id
    assert execution.attributes[n.TOOLCALL_OUTCOME] == "completed"
    assert execution.attributes[n.GEN_AI_TOOL_CALL_ID] == LONG_DONE[:256]
    (link,) = execution.links
    assert link.context.span_id == spans[LONG_DONE[:256]].context.span_id

    ran: list[str] = []
    with pytest.raises(IncompleteToolCallError):
        execute_tool(LONG_CUT).__enter__()
    with pytest.raises(IncompleteToolCallError):
        # The framework adapters' path:
        run(Execution(LONG_CUT, "get_weather", in_force()), ran.append, ("ran",), {})
    assert ran == []

    turn = {"role": "assistant", "tool_calls": [
        {"id": LONG_CUT, "type": "function", "function": {"name": "get_weather", "arguments": "{"}}
    ]}  # fmt: skip
    list(openai_client.chat.completions.create(**request(messages=[{"role": "user", "content": "?"}, turn])))
    replayed = [s for s in telemetry.spans() if n.TOOLCALL_REPLAYED_ABORTED in (s.attributes or {})]
    (chat,) = replayed
    (event,) = chat.events
    assert event.attributes[n.GEN_AI_TOOL_CALL_ID] == LONG_CUT[:256]
    assert sum(p.value for p in telemetry.points(n.METRIC_TOOLCALL_REPLAYED_ABORTED)) == 1


# -- 5. zero is a number: a call without fragments has size 0 (whole calls aside) -----------------


def _sizes_agree_with_calls(telemetry: Any) -> None:
    sizes = sum(p.count for p in telemetry.points(n.METRIC_TOOLCALL_ARGUMENTS_SIZE))
    assert sizes == calls_counted(telemetry), "every counted call has a point in the size histogram"


def test_call_aborted_before_its_first_fragment_has_size_zero(telemetry, instrument, fake, openai_client):
    from otel_toolcalls.testing.openai_chat import WEATHER, request, tool_call_script

    fake.enqueue(tool_call_script([WEATHER], cut_after=1))  # the block start (arguments ""), then cut
    with pytest.raises(openai.APIConnectionError):
        list(openai_client.chat.completions.create(**request()))
    (span,) = telemetry.tool_spans()
    assert span.attributes[n.TOOLCALL_ABORT_REASON] == n.STREAM_ERROR
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 0
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == 0
    (size,) = telemetry.points(n.METRIC_TOOLCALL_ARGUMENTS_SIZE)
    assert (size.count, size.sum) == (1, 0)
    _sizes_agree_with_calls(telemetry)


def test_server_tool_use_with_empty_input_has_size_zero(telemetry, instrument, fake):
    import anthropic

    from otel_toolcalls.testing import anthropic as wire
    from otel_toolcalls.testing.anthropic import MODEL, WEATHER, ToolUse

    search = ToolUse(name="web_search", id="srvtoolu_01", type="server_tool_use", arguments="", fragments=[])
    fake.enqueue(wire.tool_use_script([search, WEATHER]))
    client = anthropic.Anthropic(api_key="k", base_url=fake.base_url, max_retries=0, open_telemetry=False)
    list(client.messages.create(model=MODEL, max_tokens=64, messages=[], stream=True))
    spans = {s.name: s for s in telemetry.tool_spans()}
    server = spans["tool_call web_search"]
    assert server.attributes[n.TOOLCALL_TOOL_TYPE] == n.TOOL_TYPE_EXTENSION
    assert server.attributes[n.TOOLCALL_OUTCOME] == n.COMPLETED
    assert server.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == 0
    assert spans["tool_call get_weather"].attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(
        WEATHER.arguments.encode("utf-8")
    )
    assert sorted(p.count for p in telemetry.points(n.METRIC_TOOLCALL_ARGUMENTS_SIZE)) == [1, 1]
    _sizes_agree_with_calls(telemetry)


def test_gemini_whole_call_still_has_no_size(telemetry, instrument, fake):
    from google import genai
    from google.genai import types

    from otel_toolcalls.testing import gemini as g

    fake.enqueue(g.script_for(g.one_part_each([g.whole_call("get_weather", {"city": "Zürich"}, "fc_1")])))
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fake.base_url))
    list(client.models.generate_content_stream(model=g.MODEL, contents="weather?"))
    (span,) = telemetry.tool_spans()
    assert span.attributes[n.TOOLCALL_OUTCOME] == n.COMPLETED
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 0
    assert n.TOOLCALL_ARGUMENTS_SIZE not in span.attributes
    assert telemetry.points(n.METRIC_TOOLCALL_ARGUMENTS_SIZE) == []


# -- 6. exception text is content: the type by default, the message only with capture on ---------

SECRET = "appid=SECRET-5f3a"


class LookupFailed(Exception):
    pass


def _failing_tool(city: str) -> str:
    raise LookupFailed(f"no weather for {city!r} at https://api.example/v1?{SECRET}")


def _run_failing_tools(telemetry: Any, fake: Any, client: Any) -> None:
    from otel_toolcalls import execute_tool
    from otel_toolcalls._core.telemetry import in_force
    from otel_toolcalls._linking.runner import Execution, run
    from otel_toolcalls.testing import Script, sse
    from otel_toolcalls.testing.openai_chat import WEATHER, chunk, events_for, legacy_error, request

    writes = [sse(chunk(e)) for e in events_for([WEATHER], finish_reason=None)[:3]]
    fake.enqueue(Script([*writes, legacy_error(f"upstream failed: {SECRET}")]))
    with pytest.raises(openai.APIError, match=SECRET):  # the SDK's error reaches the caller whole
        list(client.chat.completions.create(**request()))

    with pytest.raises(LookupFailed), execute_tool("call_1", name="get_weather"):
        _failing_tool("Zürich")

    @execute_tool(name="decorated")
    def decorated(city: str, tool_call_id: str) -> str:
        return _failing_tool(city)

    with pytest.raises(LookupFailed):
        decorated("Bern", tool_call_id="call_2")
    with pytest.raises(LookupFailed):  # the framework adapters' execution path
        run(Execution("call_3", "framework_tool", in_force()), _failing_tool, ("Basel",), {})
    executions = [s for s in telemetry.spans() if s.name.startswith(n.EXECUTE_TOOL_SPAN_PREFIX)]
    assert len(executions) == 3
    for span in executions:
        assert span.attributes[n.ERROR_TYPE] == "test_trust_core.LookupFailed"


def test_exception_text_is_not_exported_by_default(telemetry, instrument, fake, openai_client):
    _run_failing_tools(telemetry, fake, openai_client)
    for span in telemetry.spans():
        assert SECRET not in span.to_json(), span.name  # attributes, status, events, links
        assert not [e for e in span.events if e.name == "exception"]
    for span in telemetry.spans():
        if span.name.startswith(n.EXECUTE_TOOL_SPAN_PREFIX):
            assert span.status.description == "test_trust_core.LookupFailed"


def test_exception_text_is_exported_with_content_capture(telemetry, instrument, fake, openai_client):
    instrument(capture_content=True)
    _run_failing_tools(telemetry, fake, openai_client)
    for span in telemetry.spans():
        if span.name.startswith(n.EXECUTE_TOOL_SPAN_PREFIX):
            (event,) = [e for e in span.events if e.name == "exception"]
            assert SECRET in event.attributes["exception.message"]
            assert "_failing_tool" in event.attributes["exception.stacktrace"]
            assert SECRET in span.status.description


# -- 7. content capture keeps only what it emits -------------------------------------------------


def _argument_piece(i: int) -> str:
    # Built afresh each time (as an SDK parses each fragment), so nothing else keeps it alive. The
    # first pieces mix 1-, 2-, 3- and 4-byte characters, so the cut at 4096 characters falls among them.
    if i < 12:
        return f"[{i}:" + "aä€😀" * 100 + "]"
    return str(i % 10) * 1000


def test_captured_arguments_keep_only_what_is_emitted(telemetry, core):
    import tracemalloc

    state = core(capture_content=True)
    state.block_started(0, name="big", call_id="big-1")
    pieces = 10_000  # about 10 MB of argument text
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for i in range(pieces):
            state.fragment(0, _argument_piece(i))
        state.settle("tool_calls", completes_open=True)
        state.ended()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Measured: 48 MiB before the fix (every fragment kept, then joined), about 60 KiB after.
    assert peak - before < 1 << 20, f"{(peak - before) / (1 << 20):.1f} MiB kept for one call"
    expected = "".join(_argument_piece(i) for i in range(12))[: n.MAX_ARGUMENTS_LENGTH]
    (span,) = telemetry.tool_spans()
    assert span.attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] == expected  # the first 4096 characters
    total = sum(len(_argument_piece(i).encode("utf-8")) for i in range(pieces))
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == total
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == pieces
