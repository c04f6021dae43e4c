"""Property-based: random argument strings cut at random points, random interleavings of parallel
calls, random endings give exact counts and outcomes. A few examples go over a real socket; many
drive the translator with ChatCompletionChunk objects built by the openai SDK's own model classes."""


from __future__ import annotations

import json
import types
from typing import Any

import openai
from conftest import Telemetry
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk

from otel_toolcalls._config import Settings
from otel_toolcalls._core import names as n
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.telemetry import Telemetry as Wiring
from otel_toolcalls._providers.formats.chat_completions import translate_chunk
from otel_toolcalls.testing import split_at
from otel_toolcalls.testing.openai_chat import Event, ToolCall, chunk, request, script_for

# openai 3.60 reads the request's headers on a connection error (None no longer does); its
# HTTP client moved from httpx to httpx2, so a stand-in with headers serves every release.
_REQUEST: Any = types.SimpleNamespace(headers={})

# A JSON object, as a function call's arguments are by contract (a cut one is unterminated,
# test_wire_lies.py): a string value holding multi-byte characters of every width, braces, quotes,
# backslashes and digits, then trailing blanks as some servers send.
ARGUMENT_TEXT = st.builds(
    lambda value, blanks: json.dumps({"v": value}, ensure_ascii=False) + blanks,
    st.text(alphabet=st.sampled_from(list('{}":, 0123456789.-abcxyzüßé中文☀️🌧\\')), max_size=60),
    st.sampled_from(["", " ", "\n", " \n\t"]),
)


@st.composite
def fragmented(draw: Any) -> tuple[str, list[str]]:
    text = draw(ARGUMENT_TEXT)
    points = draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=12))
    return text, split_at(text, points)


ENDINGS = {
    "tool_calls": ("completed", None),
    "stop": ("completed", None),
    "length": ("aborted", "truncated"),
    "content_filter": ("aborted", "filtered"),
    None: ("aborted", "incomplete"),
}


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=fragmented(), cut=st.booleans(), finish=st.sampled_from(list(ENDINGS)))
def test_random_fragments_over_the_socket(telemetry, instrument, fake, case, cut, finish):
    text, pieces = case
    telemetry.exporter.clear()
    before = telemetry.calls_by_outcome()
    call = ToolCall(name="f", id="call_p", arguments=text, fragments=pieces)
    events = [Event(index=0, id="call_p", name="f", arguments="")]
    events += [Event(index=0, arguments=p) for p in pieces]
    events.append(Event(finish_reason=finish))
    cut_after = 1 + len(pieces) // 2 if cut else None
    fake.enqueue(script_for(events, cut_after=cut_after))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    raised = None
    try:
        for _ in client.chat.completions.create(**request()):
            pass
    except openai.APIConnectionError as exc:
        raised = exc
    (span,) = telemetry.tool_spans()
    delivered = pieces[: cut_after - 1] if cut_after is not None else pieces
    expected = ("aborted", "stream_error") if cut else ENDINGS[finish]
    assert (raised is not None) == cut
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == len(delivered)
    if delivered:
        assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len("".join(delivered).encode("utf-8"))
    assert (span.attributes[n.TOOLCALL_OUTCOME], span.attributes.get(n.TOOLCALL_ABORT_REASON)) == expected
    after = telemetry.calls_by_outcome()
    assert after.get(expected, 0) - before.get(expected, 0) == 1
    assert call.pieces() == pieces


@st.composite
def interleaved(draw: Any) -> tuple[list[tuple[str, list[str]]], list[int]]:
    """Parallel calls and an order of their fragments: each call's fragments stay in order."""
    calls = draw(st.lists(fragmented(), min_size=1, max_size=4))
    slots = [i for i, (_, pieces) in enumerate(calls) for _ in pieces]
    order = draw(st.permutations(slots))
    return calls, list(order)


def _sdk_chunk(event: Event) -> ChatCompletionChunk:
    return ChatCompletionChunk.model_validate(chunk(event))


@settings(max_examples=150, deadline=None)
@given(
    case=interleaved(),
    ending=st.sampled_from(["tool_calls", "stop", "length", "content_filter", None, "cut", "close"]),
    stop_at=st.floats(0, 1),
)
def test_random_interleavings_through_the_translator(case, ending, stop_at):
    calls, order = case
    telemetry = Telemetry()
    state = StreamState(
        Wiring(Settings(), telemetry.tracer_provider, telemetry.meter_provider),
        RequestInfo(provider="openai", model="m"),
    )
    # Every call starts first (OpenAI sends a start per index before its fragments), then the
    # fragments of all calls interleave.
    stream = [
        _sdk_chunk(Event(index=i, id=f"call_{i}", name=f"t{i}", arguments="")) for i in range(len(calls))
    ]
    cursor = [0] * len(calls)
    for i in order:
        stream.append(_sdk_chunk(Event(index=i, arguments=calls[i][1][cursor[i]])))
        cursor[i] += 1
    delivered_upto = len(stream)
    if ending in ("cut", "close"):
        delivered_upto = int(stop_at * len(stream))
    elif ending is not None:
        stream.append(_sdk_chunk(Event(finish_reason=ending)))
        delivered_upto = len(stream)
    for c in stream[:delivered_upto]:
        translate_chunk(state, c)
    if ending == "cut":
        state.failed(openai.APIConnectionError(request=_REQUEST))
        expected: tuple[str, str | None] = ("aborted", "stream_error")
    elif ending == "close":
        state.closed()
        expected = ("aborted", "closed")
    else:
        state.ended()
        expected = ENDINGS[ending]
    # What each call got before the stream stopped.
    got: dict[int, list[str]] = {}
    for c in stream[:delivered_upto]:
        for tc in c.choices[0].delta.tool_calls or ():
            if tc.function.arguments:
                got.setdefault(tc.index, []).append(tc.function.arguments)
    started = {tc.index for c in stream[:delivered_upto] for tc in c.choices[0].delta.tool_calls or ()}
    spans = {s.attributes[n.TOOLCALL_INDEX]: s for s in telemetry.tool_spans()}
    assert set(spans) == started
    for index, span in spans.items():
        pieces = got.get(index, [])
        assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == len(pieces)
        assert span.attributes.get(n.TOOLCALL_ARGUMENTS_SIZE, 0) == len("".join(pieces).encode("utf-8"))
        outcome = (span.attributes[n.TOOLCALL_OUTCOME], span.attributes.get(n.TOOLCALL_ABORT_REASON))
        assert outcome == expected
    counted = telemetry.calls_by_outcome()
    assert counted == ({expected: len(started)} if started else {})
    chat = telemetry.one("chat ")
    assert chat.attributes[n.TOOLCALL_COUNT] == len(started)


