"""A fake LLM provider on 127.0.0.1 that writes real wire bytes, one socket write at a time.

Each request is answered by the next queued ``Script``: a status, headers, and a list of body
writes, each sent as its own HTTP/1.1 chunk with TCP_NODELAY and an optional pause, so the client
receives fragments separately. A script can end cleanly, or be cut: the socket closes in the
middle of the body, as when a proxy or the network drops the connection.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any


@dataclass
class Script:
    writes: list[bytes]
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    # Seconds to wait between writes (pacing) and before the first body byte.
    pace: float = 0.0
    first_byte_delay: float = 0.0
    # "done": the body ends cleanly; "cut": the socket closes after `writes`, mid-body.
    end: str = "done"
    # Send every write at once after first_byte_delay, as a buffering proxy would.
    burst: bool = False


@dataclass
class ReceivedRequest:
    """An HTTP request the fake server read off the wire."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = sock.makefile("rb")
        request = _read_request(reader)
        if request is None:
            return
        self.server.owner.requests.append(request)
        script = self.server.owner.next_script(request)
        _write_response(sock, script)


def _read_request(reader: Any) -> ReceivedRequest | None:
    line = reader.readline()
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        header = reader.readline().decode("latin-1")
        if header in ("\r\n", "\n", ""):
            break
        name, _, value = header.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = reader.read(length) if length else b""
    return ReceivedRequest(method, path, headers, body)


def _write_response(sock: socket.socket, script: Script) -> None:
    head = [
        f"HTTP/1.1 {script.status} Fake",
        f"Content-Type: {script.content_type}",
        "Transfer-Encoding: chunked",
        "Connection: close",
    ]
    head += [f"{k}: {v}" for k, v in script.headers.items()]
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if script.first_byte_delay:
            time.sleep(script.first_byte_delay)
        writes = [b"".join(script.writes)] if script.burst and script.writes else script.writes
        for i, data in enumerate(writes):
            if i and script.pace:
                time.sleep(script.pace)
            if data:
                sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))
        if script.end == "cut":
            # Close mid-body: no terminating chunk, the client sees the connection drop.
            sock.shutdown(socket.SHUT_RDWR)
            return
        sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the client went away (closed the stream early): nothing to report


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FakeProvider


class FakeProvider:
    """``with FakeProvider() as fake: fake.enqueue(script); client(base_url=fake.base_url)``."""

    def __init__(self, default: Script | None = None) -> None:
        # `default` answers every request when no script is queued (benchmarks, load).
        self.default = default
        self._scripts: deque[Script] = deque()
        self._lock = threading.Lock()
        self.requests: list[ReceivedRequest] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._websocket: Any = None

    def enqueue(self, *scripts: Script) -> FakeProvider:
        with self._lock:
            self._scripts.extend(scripts)
        return self

    def next_script(self, request: ReceivedRequest) -> Script:
        with self._lock:
            if self._scripts:
                return self._scripts.popleft()
            if self.default is not None:
                return self.default
        body = json.dumps({"error": {"message": f"no script queued for {request.path}"}}).encode()
        return Script([body], status=500, content_type="application/json")

    def reset(self) -> None:
        """Forget queued scripts and recorded requests (one server shared by several tests)."""
        with self._lock:
            self._scripts.clear()
        self.requests.clear()
        if self._websocket is not None:
            self._websocket.reset()

    @property
    def websocket(self) -> Any:
        """The WebSocket endpoint (``_websocket.WebSocketEndpoint``), started at the first use:
        point a client's ``websocket_base_url`` at ``fake.websocket.base_url``."""
        if self._websocket is None:
            from ._websocket import WebSocketEndpoint

            self._websocket = WebSocketEndpoint().start()
        return self._websocket

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeProvider is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeProvider:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-provider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._websocket is not None:
            self._websocket.stop()
            self._websocket = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
