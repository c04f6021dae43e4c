"""A scenario language over the fake provider: replies and faults, no wire format in sight.

    llm = FakeLLM().start()
    llm.openai.reply(tool_calls=[call("get_weather", {"city": "Zürich"})], fault=cut_mid_arguments(after=3))
    llm.openai.reply(text="Sunny.")
    client = llm.openai.client            # the real SDK client, pointed at the fake

Each provider API keeps its own queue of replies (a request is answered from the queue of the API
its path belongs to), every request the loop sent is recorded, and each reply is laid out by the
wire builders of that API (``openai_chat``, ``openai_responses``, ``anthropic``): fragments cut at
awkward places by default, events holding multi-byte text written in two halves cut inside a
character. The fault decides where the body stops, what it says instead, and when it is written.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_toolcalls._providers.bedrock import converse
from otel_toolcalls._providers.formats import anthropic_messages, chat_completions, responses

from . import anthropic as wire_anthropic
from . import bedrock as wire_bedrock
from . import eventstream as wire_eventstream
from . import openai_chat as wire_chat
from . import openai_responses as wire_responses
from ._fragments import split_mid_character, sse
from ._server import FakeProvider, ReceivedRequest, Script
from .faults import Buffer, Fault, Pace, Stall


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str
    id: str | None = None
    fragments: tuple[str, ...] | None = None


def call(
    name: str, arguments: Any = None, *, id: str | None = None, fragments: Sequence[str] | None = None
) -> Call:
    """One tool call. ``arguments``: a dict (written as JSON, non-ASCII kept raw) or the JSON text;
    ``fragments``: explicit argument fragments instead of the default awkward ones."""
    if arguments is None:
        arguments = {}
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return Call(name, text, id, tuple(fragments) if fragments is not None else None)


class _TimedWrites(list[bytes]):
    """Body writes that wait before some of them, as the server iterates: a stall at one point of
    the body, or a gate a test opens (an upstream that pauses until told to go on)."""

    def __init__(self, writes: Sequence[bytes], waits: dict[int, float | threading.Event]) -> None:
        super().__init__(writes)
        self.waits = waits

    def __iter__(self) -> Iterator[bytes]:
        for i, data in enumerate(list.__iter__(self)):
            wait = self.waits.get(i)
            if isinstance(wait, threading.Event):
                wait.wait(30.0)  # a bound, so a failed test cannot hang the server thread forever
            elif wait:
                time.sleep(wait)
            yield data


def timed_script(writes: Sequence[bytes], waits: dict[int, float | threading.Event], **script: Any) -> Script:
    return Script(_TimedWrites(writes, waits), **script)


@dataclass
class Layout:
    """A reply as events of one API: ``encode`` writes one event, ``fragments[k]`` are the event
    positions of call k's argument fragments, ``tails`` the events a fault ends the body with."""

    events: list[Any]
    encode: Callable[[Any], bytes]
    fragments: list[list[int]]
    tails: dict[str, list[Any]] = field(default_factory=dict)
    terminator: bytes = b""
    content_type: str = "text/event-stream"


def _cut_point(layout: Layout, fault: Fault) -> int:
    """The event index after which a fault strikes: after ``fault.after`` fragments of its call
    (at least one, and short of the last, so the arguments are really partial)."""
    if not layout.fragments:
        raise ValueError(f"fault {fault.kind} needs a reply with tool calls")
    positions = layout.fragments[min(fault.call, len(layout.fragments) - 1)]
    if not positions:
        raise ValueError(f"fault {fault.kind}: the targeted call has no argument fragments")
    if fault.kind == "cut_after_call":
        return positions[-1] + 1
    count = max(1, min(fault.after, len(positions) - 1))
    return positions[count - 1] + 1


def _writes(events: Sequence[Any], encode: Callable[[Any], bytes]) -> tuple[list[bytes], list[int]]:
    """The socket writes, and for each event the index of its first write."""
    writes: list[bytes] = []
    starts: list[int] = []
    for event in events:
        starts.append(len(writes))
        writes.extend(split_mid_character(encode(event)))
    return writes, starts


