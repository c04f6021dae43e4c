"""``otel-toolcalls chaos``: a fault-injecting HTTP proxy for staging.

    otel-toolcalls chaos --listen 127.0.0.1:8089 --upstream https://api.openai.com \\
        --cut-mid-arguments 0.05 --truncate 0.02 --buffer 0.02 --refragment --seed 7

Every request is forwarded unchanged (method, path, query, headers, body) and the response streamed
back as it arrives. In streamed responses of OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages (``text/event-stream``) and of Bedrock ConverseStream (AWS event-stream
frames, ``application/vnd.amazon.eventstream``), faults are injected at tool-call boundaries, each with its
own rate, drawn once per response that carries a tool call (``buffer``: once per streamed response):

- ``cut_mid_arguments``: the first call's first argument fragment up to its first awkward point
  (inside a string, before a colon, mid-number), then the connection drops;
- ``truncate``: the same part of that fragment, then the provider's own length stop; the body ends;
- ``buffer``: nothing until the upstream body ended (and at least ``--buffer-hold`` seconds), then all of it;
- ``refragment``: every argument fragment re-split at awkward places, one event each.

Rate 0 (the default) leaves a stream byte for byte as the upstream sent it; non-streamed and
compressed responses always pass unchanged. Each injected fault is logged on one line (request,
call id, fault) and counted: ``GET /__chaos/stats`` (a path no provider API uses), and a summary
on stderr at exit. Headers, bodies and query strings are never logged.

Stack: aiohttp for both sides. Its server's ``StreamResponse.write`` sends each piece as its own
chunk and waits for the socket to drain (backpressure: memory stays flat in body size), and its
client streams the upstream body without decoding it (``auto_decompress=False``, so bytes pass
exactly) over the usual TLS of ``ssl.create_default_context``. One dependency for both sides,
no framework in between.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import logging
import random
import struct
import sys
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import eventstream
from ._fragments import awkward_split

STATS_PATH = "/__chaos/stats"
MAX_EVENT = 1 << 20  # a partial event longer than this is passed on raw; the stream is left alone
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
    }
)
_log = logging.getLogger("otel_toolcalls.chaos")


@dataclass
class Rates:
    cut_mid_arguments: float = 0.0
    truncate: float = 0.0
    buffer: float = 0.0
    refragment: bool = False
    buffer_hold: float = 0.3

    @property
    def active(self) -> bool:
        return bool(self.cut_mid_arguments or self.truncate or self.buffer or self.refragment)


@dataclass
class Stats:
    requests: int = 0
    streamed: int = 0
    tool_call_streams: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    injected: deque[dict[str, str]] = field(default_factory=lambda: deque(maxlen=10_000))

    def record(self, request_id: str, call_id: str, fault: str) -> None:
        self.faults[fault] += 1
        self.injected.append({"request": request_id, "call_id": call_id, "fault": fault})
        _log.info("chaos request=%s call=%s fault=%s", request_id, call_id, fault)

    def as_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "streamed": self.streamed,
            "tool_call_streams": self.tool_call_streams,
            "faults": dict(self.faults),
            "injected": list(self.injected),
        }


# SSE events and what they mean at a tool-call boundary.


SSE_TYPE = "text/event-stream"
EVENTSTREAM_TYPE = "application/vnd.amazon.eventstream"


@dataclass
class Event:
    raw: bytes
    name: str | None
    data: Any  # the parsed JSON (an AWS event-stream frame's as {event type: payload}), or None
    framing: str = "sse"  # or "eventstream"

    def encode(self, data: Any) -> bytes:
        if self.framing == "eventstream":
            ((name, payload),) = data.items()
            return eventstream.event(name, payload)
        head = f"event: {self.name}\n" if self.name else ""
        return f"{head}data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def frame_end(buffer: bytearray) -> int:
    """Where the first complete AWS event-stream frame ends (its prelude says how long it is), or -1."""
    if len(buffer) < 4:
        return -1
    (total,) = struct.unpack("!I", buffer[:4])
    return total if len(buffer) >= total else -1


def parse_frame(raw: bytes) -> Event:
    """An event-stream frame: its ``:event-type`` and JSON payload (Bedrock ConverseStream)."""
    (total, headers_length) = struct.unpack("!II", raw[:8])
    headers: dict[str, Any] = {}
    at, end = 12, 12 + headers_length
    while at < end:
        name = raw[at + 1 : at + 1 + raw[at]].decode("utf-8", "replace")
        at += 1 + raw[at]
        kind = raw[at]
        at += 1
        if kind in (6, 7):  # bytes, string: a u16 length
            (length,) = struct.unpack("!H", raw[at : at + 2])
            headers[name] = raw[at + 2 : at + 2 + length].decode("utf-8", "replace")
            at += 2 + length
        else:  # true, false, byte, short, int, long, timestamp, uuid: fixed sizes
            at += {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}.get(kind, end)
    event_type = headers.get(":event-type")
    try:
        payload = json.loads(raw[end : total - 4]) if headers.get(":message-type") == "event" else None
    except ValueError:
        payload = None
    data = {event_type: payload} if event_type and isinstance(payload, dict) else None
    return Event(raw, event_type, data, "eventstream")


def event_end(buffer: bytearray) -> int:
    """Where the first complete SSE event ends (after its blank line, LF or CRLF), or -1."""
    ends = [i + len(sep) for sep in (b"\n\n", b"\r\n\r\n") if (i := buffer.find(sep)) >= 0]
    return min(ends) if ends else -1


def parse_event(raw: bytes) -> Event:
    name, lines = None, []
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            lines.append(line[5:].lstrip(" "))
    try:
        data = json.loads("\n".join(lines)) if lines else None
    except ValueError:
        data = None
    return Event(raw, name, data)


# framing -> (where the first event of a buffer ends, how one event parses)
FRAMINGS: dict[str, tuple[Any, Any]] = {
    "sse": (event_end, parse_event),
    "eventstream": (frame_end, parse_frame),
}


# The item and block types that are tool calls: the Responses API's, Anthropic's.
_RESPONSES_CALLS = ("function_call", "custom_tool_call", "mcp_call")
_ANTHROPIC_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")


def tool_start(data: Any) -> str | None:
    """The call id (or "?") when this event starts a tool call, else None."""
    if not isinstance(data, dict):
        return None
    for choice in data.get("choices") or ():
        for tc in (choice.get("delta") or {}).get("tool_calls") or ():
            if (tc.get("function") or {}).get("name"):
                return str(tc.get("id") or "?")
    item = data.get("item") or {}
    if data.get("type") == "response.output_item.added" and item.get("type") in _RESPONSES_CALLS:
        return str(item.get("call_id") or item.get("id") or "?")
    bedrock = ((data.get("contentBlockStart") or {}).get("start") or {}).get("toolUse")
    if isinstance(bedrock, dict):
        return str(bedrock.get("toolUseId") or "?")
    block = data.get("content_block") or {}
    if data.get("type") == "content_block_start" and block.get("type") in _ANTHROPIC_CALLS:
        return str(block.get("id") or "?")
    return None


def fragment(data: Any) -> str | None:
    """The argument fragment this event carries (one call's only), else None."""
    if not isinstance(data, dict):
        return None
    choices: list[Any] = data.get("choices") or []
    if len(choices) == 1:
        calls: list[Any] = (choices[0].get("delta") or {}).get("tool_calls") or []
        if len(calls) == 1:
            value = (calls[0].get("function") or {}).get("arguments")
            return value if isinstance(value, str) else None
    kind = str(data.get("type", ""))
    if kind.endswith(("_arguments.delta", "_input.delta")) and isinstance(data.get("delta"), str):
        return str(data["delta"])
    bedrock = ((data.get("contentBlockDelta") or {}).get("delta") or {}).get("toolUse")
    if isinstance(bedrock, dict) and isinstance(bedrock.get("input"), str):
        return str(bedrock["input"])
    delta = data.get("delta") or {}
    if kind == "content_block_delta" and delta.get("type") == "input_json_delta":
        return str(delta.get("partial_json", ""))
    return None


def with_fragment(data: dict[str, Any], piece: str, *, first: bool) -> dict[str, Any]:
    """The same event carrying ``piece``; later pieces of a chat delta drop the call's start fields."""
    out = copy.deepcopy(data)
    if out.get("choices"):
        tc = out["choices"][0]["delta"]["tool_calls"][0]
        tc["function"]["arguments"] = piece
        if not first:
            for key in ("id", "type"):
                tc.pop(key, None)
            tc["function"].pop("name", None)
    elif out.get("type") == "content_block_delta":
        out["delta"]["partial_json"] = piece
    elif "contentBlockDelta" in out:
        out["contentBlockDelta"]["delta"]["toolUse"]["input"] = piece
    else:
        out["delta"] = piece
    return out


def pieces_of(text: str) -> list[str]:
    pieces = awkward_split(text)
    if len(pieces) == 1 and len(text) >= 2:
        pieces = [text[: len(text) // 2], text[len(text) // 2 :]]
    return pieces


def length_stop(event: Event, context: dict[str, Any]) -> list[bytes]:
    """The provider's own end for a response that hit its output limit mid-call."""
    data = event.data
    if "contentBlockDelta" in data:  # Bedrock: the limit ends the message with the block still open
        return [event.encode({"messageStop": {"stopReason": "max_tokens"}})]
    if data.get("choices"):
        stop = {k: data[k] for k in ("id", "object", "created", "model") if k in data}
        stop["choices"] = [
            {"index": data["choices"][0].get("index", 0), "delta": {}, "finish_reason": "length"}
        ]
        return [event.encode(stop), b"data: [DONE]\n\n"]
    if data.get("type") == "content_block_delta":
        index = data.get("index", 0)
        return [
            Event(b"", "content_block_stop", None).encode({"type": "content_block_stop", "index": index}),
            Event(b"", "message_delta", None).encode(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
                    "usage": {"output_tokens": 1},
                }
            ),
            Event(b"", "message_stop", None).encode({"type": "message_stop"}),
        ]
    response = dict(context.get("response") or {"id": "resp_chaos", "object": "response", "output": []})
    response.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    incomplete = {
        "type": "response.incomplete",
        "response": response,
        "sequence_number": int(data.get("sequence_number", 0)) + 1,
    }
    return [Event(b"", "response.incomplete", None).encode(incomplete)]


class Injector:
    """One streamed response: complete events (SSE, or AWS event-stream frames) in, the bytes to
    send out (and whether to cut)."""

    def __init__(self, chaos: Chaos, request_id: str, framing: str = "sse") -> None:
        self.chaos, self.request_id = chaos, request_id
        self.event_end, self.parse = FRAMINGS[framing]
        self.buffer = bytearray()
        self.raw = False  # passing bytes on unparsed: nothing more to do for this response
        self.fault: str | None = None  # the ending fault drawn at the first tool call
        self.call_id: str | None = None
        self.refragmented: set[str] = set()
        self.context: dict[str, Any] = {}
        self.ended: str | None = None  # "cut" or "end" once a fault ended the body

    def feed(self, chunk: bytes) -> list[bytes]:
        if self.raw:
            return [chunk]
        self.buffer += chunk
        out: list[bytes] = []
        while not self.ended:
            end = self.event_end(self.buffer)
            if end < 0:
                break
            raw = bytes(self.buffer[:end])
            del self.buffer[:end]
            out += self.event(self.parse(raw))
            if self.raw:
                out.append(bytes(self.buffer))
                self.buffer.clear()
                break
        if len(self.buffer) > MAX_EVENT:
            self.raw = True
            out.append(bytes(self.buffer))
            self.buffer.clear()
        return out

    def finish(self) -> list[bytes]:
        rest = bytes(self.buffer)
        self.buffer.clear()
        return [rest] if rest and not self.ended else []

    def event(self, event: Event) -> list[bytes]:
        data = event.data
        if isinstance(data, dict) and isinstance(data.get("response"), dict):
            self.context["response"] = data["response"]
        started = tool_start(data)
        if started is not None and self.call_id is None:
            self.call_id = started
            self.fault = self.chaos.draw_ending()
            self.chaos.stats.tool_call_streams += 1
            if self.fault is None and not self.chaos.rates.refragment:
                self.raw = True
                return [event.raw]
        piece = fragment(data)
        if not piece:
            return [event.raw]
        if self.fault is not None:
            return self.end(event, piece)
        return self.refragment(event, piece)

    def end(self, event: Event, piece: str) -> list[bytes]:
        fault, self.fault = self.fault, None
        assert fault is not None
        self.chaos.stats.record(self.request_id, self.call_id or "?", fault)
        half = event.encode(with_fragment(event.data, pieces_of(piece)[0], first=True))
        if fault == "cut_mid_arguments":
            self.ended = "cut"
            return [half]
        self.ended = "end"
        return [half, *length_stop(event, self.context)]

    def refragment(self, event: Event, piece: str) -> list[bytes]:
        pieces = pieces_of(piece)
        if len(pieces) < 2:
            return [event.raw]
        call = self.call_id or "?"
        if call not in self.refragmented:
            self.refragmented.add(call)
            self.chaos.stats.record(self.request_id, call, "refragment")
        return [event.encode(with_fragment(event.data, p, first=i == 0)) for i, p in enumerate(pieces)]


class Chaos:
    def __init__(self, *, upstream: str, rates: Rates, seed: int | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self.rates = rates
        self.random = random.Random(seed)
        self.stats = Stats()
        self._ids = itertools.count(1)
        self.session: Any = None

    def draw_ending(self) -> str | None:
        draw = self.random.random()
        if draw < self.rates.cut_mid_arguments:
            return "cut_mid_arguments"
        if draw < self.rates.cut_mid_arguments + self.rates.truncate:
            return "truncate"
        return None

    def draw_buffer(self) -> bool:
        return bool(self.rates.buffer) and self.random.random() < self.rates.buffer

    async def handle(self, request: Any) -> Any:
        from aiohttp import ClientError, web

        if request.path == STATS_PATH:
            return web.json_response(self.stats.as_json())
        self.stats.requests += 1
        request_id = f"r{next(self._ids)}"
        response = web.StreamResponse()
        try:
            return await self.forward(request, request_id, response)
        except ConnectionResetError:
            _log.debug("chaos request=%s: the client went away", request_id)
        except (ClientError, asyncio.TimeoutError, OSError) as error:
            if not response.prepared:
                _log.warning("chaos request=%s: upstream unreachable (%s)", request_id, type(error).__name__)
                message = {"type": "chaos_upstream_error", "message": type(error).__name__}
                return web.json_response({"error": message}, status=502)
            # The upstream broke mid-body: the client sees the same break, not a clean end.
            _log.info("chaos request=%s: upstream body broke (%s)", request_id, type(error).__name__)
        if request.transport is not None:
            request.transport.close()
        return response

    async def forward(self, request: Any, request_id: str, response: Any) -> Any:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        async with self.session.request(
            request.method,
            self.upstream + request.rel_url.raw_path_qs,
            headers=headers,
            data=request.content if request.body_exists else None,
            allow_redirects=False,
        ) as upstream:
            response.set_status(upstream.status, upstream.reason)
            # A body the proxy may rewrite cannot keep the upstream's length.
            dropped = HOP_BY_HOP | ({"content-length"} if self.may_rewrite(upstream) else set())
            for name, value in upstream.headers.items():
                if name.lower() not in dropped:
                    response.headers.add(name, value)
            await response.prepare(request)
            await self.relay(request, request_id, upstream, response)
            return response

    def may_rewrite(self, upstream: Any) -> bool:
        """Faults apply to streamed, uncompressed bodies only."""
        encoded = upstream.headers.get("Content-Encoding", "identity") not in ("", "identity")
        return framing_of(upstream) is not None and self.rates.active and not encoded

    async def relay(self, request: Any, request_id: str, upstream: Any, response: Any) -> None:
        framing = framing_of(upstream)
        if framing is not None:
            self.stats.streamed += 1
        if not self.may_rewrite(upstream):
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return
        assert framing is not None
        if self.draw_buffer():
            await self.hold(request_id, upstream, response, framing)
            return
        injector = Injector(self, request_id, framing)
        async for chunk in upstream.content.iter_any():
            for data in injector.feed(chunk):
                if data:
                    await response.write(data)
            if injector.ended:
                break
        if injector.ended == "cut":
            request.transport.close()  # what was written is flushed, then the connection drops
            return
        for data in injector.finish():
            await response.write(data)
        await response.write_eof()

    async def hold(self, request_id: str, upstream: Any, response: Any, framing: str) -> None:
        """Hold the whole body (this fault alone keeps it in memory), then release it at once."""
        started = asyncio.get_running_loop().time()
        held = bytearray()
        async for chunk in upstream.content.iter_any():
            held += chunk
        call_id = first_call_id(bytes(held), framing) or "-"
        self.stats.record(request_id, call_id, "buffer")
        wait = self.rates.buffer_hold - (asyncio.get_running_loop().time() - started)
        if wait > 0:
            await asyncio.sleep(wait)
        await response.write(bytes(held))
        await response.write_eof()


def framing_of(upstream: Any) -> str | None:
    content_type = upstream.headers.get("Content-Type", "")
    if content_type.startswith(SSE_TYPE):
        return "sse"
    return "eventstream" if content_type.startswith(EVENTSTREAM_TYPE) else None


def first_call_id(body: bytes, framing: str) -> str | None:
    end_of, parse = FRAMINGS[framing]
    rest = bytearray(body)
    while (end := end_of(rest)) > 0:
        started = tool_start(parse(bytes(rest[:end])).data)
        if started is not None:
            return started
        del rest[:end]
    return None


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="otel-toolcalls chaos",
        description="A fault-injecting proxy for staging: forwards every request unchanged, streams the "
        "response back, and injects faults at tool-call boundaries of streamed responses.",
        epilog=f"Injected faults: one log line each on stderr, counts at GET {STATS_PATH}.",
    )
    parser.add_argument("--listen", default="127.0.0.1:8089", help="host:port to listen on")
    parser.add_argument(
        "--upstream", required=True, help="the provider's base URL, e.g. https://api.openai.com"
    )
    for name in ("cut-mid-arguments", "truncate", "buffer"):
        parser.add_argument(
            f"--{name}",
            type=float,
            default=0.0,
            metavar="RATE",
            help="share of streamed responses with a tool call (buffer: of all), 0..1; default 0",
        )
    parser.add_argument("--refragment", action="store_true", help="re-split argument fragments")
    parser.add_argument(
        "--buffer-hold",
        type=float,
        default=0.3,
        metavar="SECONDS",
        help="a held body is released no sooner than this after the request (default 0.3)",
    )
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(list(argv))
    if args.cut_mid_arguments + args.truncate > 1:
        parser.error("--cut-mid-arguments and --truncate together cannot exceed 1")
    return args


def make_app(chaos: Chaos) -> Any:
    from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

    async def session(app: Any) -> Any:
        chaos.session = ClientSession(
            connector=TCPConnector(limit=0),
            auto_decompress=False,
            timeout=ClientTimeout(total=None, sock_connect=30),
            skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
        )
        yield
        await chaos.session.close()
        print(
            "chaos summary:",
            json.dumps({k: v for k, v in chaos.stats.as_json().items() if k != "injected"}),
            file=sys.stderr,
            flush=True,
        )

    app = web.Application()
    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/{tail:.*}", chaos.handle)
    return app


def main(argv: Sequence[str]) -> int:
    from aiohttp import web

    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    rates = Rates(args.cut_mid_arguments, args.truncate, args.buffer, args.refragment, args.buffer_hold)
    chaos = Chaos(upstream=args.upstream, rates=rates, seed=args.seed)
    host, _, port = args.listen.rpartition(":")
    print(
        f"chaos listening on http://{host}:{port} -> upstream {args.upstream.split('?')[0]}",
        file=sys.stderr,
        flush=True,
    )
    web.run_app(
        make_app(chaos),
        host=host or "127.0.0.1",
        port=int(port),
        print=None,
        access_log=None,
        shutdown_timeout=1.0,
    )
    return 0
