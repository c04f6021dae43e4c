"""A tool server with mcp and no provider SDK, over stdio, as ``opentelemetry-instrument python
alone_mcp_server.py RAN`` runs it (tests/wiring/test_dark_processes.py). Each run of the tool appends the
location to RAN."""

import sys

import anyio

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

server = Server("weather")


@server.tool()
def get_weather(location: str) -> str:
    with open(sys.argv[1], "a", encoding="utf-8") as ran:
        ran.write(location + "\n")
    return f"sunny in {location}"


if __name__ == "__main__":
    anyio.run(server.run_stdio_async)