def _whole(layout: Layout) -> list[bytes]:
    writes, _ = _writes(layout.events, layout.encode)
    return [*writes, layout.terminator] if layout.terminator else writes


def render(layout: Layout, fault: Fault | None) -> Script:
    """The script that writes a laid-out reply with a fault (or none)."""
    kind = layout.content_type
    if fault is None or isinstance(fault, (Buffer, Pace)):
        writes = _whole(layout)
        if isinstance(fault, Buffer):
            return Script(writes, first_byte_delay=fault.wait, burst=True, content_type=kind)
        return Script(writes, pace=fault.seconds if isinstance(fault, Pace) else 0.0, content_type=kind)
    point = _cut_point(layout, fault)
    if isinstance(fault, Stall):
        _, starts = _writes(layout.events, layout.encode)
        waits: dict[int, float | threading.Event] = (
            {starts[point]: fault.seconds} if point < len(starts) else {}
        )
        return timed_script(_whole(layout), waits, content_type=kind)
    if fault.kind in ("cut_mid_arguments", "cut_after_call"):
        writes, _ = _writes(layout.events[:point], layout.encode)
        return Script(writes, end="cut", content_type=kind)
    writes, _ = _writes([*layout.events[:point], *layout.tails[fault.kind]], layout.encode)
    return Script(writes, content_type=kind)


def _positions(events: Sequence[Any], is_fragment: Callable[[Any, int], bool], count: int) -> list[list[int]]:
    return [[i for i, e in enumerate(events) if is_fragment(e, k)] for k in range(count)]


def chat_layout(calls: Sequence[Call], text: str | None) -> Layout:
    tool_calls = [
        wire_chat.ToolCall(c.name, c.arguments, c.id, list(c.fragments or ()) or None) for c in calls
    ]
    finish = "tool_calls" if calls else "stop"
    events = wire_chat.events_for(tool_calls, text=text, finish_reason=finish)

    def is_fragment(e: wire_chat.Event, k: int) -> bool:
        return e.index == k and e.name is None and bool(e.arguments)

    def encode(e: Any) -> bytes:
        return e if isinstance(e, bytes) else sse(wire_chat.chunk(e))

    return Layout(
        events,
        encode,
        _positions(events, is_fragment, len(calls)),
        {
            "truncate": [wire_chat.Event(finish_reason="length"), sse("[DONE]")],
            "filter": [wire_chat.Event(finish_reason="content_filter"), sse("[DONE]")],
            "error_event": [wire_chat.legacy_error()],
        },
        terminator=sse("[DONE]"),
    )


def responses_layout(calls: Sequence[Call], text: str | None) -> Layout:
    tool_calls = [
        wire_responses.ToolCall(c.name, c.arguments, c.id, fragments=list(c.fragments or ()) or None)
        for c in calls
    ]
    events = wire_responses.events_for(tool_calls, text=text)
    first = 1 if text else 0

    def is_fragment(e: dict[str, Any], k: int) -> bool:
        return e["type"].endswith(".delta") and e.get("output_index") == k + first and "call" in e["type"]

    def incomplete(reason: str) -> dict[str, Any]:
        response = wire_responses.response_object("incomplete", incomplete_details={"reason": reason})
        return {"type": "response.incomplete", "response": response}

    def encode(e: dict[str, Any]) -> bytes:
        return sse(e, event=e["type"])

    error = {"type": "error", "code": "server_error", "message": "An error occurred.", "param": None}
    return Layout(
        events,
        encode,
        _positions(events, is_fragment, len(calls)),
        {
            "truncate": [incomplete("max_output_tokens")],
            "filter": [incomplete("content_filter")],
            "error_event": [error],
        },
    )


