"""The fake provider's WebSocket endpoint (the ``websockets`` package's server, on 127.0.0.1): each
connection plays the next queued ``Frames`` script, one WebSocket message at a time.

A script is a list of steps: a JSON text message to send (a dict, or the text itself), ``Await``
(read the client's events until one of that type arrives: ``response.create``, ``response.cancel``;
for messages without a type, their first key: ``setup``, ``tool_response``),
``Drop`` (the TCP connection closes with no close frame, as when the network drops it) or ``Close``
(a clean close handshake). After the last step the server reads until the client closes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ._fragments import split_at


@dataclass(frozen=True)
class Await:
    event_type: str


@dataclass(frozen=True)
class Drop:
    pass


@dataclass(frozen=True)
class Close:
    code: int = 1000


Step = dict[str, Any] | str | Await | Drop | Close


@dataclass
class Frames:
    steps: list[Step]
    # Seconds to wait between sent messages.
    pace: float = 0.0
    # Send each message as WebSocket fragments (continuation frames) cut at these relative points
    # (0 < point < 1) of its text: the client must reassemble the message before parsing it.
    fragment_at: tuple[float, ...] = ()


@dataclass
class WebSocketEndpoint:
    """``fake.websocket`` (started with the provider); ``base_url`` is the client's
    ``websocket_base_url``."""

    scripts: deque[Frames] = field(default_factory=deque)
    # Plays for every connection when no script is queued (benchmarks).
    default: Frames | None = None
    # What the clients sent (parsed JSON), and the request paths (with their query) they opened.
    received: list[Any] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    # An ``ssl.SSLContext``: the endpoint speaks wss:// (google-genai's Live client always does).
    ssl_context: Any = None
    _server: Any = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enqueue(self, *scripts: Frames) -> WebSocketEndpoint:
        with self._lock:
            self.scripts.extend(scripts)
        return self

    def reset(self) -> None:
        with self._lock:
            self.scripts.clear()
        self.received.clear()
        self.paths.clear()

    def received_types(self) -> list[str]:
        return [str(event.get("type")) for event in self.received if isinstance(event, dict)]

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the WebSocket endpoint is not started"
        scheme = "ws" if self.ssl_context is None else "wss"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    @property
    def port(self) -> int:
        assert self._server is not None, "the WebSocket endpoint is not started"
        return int(self._server.socket.getsockname()[1])

    def start(self) -> WebSocketEndpoint:
        from websockets.sync.server import serve

        # No compression, as the openai SDK asks for none: each message is one frame as written.
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, ssl=self.ssl_context)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-ws", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server = None

    def _next(self) -> Frames:
        with self._lock:
            return self.scripts.popleft() if self.scripts else (self.default or Frames([]))

    def _handle(self, ws: Any) -> None:
        self.paths.append(ws.request.path if ws.request is not None else "")
        script = self._next()
        try:
            for step in script.steps:
                if not self._play(ws, step, script):
                    return
            for message in ws:  # hold the connection until the client closes it
                self._record(message)
        except Exception:  # the client went away: nothing to report
            return

    def _play(self, ws: Any, step: Step, script: Frames) -> bool:
        if isinstance(step, Await):
            while True:
                if self._record(ws.recv()) == step.event_type:
                    return True
        if isinstance(step, Drop):
            ws.socket.shutdown(socket.SHUT_RDWR)
            return False
        if isinstance(step, Close):
            ws.close(step.code)
            return False
        text = step if isinstance(step, str) else json.dumps(step, ensure_ascii=False)
        if script.fragment_at:
            ws.send(split_at(text, [int(len(text) * at) for at in script.fragment_at]))
        else:
            ws.send(text)
        if script.pace:
            time.sleep(script.pace)
        return True

    def _record(self, message: Any) -> Any:
        try:
            event = json.loads(message)
        except ValueError:
            event = message
        self.received.append(event)
        if not isinstance(event, dict):
            return None
        # A message without "type" (Gemini Live's {"setup": ...}, {"tool_response": ...}) by its key.
        return event.get("type", next(iter(event), None))
