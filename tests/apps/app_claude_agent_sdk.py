import asyncio
import tempfile
from typing import Any

from claude_agent_sdk import ClaudeSDKClient, create_sdk_mcp_server, tool

from otel_toolcalls.testing import anthropic as A
from otel_toolcalls.testing.claude_code import CLIFake, cli_options

# Its own id: the SDK-first runs share a process.
WEATHER = A.ToolUse(
    name="mcp__w__get_weather", id="toolu_claude_agent_sdk", arguments='{"location": "Zürich"}'
)
# Run by the CLI itself: its execution span comes from the package's PreToolUse hook
# (OTEL_TOOLCALLS_CLAUDE_CODE_TOOLS=true in the import-order test's environment).
BASH = A.ToolUse(
    name="Bash", id="toolu_claude_code_bash", arguments='{"command": "true", "description": "probe"}'
)


@tool("get_weather", "Current weather for a location.", {"location": str})
async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "sunny"}]}


async def run() -> None:
    with CLIFake() as fake, tempfile.TemporaryDirectory() as home:
        fake.enqueue(
            A.tool_use_script([WEATHER, BASH]),
            A.script_for(A.events_for([A.Text("Sunny.")], stop_reason="end_turn")),
        )
        options = cli_options(
            fake,
            home,
            mcp_servers={"w": create_sdk_mcp_server("w", tools=[get_weather])},
            allowed_tools=[WEATHER.name, "Bash"],
            max_turns=3,
        )
        async with ClaudeSDKClient(options=options) as client:
            await client.query("Weather in Zürich?")
            async for _ in client.receive_response():
                pass


def main() -> None:
    asyncio.run(run())
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
