"""An agent and a tool service in two processes over HTTP: the call's outcome travels with it.

The agent streams two complete tool calls and one cut mid-arguments (the package's fake provider,
no API key) and sends each to the tool service with httpx, inside ``tool_call_context(call_id)``.
The ``toolcalls`` propagator adds the call's outcome and its tool_call span to the request
headers; the service (Starlette under uvicorn, in the ASGI instrumentation's middleware) runs
``execute_tool(call_id)`` in the context the middleware extracted: its execution spans link to the
agent's tool_call spans, and, in strict mode, the cut call is refused before the tool runs.

    python examples/remote_tools.py

starts the service (``remote_tools.py serve``, a child process) and runs the agent. The agent's
spans go to stdout, the service's to stderr. With ``opentelemetry-instrument``, the same is
configuration only: ``OTEL_PROPAGATORS=tracecontext,baggage,toolcalls`` on both sides.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import TextIO

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from otel_toolcalls import ToolCallsInstrumentor, install_propagator

ARGS = '{"location": "Zürich", "days": 3}'


def setup(service: str, *, strict: bool, out: TextIO) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
    trace.set_tracer_provider(provider)
    install_propagator()  # what OTEL_PROPAGATORS=tracecontext,baggage,toolcalls does
    ToolCallsInstrumentor().instrument(strict=strict)
    return provider


# -- the tool service ------------------------------------------------------------------------------


def serve() -> None:
    import uvicorn
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from otel_toolcalls import IncompleteToolCallError, execute_tool

    setup("remote-tools-service", strict=True, out=sys.stderr)

    async def get_weather(request: Request) -> JSONResponse:
        body = await request.json()
        try:
            with execute_tool(body["call_id"], name="get_weather"):
                # Reached only for a call that may run: the cut call's arguments are half a JSON text.
                location = json.loads(body["arguments"])["location"]
                return JSONResponse({"result": f"sunny in {location}"})
        except IncompleteToolCallError as refused:
            return JSONResponse({"refused": str(refused)}, status_code=409)

    routes = [Route("/tools/get_weather", get_weather, methods=["POST"])]
    app = OpenTelemetryMiddleware(Starlette(routes=routes))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(sock.getsockname()[1], flush=True)  # the port, for the agent
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])


# -- the agent -------------------------------------------------------------------------------------


def stream_calls() -> list[tuple[str, str]]:
    """(call id, arguments as streamed) of two complete calls and one cut mid-arguments."""
    import openai

    from otel_toolcalls.testing import FakeProvider
    from otel_toolcalls.testing.openai_chat import ToolCall, request, tool_call_script

    complete = [ToolCall("get_weather", ARGS, id="call_1"), ToolCall("get_weather", ARGS, id="call_2")]
    cut = ToolCall("get_weather", ARGS, id="call_3", fragments=['{"loca', 'tion": "Zü', 'rich", "days": 3}'])
    calls: dict[str, str] = {}  # OpenAI streams one call after the other: the last id is the current one
    with FakeProvider() as fake:
        client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
        fake.enqueue(tool_call_script(complete), tool_call_script([cut], cut_after=3))
        for _ in range(2):
            try:
                for chunk in client.chat.completions.create(**request()):
                    for choice in chunk.choices:
                        for tc in choice.delta.tool_calls or []:
                            current = tc.id or list(calls)[-1]
                            fragment = (tc.function and tc.function.arguments) or ""
                            calls[current] = calls.get(current, "") + fragment
            except openai.APIConnectionError:
                pass  # the stream broke mid-arguments; this careless agent hands the call on anyway
    return list(calls.items())


def agent() -> None:
    import httpx
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    from otel_toolcalls import tool_call_context, tool_call_outcome

    provider = setup("remote-tools-agent", strict=False, out=sys.stdout)
    HTTPXClientInstrumentor().instrument()
    service = subprocess.Popen([sys.executable, __file__, "serve"], stdout=subprocess.PIPE, text=True)
    try:
        assert service.stdout is not None
        base_url = f"http://127.0.0.1:{service.stdout.readline().strip()}"
        with trace.get_tracer("remote-tools-example").start_as_current_span("agent turn"):
            calls = stream_calls()
            with httpx.Client(base_url=base_url, timeout=30) as client:
                for call_id, arguments in calls:
                    body = {"call_id": call_id, "arguments": arguments}
                    with tool_call_context(call_id):  # the call this request executes
                        answer = client.post("/tools/get_weather", json=body)
                    outcome = tool_call_outcome(call_id)
                    print(f"{call_id}: {outcome} here; service answered {answer.status_code}")
    finally:
        service.terminate()
        service.wait(timeout=30)
        provider.shutdown()


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
    else:
        agent()
