# The model's call streams through the openai SDK; the tool runs on an MCP server.
import asyncio
from dataclasses import replace

from mcp import Client
from mcp.server.mcpserver import MCPServer
from openai import OpenAI

from otel_toolcalls import tool_call_context
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER
from otel_toolcalls.testing.openai_chat import request, tool_call_script

server = MCPServer("weather")

WEATHER = replace(_WEATHER, id="call_mcp")  # its own id: the SDK-first runs share a process


@server.tool()
def get_weather(location: str) -> str:
    return f"sunny in {location}"


async def call_tool() -> None:
    async with Client(server) as client:
        with tool_call_context(WEATHER.id):
            result = await client.call_tool("get_weather", {"location": "Zürich"})
    assert result.is_error is False


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        client = OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
        for _ in client.chat.completions.create(**request()):
            pass
    asyncio.run(call_tool())
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