# -- the unterminated rule: documents that are not objects, and where one document ends ----------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from(list('[]{}":, \\abcü☀')), max_size=12)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
# Any valid JSON document that is not an object, as a server might write it.
NOT_OBJECT = st.builds(
    lambda value, spaced, blanks: json.dumps(value, ensure_ascii=False, separators=spaced) + blanks,
    JSON_VALUES.filter(lambda value: not isinstance(value, dict)),
    st.sampled_from([(",", ":"), (", ", ": ")]),
    st.sampled_from(["", " ", "\n"]),
)
# Each delta names the tool and has no usable id (Mistral), or only the first one does (OpenAI).
SHAPES = ("bare_deltas", "named_deltas")


def _pieces(draw: Any, text: str) -> list[str]:
    points = draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=8))
    return split_at(text, points)


def _call_events(pieces: list[str], shape: str) -> list[Event]:
    named = shape == "named_deltas"
    events = [Event(index=0, id=None if named else "call_d", name="f", arguments="")]
    events += [
        Event(index=0, id="null" if named else None, name="f" if named else None, arguments=p) for p in pieces
    ]
    return events


def _translated(events: list[Event]) -> Telemetry:
    """The events through the chat translator into a stream ended by its finish reason."""
    telemetry = Telemetry()
    state = StreamState(
        Wiring(Settings(), telemetry.tracer_provider, telemetry.meter_provider),
        RequestInfo(provider="openai", model="m"),
    )
    for event in [*events, Event(finish_reason="tool_calls")]:
        translate_chunk(state, _sdk_chunk(event))
    state.ended()
    return telemetry


def _is_document(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _ends(telemetry: Telemetry) -> list[tuple[Any, ...]]:
    return sorted(
        (
            s.attributes[n.TOOLCALL_ARGUMENTS_SIZE],
            s.attributes[n.TOOLCALL_OUTCOME],
            s.attributes.get(n.TOOLCALL_ABORT_REASON),
        )
        for s in telemetry.tool_spans()
    )


@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=NOT_OBJECT, shape=st.sampled_from(SHAPES))
def test_documents_that_are_not_objects_complete(data, text, shape):
    pieces = _pieces(data.draw, text)
    telemetry = _translated(_call_events(pieces, shape))
    assert _ends(telemetry) == [(len(text.encode("utf-8")), "completed", None)]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=NOT_OBJECT, shape=st.sampled_from(SHAPES))
def test_documents_that_are_not_objects_cut(data, text, shape):
    body = text.rstrip()
    cut = body[: data.draw(st.integers(1, max(1, len(body) - 1)))].rstrip()
    assume(cut and cut != body)
    if body[0] == "[":
        # The rule's blind spot (TELEMETRY.md section 6): a cut right after a nested "]".
        assume(cut[-1] != "]")
    else:
        # A scalar's prefix that is itself a document ("1" of "12") is no visible cut.
        assume(not _is_document(cut))
    telemetry = _translated(_call_events(_pieces(data.draw, cut), shape))
    assert _ends(telemetry) == [(len(cut.encode("utf-8")), "aborted", "unterminated")]


# Objects whose string values hold braces, quotes and backslashes: "}" then "{" happen inside them.
BRACED_TEXT = st.text(alphabet=st.sampled_from(list('{}"\\ a')), max_size=8)
BRACED_OBJECT = st.builds(
    lambda before, after: json.dumps({"tex": f"{before}}}{{{after}", "n": [1, {"m": after}]}),
    BRACED_TEXT,
    BRACED_TEXT,
)


@st.composite
def braced_calls(draw: Any) -> list[list[str]]:
    """One or two such calls, each cut at random points and between every "}" and "{"."""
    calls = []
    for text in draw(st.lists(BRACED_OBJECT, min_size=1, max_size=2)):
        boundaries = [i + 1 for i in range(len(text) - 1) if text[i : i + 2] == "}{"]
        points = draw(st.lists(st.integers(1, len(text) - 1), max_size=6))
        calls.append(split_at(text, [*boundaries, *points]))
    return calls


@settings(max_examples=200, deadline=None)
@given(calls=braced_calls())
def test_named_deltas_without_ids_split_calls_only_where_a_document_ends(calls):
    # Mistral's shape, every call on one index: one span per call, however its text is cut.
    events = [event for pieces in calls for event in _call_events(pieces, "named_deltas")]
    telemetry = _translated(events)
    expected = sorted((len("".join(p).encode("utf-8")), "completed", None) for p in calls)
    assert _ends(telemetry) == expected
