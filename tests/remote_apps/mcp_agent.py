"""The agent side of tests/linking/test_remote_mcp.py, in a process of its own.

    python mcp_agent.py {http URL | stdio SERVER-COMMAND-JSON} SPANS FAKE-BASE-URL

Streams two tool calls from the package's fake provider through the openai SDK (``call_ok``
completes, ``call_cut`` is cut mid-arguments), then calls the MCP server's tool: once inside each
call's ``tool_call_context``, once outside any call, and with malformed ``_meta.toolcall`` values.
Prints one JSON line: what each call returned. Spans go to SPANS as JSON lines; the propagators come
from ``OTEL_PROPAGATORS``, as a deployment sets them.
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import replace
from typing import Any

from span_file import export_spans

from otel_toolcalls import ToolCallsInstrumentor, tool_call_context

TRANSPORT, TARGET, SPANS, FAKE = sys.argv[1:5]

export_spans(SPANS, "mcp-agent")
ToolCallsInstrumentor().instrument()

import anyio  # noqa: E402 (after instrument(), as opentelemetry-instrument orders it)
import httpx  # noqa: E402
import openai  # noqa: E402
from mcp import ClientSession  # noqa: E402

from otel_toolcalls.testing.openai_chat import WEATHER, request  # noqa: E402

OK = replace(WEATHER, id="call_ok")
CUT = replace(WEATHER, id="call_cut")
VALID = "00-completed-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-"
# What a hostile or broken client may send in _meta (each outside any call, so that only this
# reaches the server).
MALFORMED: dict[str, dict[str, Any]] = {
    "garbage": {"toolcall": "not a header"},
    "unknown-outcome": {"toolcall": VALID.replace("completed", "maybe") + "call_x"},
    "zero-trace-id": {"toolcall": "00-completed-" + "0" * 32 + "-00f067aa0ba902b7-call_x"},
    "oversized": {"toolcall": VALID + "a" * 4096},
    "long-id": {"toolcall": VALID + "a" * 300},
    "number": {"toolcall": 5},
    "list": {"toolcall": [VALID + "call_x", VALID + "call_y"]},
    "object": {"toolcall": {"outcome": "completed"}},
    "traceparent-number": {"traceparent": 7, "tracestate": ["x"], "baggage": {"a": 1}},
}


def stream(fake_url: str) -> None:
    """The test queued a complete call, then one cut mid-arguments."""
    client = openai.OpenAI(base_url=fake_url + "/v1", api_key="sk-fake", max_retries=0)
    list(client.chat.completions.create(**request()))
    # openai 3.x raises APIConnectionError, earlier releases the transport's own error.
    with contextlib.suppress(openai.APIConnectionError, httpx.TransportError):
        list(client.chat.completions.create(**request()))


def result_of(result: Any) -> dict[str, Any]:
    error = getattr(result, "is_error", getattr(result, "isError", None))
    texts = [getattr(block, "text", "") for block in result.content]
    return {"is_error": error, "text": " ".join(texts)}


async def calls(session: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    await session.initialize()
    for call in (OK, CUT):
        with tool_call_context(call.id):
            out[call.id] = result_of(await session.call_tool("get_weather", {"location": call.id}))
    out["outside"] = result_of(await session.call_tool("get_weather", {"location": "outside"}))
    for label, meta in MALFORMED.items():
        out[label] = result_of(await session.call_tool("get_weather", {"location": label}, meta=meta))
    return out


async def main() -> None:
    async with contextlib.AsyncExitStack() as stack:
        if TRANSPORT == "http":
            from mcp.client.streamable_http import streamable_http_client

            streams = await stack.enter_async_context(streamable_http_client(TARGET))
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command = json.loads(TARGET)
            argv = command["argv"]
            server = StdioServerParameters(command=argv[0], args=argv[1:], env=command["env"])
            streams = await stack.enter_async_context(stdio_client(server))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        results = await calls(session)
    print("RESULTS " + json.dumps(results), flush=True)


if __name__ == "__main__":
    stream(FAKE)
    anyio.run(main)
