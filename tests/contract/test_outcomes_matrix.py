"""Every outcome of a streamed tool call, through every provider API's real SDK and wire format.

Black box: the real SDK client reads real bytes from the fake provider; the test reads back only
exported spans and metric points. Each provider API is a driver (``matrix/drivers.py``); a case
a provider cannot express is not generated, and its driver says why (``Driver.cannot``):
``test_every_pair_has_a_case_or_a_reason`` holds the table to that. Run one provider's cases
with ``-k <driver id>`` (``-k openai_chat``, ``-k anthropic_bedrock``, ...), or generate only
some drivers' cases with ``OTEL_TOOLCALLS_MATRIX=openai,groq`` (driver id prefixes): the version
lane does, as each of its venvs holds one SDK.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from matrix.drivers import DRIVERS, OLLAMA_WHOLE, OUTCOMES, WHOLE, Driver, selected
from matrix.wires import CLOCK, WEATHER, Call
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from outcomes import assert_outcome

from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider, awkward_points

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def cases(outcome: str) -> list[Any]:
    return [pytest.param(d, id=d.id) for d in selected() if outcome not in d.cannot]


# -- consuming a stream the way a user does ----------------------------------------------------------


def _cuts_a_character(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _error_type(exc: BaseException) -> str:
    """TELEMETRY section 1: the raised exception's fully qualified class name, its module path up
    to the first private part (``openai.APIConnectionError``, not ``openai._exceptions...``)."""
    cls = type(exc)
    public = list(itertools.takewhile(lambda part: not part.startswith("_"), cls.__module__.split(".")))
    return ".".join([*public, cls.__qualname__])


def consume(
    d: Driver, fake: FakeProvider, telemetry: Any, how: str
) -> tuple[list[Any], BaseException | None]:
    """``how``: "drain" (read to the end or the raised exception), "close" / "abandon" (read up
    to the first argument fragment, then close the stream / drop every reference to it), or
    "cancel" (async: cancel the task while it awaits the next chunk)."""
    client = d.make(fake, telemetry.tracer_provider)
    if d.asynchronous:
        return asyncio.run(_aconsume(d, client, how))
    got: list[Any] = []
    stream = d.open(client)
    if how == "drain":
        try:
            for chunk in stream:
                got.append(chunk)
        except Exception as exc:
            return got, exc
        return got, None
    for chunk in stream:
        got.append(chunk)
        if d.delivered(got):
            break
    if how == "close":
        stream.close()
    else:
        del stream, chunk
        gc.collect()
    return got, None


async def _aconsume(d: Driver, client: Any, how: str) -> tuple[list[Any], BaseException | None]:
    try:
        return await _aconsume_with(d, client, how)
    finally:
        if d.exit_client:
            await client.__aexit__(None, None, None)


async def _aconsume_with(d: Driver, client: Any, how: str) -> tuple[list[Any], BaseException | None]:
    got: list[Any] = []
    stream = await d.open(client)
    if how == "drain":
        try:
            async for chunk in stream:
                got.append(chunk)
        except Exception as exc:
            return got, exc
        return got, None
    if how == "cancel":
        return got, await _cancel(d, stream, got)
    async for chunk in stream:
        got.append(chunk)
        if d.delivered(got):
            break
    if how == "close":
        await d.aclose(stream)
    else:
        del stream, chunk
        gc.collect()  # inside the loop, as a dropped stream is collected in a running program
        await _scheduled_closes()
    return got, None


async def _scheduled_closes() -> None:
    """What the collection scheduled, run as a running program's loop runs it: asyncio closes a
    collected async generator (cohere's chat_stream) in a task of its own. A test whose loop ended
    at once would cancel that close half-way, which breaks the SDK's connection (httpx: 'aclose():
    asynchronous generator is already running'), instrumented or not."""
    await asyncio.sleep(0)  # one turn: the finalizer hook schedules the task by call_soon_threadsafe
    pending = asyncio.all_tasks() - {asyncio.current_task()}
    await asyncio.gather(*pending, return_exceptions=True)


async def _cancel(d: Driver, stream: Any, got: list[Any]) -> BaseException | None:
    inside = asyncio.Event()

    async def read() -> None:
        async for chunk in stream:
            got.append(chunk)
            if d.delivered(got):
                inside.set()

    task = asyncio.create_task(read())
    # The server holds the body at a gate inside the call: once the reader has a fragment, it
    # can only be parked awaiting the next chunk.
    await asyncio.wait_for(inside.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return None


# -- what every case checks ---------------------------------------------------------------------------


def inference_span(telemetry: Any, d: Driver) -> ReadableSpan:
    span: ReadableSpan = telemetry.one(d.inference)
    assert span.kind is SpanKind.CLIENT
    return span


def check(
    telemetry: Any,
    d: Driver,
    calls: Sequence[Call],
    got: list[Any],
    reasons: Sequence[str | None],
    *,
    stream_reason: str | None,
    error_type: str | None = None,
    finish: str = "error",
) -> list[ReadableSpan]:
    """One span per call, in order: outcome, reason, error.type, status (tests/helpers/outcomes.py),
    deltas and size of exactly the fragments the SDK yielded, ids, the inference span as parent
    and its own outcome, and toolcall.calls points that count the same spans."""
    spans = sorted(telemetry.tool_spans(), key=lambda s: s.attributes[n.TOOLCALL_INDEX])
    assert [s.name for s in spans] == [f"tool_call {c.name}" for c in calls]
    parent = inference_span(telemetry, d)
    delivered = d.delivered(got)
    for index, (span, call, reason) in enumerate(zip(spans, calls, reasons, strict=True)):
        attrs = span.attributes or {}
        assert span.kind is SpanKind.INTERNAL
        assert span.parent is not None and span.parent.span_id == parent.context.span_id
        assert attrs[n.GEN_AI_PROVIDER_NAME] == d.provider
        assert attrs[n.TOOLCALL_REQUEST_MODEL] == d.model
        assert attrs.get(n.TOOLCALL_CALL_ID) == (call.id if d.wire.ids else None)
        assert attrs[n.TOOLCALL_TOOL_TYPE] == "function"
        assert attrs[n.TOOLCALL_INDEX] == index
        count = delivered.get(index, 0)
        assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == count
        if d.wire.whole:
            assert n.TOOLCALL_ARGUMENTS_SIZE not in attrs  # whole calls: no size (TELEMETRY section 6)
        else:
            assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == sum(d.wire.sizes(call)[:count])
        assert n.GEN_AI_TOOL_CALL_ARGUMENTS not in attrs  # content capture is off by default
        assert_outcome(span, reason, error_type if reason == "stream_error" else None)
    p = parent.attributes or {}
    if not d.sdk_span or stream_reason in (None, "truncated", "filtered"):
        assert p[n.TOOLCALL_COUNT] == len(calls)
        assert p[n.TOOLCALL_OUTCOME] == ("completed" if stream_reason is None else "aborted")
        assert p.get(n.TOOLCALL_ABORT_REASON) == stream_reason
    if not d.sdk_span:
        assert p[n.GEN_AI_RESPONSE_FINISH_REASONS] == (finish,)
        assert p.get(n.ERROR_TYPE) == (error_type if stream_reason == "stream_error" else None)
        failed = StatusCode.ERROR if stream_reason == "stream_error" else StatusCode.UNSET
        assert parent.status.status_code is failed
    expected = Counter(("completed", None) if r is None else ("aborted", r) for r in reasons)
    assert telemetry.calls_by_outcome() == dict(expected)
    for point in telemetry.points("toolcall.calls"):
        attrs = point.attributes
        assert attrs[n.GEN_AI_PROVIDER_NAME] == d.provider
        reason = attrs.get(n.TOOLCALL_ABORT_REASON)
        assert attrs.get(n.ERROR_TYPE) == (error_type if reason == "stream_error" else reason)
    return spans


def fully_delivered(d: Driver, calls: Sequence[Call], got: list[Any]) -> None:
    """The SDK yielded every fragment the wire sent: nothing lost, nothing invented."""
    assert d.delivered(got) == {i: len(d.wire.sizes(c)) for i, c in enumerate(calls) if d.wire.sizes(c)}


# -- the outcomes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("d", cases("completed"))
def test_completed(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(d.wire.script([CLOCK]))
    got, exc = consume(d, fake, telemetry, "drain")
    assert exc is None
    fully_delivered(d, [CLOCK], got)
    check(telemetry, d, [CLOCK], got, [None], stream_reason=None, finish=d.wire.finish("completed"))


@pytest.mark.parametrize("d", cases("awkward_fragments"))
def test_awkward_fragments(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    pieces = WEATHER.pieces()
    # Cut inside a string, between a key and its colon, mid-number, on both sides of multi-byte characters.
    assert any(p.endswith('"location"') for p in pieces) and any(p.startswith(":") for p in pieces)
    assert any(p[:1].isdigit() for p in pieces[1:]) and "ü" in pieces and "☀" in pieces
    script = d.wire.script([WEATHER])
    if script.content_type == "text/event-stream":  # SSE writes are cut inside a multi-byte character
        assert any(_cuts_a_character(w) for w in script.writes)
    fake.enqueue(script)
    got, exc = consume(d, fake, telemetry, "drain")
    assert exc is None
    fully_delivered(d, [WEATHER], got)
    (span,) = check(
        telemetry, d, [WEATHER], got, [None], stream_reason=None, finish=d.wire.finish("completed")
    )
    attrs = span.attributes or {}
    if d.wire.sizes(WEATHER) == [len(p.encode()) for p in pieces]:
        # Exact: one delta per cut point plus one; the UTF-8 length of the whole argument text
        # (ü, ï: 2 bytes each; ☀ and U+FE0F: 3 each).
        assert attrs[n.TOOLCALL_ARGUMENTS_DELTAS] == len(awkward_points(WEATHER.arguments)) + 1
        assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == len(WEATHER.arguments.encode("utf-8")) == 94
    else:  # Vertex partial_args: each value's UTF-8 length, numbers as their JSON text
        assert attrs[n.TOOLCALL_ARGUMENTS_SIZE] == 94 - len(
            '{"location": "", "unit": "", "days": , "note": ""}'
        )


@pytest.mark.parametrize("d", cases("parallel"))
def test_parallel(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(d.wire.script([WEATHER, CLOCK]))
    got, exc = consume(d, fake, telemetry, "drain")
    assert exc is None
    fully_delivered(d, [WEATHER, CLOCK], got)
    check(
        telemetry,
        d,
        [WEATHER, CLOCK],
        got,
        [None, None],
        stream_reason=None,
        finish=d.wire.finish("completed"),
    )


@pytest.mark.parametrize("d", cases("parallel_cut"))
def test_parallel_cut(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    """The connection drops inside the second call: a first call with its own completion event
    (a block stop) stays completed; in chat-shaped streams nothing completed it (TELEMETRY section 6)."""
    fake.enqueue(d.wire.cut([WEATHER, CLOCK], after=2))
    got, exc = consume(d, fake, telemetry, "drain")
    assert exc is not None
    first = None if d.stopped_blocks else "stream_error"
    error = _error_type(exc)
    check(
        telemetry,
        d,
        [WEATHER, CLOCK],
        got,
        [first, "stream_error"],
        stream_reason="stream_error",
        error_type=error,
    )


@pytest.mark.parametrize("d", cases("cut"))
def test_cut(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    fake.enqueue(d.wire.cut([WEATHER], after=3))
    got, exc = consume(d, fake, telemetry, "drain")
    assert exc is not None  # the SDK's own exception reaches the caller
    assert d.delivered(got) == {0: 3}
    check(
        telemetry,
        d,
        [WEATHER],
        got,
        ["stream_error"],
        stream_reason="stream_error",
        error_type=_error_type(exc),
    )


def _ending(d: Driver, telemetry: Any, fake: FakeProvider, ending: str) -> None:
    fake.enqueue(d.wire.script([WEATHER], ending))
    got, exc = consume(d, fake, telemetry, "drain")
    assert exc is None
    fully_delivered(d, [WEATHER], got)
    check(telemetry, d, [WEATHER], got, [ending], stream_reason=ending, finish=d.wire.finish(ending))


@pytest.mark.parametrize("d", cases("truncated"))
def test_truncated(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    _ending(d, telemetry, fake, "truncated")


@pytest.mark.parametrize("d", cases("filtered"))
def test_filtered(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    _ending(d, telemetry, fake, "filtered")


@pytest.mark.parametrize("d", cases("incomplete"))
def test_incomplete(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    _ending(d, telemetry, fake, "incomplete")


def _consumer_end(d: Driver, telemetry: Any, fake: FakeProvider, how: str, reason: str) -> None:
    gate = threading.Event()
    fake.enqueue(d.wire.gated([WEATHER], after=2, gate=gate))
    try:
        got, exc = consume(d, fake, telemetry, how)
    finally:
        gate.set()
    assert exc is None and 1 <= d.delivered(got)[0] <= 2
    check(telemetry, d, [WEATHER], got, [reason], stream_reason=reason)


@pytest.mark.parametrize("d", cases("closed"))
def test_closed(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    _consumer_end(d, telemetry, fake, "close", "closed")


@pytest.mark.parametrize("d", cases("cancelled"))
def test_cancelled(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    _consumer_end(d, telemetry, fake, "cancel", "cancelled")


@pytest.mark.parametrize("d", cases("abandoned"))
def test_abandoned(d: Driver, telemetry: Any, instrument: Any, fake: FakeProvider) -> None:
    _consumer_end(d, telemetry, fake, "abandon", "abandoned")


# -- the table ----------------------------------------------------------------------------------------


def test_every_pair_has_a_case_or_a_reason() -> None:
    """Each (provider API, outcome) is a generated case or a written reason, never both, never neither."""
    tests = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(OUTCOMES) <= tests
    for d in DRIVERS.values():
        assert set(d.cannot) <= set(OUTCOMES), d.id
        assert all(len(why) > 20 for why in d.cannot.values()), d.id
        for outcome in OUTCOMES:
            generated = any(p.values[0] is d for p in cases(outcome))
            if d in selected():
                assert generated != (outcome in d.cannot), (d.id, outcome)
    # Each outcome is exercised somewhere (by the whole table: a lane selecting one SDK's drivers may
    # leave an outcome to others, e.g. a sync-only SDK cannot cancel), and each async driver covers
    # cancellation.
    if {d.id for d in selected()} >= {d.id for d in DRIVERS.values() if d.lane_sdk is None}:
        assert all(cases(o) for o in OUTCOMES)
    whole = (None, WHOLE, OLLAMA_WHOLE)
    assert all(d.cannot.get("cancelled") in whole for d in DRIVERS.values() if d.asynchronous)
