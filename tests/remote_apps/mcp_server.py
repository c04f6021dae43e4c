"""An MCP tool server in a process of its own, for tests/linking/test_remote_mcp.py.

    python mcp_server.py {high|low} {http|stdio} SPANS RAN

``high``: the SDK's high-level server (``FastMCP`` in mcp 1.x, ``MCPServer`` in 2.x); ``low``: its
low-level ``Server``. Over ``http`` (streamable HTTP under uvicorn, on a free 127.0.0.1 port it
prints as ``PORT <n>``) or ``stdio``. Its spans go to SPANS, one JSON object a line, as each ends;
each run of the tool appends a line to RAN: the location and the ``_meta`` the request carried
(the proof that a refused tool never ran, and of what the client injected). The propagators and
strict mode come from the environment (``OTEL_PROPAGATORS``, ``OTEL_TOOLCALLS_STRICT``), as a
deployment would set them; the package is instrumented before mcp is imported, as
``opentelemetry-instrument`` does.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Mapping
from typing import Any

from span_file import export_spans

from otel_toolcalls import ToolCallsInstrumentor

KIND, TRANSPORT, SPANS, RAN = sys.argv[1:5]

export_spans(SPANS, "mcp-tool-server")
ToolCallsInstrumentor().instrument()

import mcp.types as types  # noqa: E402 (after instrument(), as opentelemetry-instrument orders it)
from mcp.server.lowlevel import Server  # noqa: E402

try:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as HighLevel
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as HighLevel  # type: ignore[no-redef]

MAJOR_2 = hasattr(Server, "add_request_handler")


def ran(location: str, meta: Any) -> str:
    entries = meta if isinstance(meta, Mapping) else (getattr(meta, "model_extra", None) or {})
    seen = {k: v for k, v in entries.items() if k in ("toolcall", "traceparent")}
    with open(RAN, "a", encoding="utf-8") as out:
        out.write(json.dumps({"location": location, "meta": seen}) + "\n")
    return f"sunny in {location}"


def high_level() -> Any:
    server = HighLevel("weather")

    @server.tool()
    def get_weather(location: str, ctx: Context) -> str:  # type: ignore[type-arg]
        return ran(location, ctx.request_context.meta)

    return server


SCHEMA = {"type": "object", "properties": {"location": {"type": "string"}}}
TOOL = {"name": "get_weather", "inputSchema": SCHEMA}


def low_level() -> Any:
    if MAJOR_2:

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult.model_validate({"tools": [TOOL]})

        async def call_tool(ctx: Any, params: Any) -> Any:
            text = ran(params.arguments["location"], ctx.meta)
            return types.CallToolResult.model_validate({"content": [{"type": "text", "text": text}]})

        return Server("weather", on_list_tools=list_tools, on_call_tool=call_tool)
    server = Server("weather")

    @server.list_tools()
    async def list_tools_1() -> list[Any]:
        return [types.Tool.model_validate(TOOL)]

    @server.call_tool()
    async def call_tool_1(name: str, arguments: dict[str, Any]) -> list[Any]:
        text = ran(arguments["location"], server.request_context.meta)
        return [types.TextContent(type="text", text=text)]

    return server


async def serve_stdio(server: Any) -> None:
    if KIND == "high":
        await server.run_stdio_async()
        return
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(server: Any) -> Any:
    if KIND == "high" or MAJOR_2:
        return server.streamable_http_app()
    # mcp 1.x: a low-level server over streamable HTTP is mounted by hand, as its docs show.
    import contextlib

    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    manager = StreamableHTTPSessionManager(app=server)

    class Endpoint:  # an ASGI app, not a function: Starlette would treat that as a request handler
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)


def serve_http(server: Any) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(http_app(server), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    server = high_level() if KIND == "high" else low_level()
    if TRANSPORT == "http":
        serve_http(server)
    else:
        import anyio

        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