def anthropic_layout(calls: Sequence[Call], text: str | None) -> Layout:
    blocks: list[wire_anthropic.Block] = [wire_anthropic.Text(text)] if text else []
    blocks += [
        wire_anthropic.ToolUse(
            c.name, c.arguments, c.id or "toolu_01", fragments=list(c.fragments or ()) or None
        )
        for c in calls
    ]
    events = wire_anthropic.events_for(blocks, stop_reason="tool_use" if calls else "end_turn")
    first = 1 if text else 0

    def is_fragment(e: wire_anthropic.Event, k: int) -> bool:
        data = e[1]
        return data.get("index") == k + first and data.get("delta", {}).get("type") == "input_json_delta"

    def stop(reason: str) -> list[Any]:
        return [wire_anthropic.message_delta(reason), wire_anthropic.message_stop()]

    def encode(e: wire_anthropic.Event) -> bytes:
        return sse(e[1], event=e[0])

    layout = Layout(events, encode, _positions(events, is_fragment, len(calls)))
    # max_tokens closes the block it cut, then says why; a refusal ends the message mid-block.
    last = len(blocks) - 1
    layout.tails = {
        "truncate": [wire_anthropic.block_stop(last), *stop("max_tokens")],
        "filter": stop("refusal"),
        "error_event": [wire_anthropic.error()],
    }
    return layout


def bedrock_layout(calls: Sequence[Call], text: str | None) -> Layout:
    """ConverseStream's AWS event-stream frames, laid out as ``bedrock.frames_for`` does, with each
    frame's role kept so a fault can find the call's fragments."""
    events: list[tuple[str, int, bytes]] = [("start", -1, wire_bedrock.message_start())]
    first = 1 if text else 0
    if text:
        events += [("text", 0, wire_bedrock.text_delta(0, text)), ("stop", 0, wire_bedrock.block_stop(0))]
    for k, c in enumerate(calls):
        use = wire_bedrock.ToolUse(
            c.name, c.arguments, c.id or "tooluse_1", fragments=list(c.fragments or ()) or None
        )
        events.append(("block", k + first, wire_bedrock.block_start(k + first, use)))
        events += [("fragment", k + first, wire_bedrock.tool_delta(k + first, p)) for p in use.pieces()]
        events.append(("stop", k + first, wire_bedrock.block_stop(k + first)))
    reason = "tool_use" if calls else "end_turn"
    events += [("end", -1, wire_bedrock.message_stop(reason)), ("end", -1, wire_bedrock.metadata())]

    def end(stop_reason: str) -> list[Any]:
        return [("end", -1, wire_bedrock.message_stop(stop_reason)), ("end", -1, wire_bedrock.metadata())]

    return Layout(
        events,
        lambda e: e[2],
        _positions(events, lambda e, k: e[0] == "fragment" and e[1] == k + first, len(calls)),
        {
            "truncate": end("max_tokens"),
            "filter": end("content_filtered"),
            "error_event": [("error", -1, wire_bedrock.exception_frame())],
        },
        content_type=wire_eventstream.CONTENT_TYPE,
    )


@dataclass(frozen=True)
class Reply:
    """What was queued: the call ids (generated where the test gave none) and the fault."""

    call_ids: tuple[str, ...]
    fault: Fault | None


@dataclass
class Sent:
    """A request the loop sent: method, path, the parsed JSON body, and the call ids of its history."""

    method: str
    path: str
    body: Any
    history_call_ids: list[str]


