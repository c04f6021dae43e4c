"""A fake Bedrock bidirectional stream (``InvokeModelWithBidirectionalStream``, Nova Sonic) on
127.0.0.1: TLS with a certificate made for it, HTTP/2 (ALPN ``h2``), AWS event-stream frames both
ways, so the smithy-based ``aws-sdk-bedrock-runtime`` client connects through the AWS CRT as it
does to AWS (SigV4 signing with any credentials; the fake checks only that requests are signed).

The client's frames are read as the service reads them: each is a signed envelope whose payload is
a ``chunk`` event, ``{"bytes": base64}`` of a Nova input event. Each time the client ends a USER or
TOOL content (its ``contentEnd``), the fake sends its next reply: Nova output events, each one
``chunk`` frame, or a fault: ``DROP`` (the connection closes between two frames) or ``CUT`` (the
next frame is cut in half, then the connection closes).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import eventstream
from ._tls import self_signed, server_context

DROP = "drop"
CUT = "cut"
Reply = list[Any]  # Nova output events (dicts) and faults (DROP, CUT)


# -- Nova Sonic output events ------------------------------------------------------------------


def content_start(content_id: str, kind: str = "TEXT", role: str = "ASSISTANT") -> dict[str, Any]:
    fields = json.dumps({"generationStage": "SPECULATIVE"})
    return {
        "contentStart": {"contentId": content_id, "type": kind, "role": role, "additionalModelFields": fields}
    }


def text_output(content_id: str, text: str, role: str = "ASSISTANT") -> dict[str, Any]:
    return {"textOutput": {"contentId": content_id, "content": text, "role": role}}


def tool_use(content_id: str, name: str, call_id: str, arguments: Any) -> dict[str, Any]:
    return {"toolUse": {"contentId": content_id, "toolName": name, "toolUseId": call_id,
                        "content": json.dumps(arguments), "role": "TOOL"}}  # fmt: skip


def content_end(content_id: str, kind: str = "TEXT", stop_reason: str = "PARTIAL_TURN") -> dict[str, Any]:
    return {"contentEnd": {"contentId": content_id, "type": kind, "stopReason": stop_reason}}


def tool_block(
    content_id: str, name: str, call_id: str, arguments: Any, stop_reason: str = "TOOL_USE"
) -> Reply:
    """A whole tool block: its start, its ``toolUse``, its end with ``stop_reason``."""
    return [content_start(content_id, "TOOL", "TOOL"), tool_use(content_id, name, call_id, arguments),
            content_end(content_id, "TOOL", stop_reason)]  # fmt: skip


def spoken(content_id: str, text: str) -> Reply:
    """An assistant answer: its text, then its audio content ending the turn (``END_TURN``)."""
    audio = f"{content_id}_audio"
    return [
        content_start(content_id),
        text_output(content_id, text),
        content_end(content_id, "TEXT", "PARTIAL_TURN"),
        content_start(audio, "AUDIO"),
        content_end(audio, "AUDIO", "END_TURN"),
    ]


def frame(event: dict[str, Any]) -> bytes:
    """One Nova output event as the service frames it: a ``chunk`` event, its JSON payload
    ``{"bytes": base64 of {"event": ...}}``."""
    raw = json.dumps({"event": event}).encode()
    return eventstream.event("chunk", {"bytes": base64.b64encode(raw).decode("ascii")})


# -- the client's frames -------------------------------------------------------------------------


def split_messages(buffer: bytearray) -> list[bytes]:
    """The whole event-stream messages at the head of ``buffer`` (removed from it)."""
    messages = []
    while len(buffer) >= 4:
        (total,) = struct.unpack("!I", buffer[:4])
        if len(buffer) < total:
            break
        messages.append(bytes(buffer[:total]))
        del buffer[:total]
    return messages


def payload_of(message: bytes) -> bytes:
    total, headers_length = struct.unpack("!II", message[:8])
    return message[12 + headers_length : total - 4]


def input_event(envelope: bytes) -> dict[str, Any] | None:
    """The Nova input event a signed envelope carries (None: the empty end frame)."""
    inner = payload_of(envelope)
    if not inner:
        return None
    chunk = json.loads(payload_of(inner) or b"{}")
    document = json.loads(base64.b64decode(chunk.get("bytes", "")) or b"{}")
    event = document.get("event")
    return event if isinstance(event, dict) else None


# -- the server ----------------------------------------------------------------------------------


@dataclass
class Exchange:
    """What one stream (one HTTP/2 request) received."""

    path: str
    headers: dict[str, str]
    events: list[dict[str, Any]] = field(default_factory=list)


class NovaSonicServer:
    """``with NovaSonicServer([reply, ...]) as fake:``; ``fake.endpoint`` is the client's
    ``endpoint_uri``, ``fake.ca_pem`` the certificate to trust (``crt_transport`` does)."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.exchanges: list[Exchange] = []
        self.ca_pem, key_pem = self_signed()
        self._context = server_context(self.ca_pem, key_pem, ["h2"])
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nova-sonic-fake", daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> NovaSonicServer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _start(self) -> asyncio.Server:
        return await self._loop.create_server(lambda: _Connection(self), "127.0.0.1", 0, ssl=self._context)

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            # On the loop's thread: asyncio.Server is not thread-safe, and a close from here raced a
            # connection's end (both woke its waiters: "'NoneType' object is not iterable").
            self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def next_reply(self) -> Reply:
        return self.replies.pop(0) if self.replies else []


