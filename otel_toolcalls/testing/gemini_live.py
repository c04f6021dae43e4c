"""Gemini Live (``BidiGenerateContent`` over WebSocket): the server messages google-genai's
``AsyncSession`` parses, as one connection's script for ``fake.websocket``.

``session`` waits for the client's ``setup`` and answers ``setupComplete``, then plays its steps:
server messages (``text``, ``tool_call``, ``cancellation``, ``usage``, ``turn_complete``),
``Await("client_content")`` / ``Await("tool_response")`` for what the client sends, ``Drop()``
(the socket dies, no close frame) or ``Close()`` (a clean close handshake).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

from ._tls import self_signed, server_context
from ._websocket import Await, Close, Drop, Frames, Step

__all__ = [
    "MODEL",
    "WEATHER",
    "Await",
    "Close",
    "Drop",
    "Frames",
    "FunctionCall",
    "LiveEndpoint",
    "cancellation",
    "session",
    "text",
    "tool_call",
    "turn_complete",
    "usage",
]  # fmt: skip

MODEL = "gemini-live-2.5-flash-preview"


@dataclass(frozen=True)
class FunctionCall:
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = "fc_1"

    def wire(self) -> dict[str, Any]:
        call: dict[str, Any] = {"name": self.name, "args": self.args}
        if self.call_id is not None:
            call["id"] = self.call_id
        return call


def tool_call(*calls: FunctionCall) -> dict[str, Any]:
    return {"toolCall": {"functionCalls": [call.wire() for call in calls]}}


def cancellation(*ids: str) -> dict[str, Any]:
    return {"toolCallCancellation": {"ids": list(ids)}}


def text(value: str) -> dict[str, Any]:
    return {"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": value}]}}}


def turn_complete(reason: str | None = None) -> dict[str, Any]:
    content: dict[str, Any] = {"turnComplete": True}
    if reason is not None:
        content["turnCompleteReason"] = reason
    return {"serverContent": content}


def usage(prompt: int, response: int) -> dict[str, Any]:
    counts = {
        "promptTokenCount": prompt,
        "responseTokenCount": response,
        "totalTokenCount": prompt + response,
    }
    return {"usageMetadata": counts}


def session(*steps: Step, pace: float = 0.0, fragment_at: tuple[float, ...] = ()) -> Frames:
    """One connection: the setup handshake, then ``steps``."""
    return Frames([Await("setup"), {"setupComplete": {}}, *steps], pace=pace, fragment_at=fragment_at)


WEATHER = FunctionCall("get_weather", {"city": "Zürich", "days": 14, "unit": "celsius"}, "fc_weather_1")


class LiveEndpoint:
    """A wss:// endpoint on 127.0.0.1 with a certificate made for it: ``client_options()`` are the
    ``http_options`` that point a ``genai.Client`` at it and trust that certificate."""

    def __init__(self) -> None:
        from ._websocket import WebSocketEndpoint

        server_context, self._client_context = _tls_contexts()
        self.websocket = WebSocketEndpoint(ssl_context=server_context).start()

    def enqueue(self, *scripts: Frames) -> LiveEndpoint:
        self.websocket.enqueue(*scripts)
        return self

    def client_options(self, *, vertex: bool = False) -> dict[str, Any]:
        """``vertex``: for ``genai.Client(vertexai=True, http_options=...)`` with no project or
        credentials, which google-genai treats as an API gateway: it connects to ``base_url`` as is."""
        port = self.websocket.port
        where = f"wss://127.0.0.1:{port}/vertex" if vertex else f"https://127.0.0.1:{port}"
        return {"base_url": where, "async_client_args": {"ssl": self._client_context}}

    def received(self, key: str) -> list[Any]:
        """What the client sent under ``key`` (``setup``, ``client_content``, ``tool_response``)."""
        return [event[key] for event in self.websocket.received if isinstance(event, dict) and key in event]

    def reset(self) -> None:
        self.websocket.reset()

    def stop(self) -> None:
        self.websocket.stop()


def _tls_contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A throwaway self-signed certificate for 127.0.0.1: the server's context, and a client's
    that trusts it."""
    pem, key_pem = self_signed()
    return server_context(pem, key_pem), ssl.create_default_context(cadata=pem.decode("ascii"))