class API:
    """One provider API of the fake: ``reply()`` queues a reply, ``client`` is the real SDK's client."""

    def __init__(self, llm: FakeLLM, *, name: str, path: str, id_prefix: str) -> None:
        self._llm, self.name, self.path, self._prefix = llm, name, path, id_prefix
        self._queue: deque[Script] = deque()
        self._client: Any = None

    def reply(
        self, *, tool_calls: Sequence[Call] = (), text: str | None = None, fault: Fault | None = None
    ) -> Reply:
        calls = [
            c if c.id else Call(c.name, c.arguments, self._llm.next_id(self._prefix), c.fragments)
            for c in tool_calls
        ]
        layout = _LAYOUTS[self.name](calls, text)
        if fault is not None and fault.breaks and not calls:
            raise ValueError(f"fault {fault.kind} needs a reply with tool calls")
        self._queue.append(render(layout, fault))
        return Reply(tuple(c.id or "" for c in calls), fault)

    def script(self, script: Script) -> None:
        """Queue a hand-made script (the builders' own output) for this API."""
        self._queue.append(script)

    @property
    def sent(self) -> list[Sent]:
        """The requests the loop sent to this API, in order, parsed."""
        return [r for r in self._llm.sent if self.path in r.path]

    @property
    def base_url(self) -> str:
        return self._llm.base_url + ("/v1" if self.name in ("openai", "responses") else "")

    def make_client(self, *, asynchronous: bool = False, **options: Any) -> Any:
        """The real SDK's client for this API, pointed at the fake, with no retries."""
        if self.name == "bedrock":
            return wire_bedrock.client(self._llm.base_url, **options)
        options = {"base_url": self.base_url, "api_key": "test-key", "max_retries": 0, **options}
        if self.name == "anthropic":
            import anthropic

            return (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(**options)
        import openai

        return (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(**options)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self.make_client()
        return self._client

    @property
    def async_client(self) -> Any:
        return self.make_client(asynchronous=True)


_LAYOUTS: dict[str, Callable[[Sequence[Call], str | None], Layout]] = {
    "openai": chat_layout,
    "responses": responses_layout,
    "anthropic": anthropic_layout,
    "bedrock": bedrock_layout,
}
_HISTORY = {
    "/chat/completions": chat_completions.history_ids,
    "/responses": responses.history_ids,
    "/messages": anthropic_messages.history_ids,
    "/converse-stream": converse.history_ids,
}


class FakeLLM(FakeProvider):
    """The fake provider with one reply queue per API: ``openai`` (chat completions),
    ``responses`` (OpenAI Responses), ``anthropic`` (Messages), ``bedrock`` (ConverseStream)."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)
        self.openai = API(self, name="openai", path="/chat/completions", id_prefix="call_")
        self.responses = API(self, name="responses", path="/responses", id_prefix="call_")
        self.anthropic = API(self, name="anthropic", path="/messages", id_prefix="toolu_")
        self.bedrock = API(self, name="bedrock", path="/converse-stream", id_prefix="tooluse_")
        self._apis = (self.openai, self.responses, self.anthropic, self.bedrock)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}fake{next(self._ids):03d}"

    def next_script(self, request: ReceivedRequest) -> Script:
        for api in self._apis:
            if api.path in request.path.split("?")[0]:
                with self._lock:
                    if api._queue:
                        return api._queue.popleft()
                message = (
                    f"the test queued no reply for {api.name} (request {len(self.requests)}: {request.path})"
                )
                break
        else:
            message = f"no API of the fake answers {request.method} {request.path}"
        body = json.dumps({"error": {"type": "invalid_request_error", "message": message}}).encode()
        return Script([body], status=500, content_type="application/json")

    @property
    def sent(self) -> list[Sent]:
        """Every request the loop sent, in order, parsed (``requests`` has the raw ones)."""
        return [_sent(r) for r in list(self.requests)]

    def pending(self) -> dict[str, int]:
        """Replies queued and not yet asked for, per API."""
        return {api.name: len(api._queue) for api in self._apis if api._queue}


def _sent(request: ReceivedRequest) -> Sent:
    try:
        body = request.json()
    except ValueError:  # not JSON (a test's own raw request): recorded with no parsed body
        body = None
    ids_of = next((f for p, f in _HISTORY.items() if p in request.path), None)
    ids = [i for i in ids_of(body) if isinstance(i, str)] if ids_of and isinstance(body, dict) else []
    return Sent(request.method, request.path, body, ids)
