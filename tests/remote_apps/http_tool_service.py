"""The tool service: a Starlette app under uvicorn, wrapped in the ASGI instrumentation's middleware
as its docs show, that runs each call it is sent inside ``execute_tool(call_id)`` in the context the
middleware extracted. Run as ``opentelemetry-instrument python http_tool_service.py``.

``POST /tools/get_weather`` with ``{"call_id": ...}`` (or null). The tool body appends the id (a
JSON string) to the file named by ``TOOL_RAN_LOG`` (the side effect the test reads); the answer
says what the server saw: the ``toolcall`` header values it received, ``tool_call_outcome``, its
execution span's id.
"""

from __future__ import annotations

import json
import logging
import os
import socket

import uvicorn
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome


def get_weather(call_id: str | None) -> dict[str, int]:
    with open(os.environ["TOOL_RAN_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(call_id) + "\n")  # one line, whatever the id holds
    return {"temperature_c": 21}


async def run_tool(request: Request) -> JSONResponse:
    call_id = (await request.json())["call_id"]  # None: execute_tool takes the carried call's id
    outcome = tool_call_outcome(call_id) if call_id else None
    seen = {"toolcall": request.headers.getlist("toolcall"), "outcome": outcome}
    try:
        with execute_tool(call_id, name="get_weather") as span:
            seen["span_id"] = format(span.get_span_context().span_id, "016x")
            seen["result"] = get_weather(call_id)
    except IncompleteToolCallError:
        return JSONResponse({**seen, "refused": True}, status_code=409)
    return JSONResponse(seen)


app = OpenTelemetryMiddleware(Starlette(routes=[Route("/tools/get_weather", run_tool, methods=["POST"])]))


def main() -> None:
    # The package's debug log shows any exception it kept from the app (the test looks for none).
    logging.basicConfig(format="%(name)s %(levelname)s %(message)s")
    logging.getLogger("otel_toolcalls").setLevel(logging.DEBUG)
    # Bound and listening before the port is printed: a client's first connection waits in the backlog.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"LISTENING {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])


if __name__ == "__main__":
    main()
