"""An OTLP/HTTP traces receiver on 127.0.0.1 for the tests that read what the standard exporter
sends (tests/downstream/test_otlp_e2e.py, the remote-tool tests): it keeps every decoded
``ExportTraceServiceRequest``."""

from __future__ import annotations

import contextlib
import gzip
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


class Receiver:
    """OTLP/HTTP traces endpoint: keeps every decoded ExportTraceServiceRequest. With ``hold_first``
    it answers the first request only once ``release`` is set (``holding`` says it arrived): an
    exporter stuck on a slow backend."""

    def __init__(self, hold_first: bool = False) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.content_types: list[str] = []
        self.holding = threading.Event()
        self.release = threading.Event()
        if not hold_first:
            self.holding.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                message = ExportTraceServiceRequest()
                message.ParseFromString(body)
                if not receiver.holding.is_set():
                    receiver.holding.set()
                    receiver.release.wait(60)
                receiver.requests.append(message)
                receiver.content_types.append(self.headers.get("Content-Type", ""))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, name="otlp-receiver", daemon=True)

    def spans(self) -> list[tuple[dict[str, Any], str, Span]]:
        """(resource attributes, scope name, span) for every received span."""
        out = []
        for message in self.requests:
            for resource_spans in message.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    out += [(resource, scope_spans.scope.name, span) for span in scope_spans.spans]
        return out


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in pairs}


def typed(pairs: Any) -> dict[str, str | None]:
    """attribute -> protobuf value kind (int_value, string_value, ...)."""
    return {kv.key: kv.value.WhichOneof("value") for kv in pairs if isinstance(kv, KeyValue)}


@contextlib.contextmanager
def running(hold_first: bool = False) -> Iterator[Receiver]:
    server = Receiver(hold_first)
    server.thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.server.shutdown()
        server.server.server_close()