class _Connection(asyncio.Protocol):
    def __init__(self, owner: NovaSonicServer) -> None:
        import h2.config
        import h2.connection

        self.owner = owner
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        )
        self.transport: Any = None
        self.streams: dict[int, tuple[Exchange, bytearray, dict[str, str]]] = {}

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.h2.initiate_connection()
        self._flush()

    def data_received(self, data: bytes) -> None:
        import h2.events
        import h2.exceptions

        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self._request(event.stream_id, {str(k): str(v) for k, v in event.headers})
            elif isinstance(event, h2.events.DataReceived):
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                self._data(event.stream_id, event.data)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id in self.streams:
                self.h2.end_stream(event.stream_id)
        self._flush()

    def _flush(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(self.h2.data_to_send())

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def _request(self, stream_id: int, headers: dict[str, str]) -> None:
        exchange = Exchange(headers.get(":path", ""), headers)
        self.owner.exchanges.append(exchange)
        self.streams[stream_id] = (exchange, bytearray(), {})
        signed = headers.get("authorization", "").startswith("AWS4-HMAC-SHA256")
        status = "200" if signed else "403"
        self.h2.send_headers(stream_id, [(":status", status), ("content-type", eventstream.CONTENT_TYPE),
                                         ("x-amzn-requestid", f"fake-{stream_id}")])  # fmt: skip

    def _data(self, stream_id: int, data: bytes) -> None:
        exchange, buffer, roles = self.streams[stream_id]
        buffer += data
        for envelope in split_messages(buffer):
            event = input_event(envelope)
            if event is None:
                continue
            exchange.events.append(event)
            kind, body = next(iter(event.items()))
            if kind == "contentStart":
                roles[body.get("contentName", "")] = body.get("role", "")
            elif kind == "contentEnd" and roles.get(body.get("contentName", "")) in ("USER", "TOOL"):
                self._reply(stream_id, self.owner.next_reply())

    def _reply(self, stream_id: int, reply: Reply) -> None:
        import h2.exceptions

        # The client may end the stream or the connection first: the rest is not wanted.
        with contextlib.suppress(h2.exceptions.H2Error):
            self._send(stream_id, reply)

    def _send(self, stream_id: int, reply: Reply) -> None:
        cut = False
        for item in reply:
            if self.transport is None:
                return
            if item == DROP:
                self._flush()
                self.transport.close()
                return
            if item == CUT:
                cut = True
                continue
            data = frame(item)
            if cut:
                self.h2.send_data(stream_id, data[: len(data) // 2])
                self._flush()
                self.transport.close()
                return
            self.h2.send_data(stream_id, data)
        self._flush()


def trust(client: Any, ca_pem: bytes) -> Any:
    """The SDK's own CRT HTTP client (``AWSCRTHTTPClient``), made to trust the fake's certificate
    as it trusts AWS's; returned."""
    from awscrt import io as crt_io

    options = crt_io.TlsContextOptions()
    options.override_default_trust_store(ca_pem)
    client._tls_ctx = crt_io.ClientTlsContext(options)
    return client


def crt_transport(ca_pem: bytes) -> Any:
    """A new CRT HTTP client of the SDK's, trusting the fake's certificate."""
    from smithy_http.aio.crt import AWSCRTHTTPClient

    return trust(AWSCRTHTTPClient(), ca_pem)


@contextlib.contextmanager
def strands_pointed_at(fake: NovaSonicServer) -> Iterator[None]:
    """Inside it, Strands' ``BedrockNovaSonicModel`` (which builds its config for AWS's endpoint)
    resolves it against the fake instead, its own CRT client trusting the fake's certificate."""
    from strands.bidi.models import bedrock as strands_bedrock

    config = strands_bedrock.AsyncBedrockRuntimeConfig

    class Pointed(config):  # type: ignore[misc,valid-type]
        @classmethod
        async def resolve(cls, **overrides: Any) -> Any:
            overrides["endpoint_uri"] = fake.endpoint
            trust(overrides["transport"], fake.ca_pem)
            return await config.resolve(**overrides)

    strands_bedrock.AsyncBedrockRuntimeConfig = Pointed
    try:
        yield
    finally:
        strands_bedrock.AsyncBedrockRuntimeConfig = config
