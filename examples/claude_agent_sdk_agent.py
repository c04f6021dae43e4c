"""A Claude Agent SDK client with an in-process tool and the CLI's own Bash, with no tracing code:
run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        OTEL_TOOLCALLS_CLAUDE_CODE_TOOLS=true \
        opentelemetry-instrument python examples/claude_agent_sdk_agent.py

It runs the Claude Code CLI bundled in the SDK against the package's fake Anthropic endpoint
(127.0.0.1, a dummy key). The model's first stream breaks inside the call's arguments; the CLI asks
again without streaming and gets the same call whole (this fake reuses its id), which it runs: in
strict mode the package refuses it before the tool body, and the CLI hands the refusal to the model.
The model's next call streams whole, runs inside its execution span, linked to its tool-call span.
The same for Bash, which the CLI runs itself: with ``OTEL_TOOLCALLS_CLAUDE_CODE_TOOLS=true`` the
package's PreToolUse hook denies the cut command (its file is never written) and gives the whole
one its execution span, linked.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, create_sdk_mcp_server, tool
from claude_agent_sdk.types import AssistantMessage, TextBlock

from otel_toolcalls import tool_call_outcome
from otel_toolcalls.testing import anthropic as A
from otel_toolcalls.testing.claude_code import CLIFake, cli_env, message_json

CUT = A.ToolUse(name="mcp__weather__get_weather", id="toolu_cut", arguments='{"location": "Zürich"}')
WHOLE = A.ToolUse(name="mcp__weather__get_weather", id="toolu_whole", arguments='{"location": "Zürich"}')


def _bash(call_id: str, command: str) -> A.ToolUse:
    return A.ToolUse(
        name="Bash", id=call_id, arguments=json.dumps({"command": command, "description": "note"})
    )


@tool("get_weather", "Current weather for a location.", {"location": str})
async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
    print(f"ran get_weather({args['location']!r})", flush=True)
    return {"content": [{"type": "text", "text": "sunny"}]}


async def main() -> None:
    with CLIFake() as fake, tempfile.TemporaryDirectory() as home:
        cut_file, whole_file = Path(home) / "cut.txt", Path(home) / "whole.txt"
        bash_cut, bash_whole = (
            _bash("toolu_bash_cut", f"touch {cut_file}"),
            _bash("toolu_bash_whole", f"echo ok > {whole_file}"),
        )
        fake.enqueue(
            # Message start, block start, two fragments: then the connection drops.
            A.script_for(A.events_for([CUT], pings=False), cut_after=4, pace=0.05),
            message_json(
                [{"type": "tool_use", "id": CUT.id, "name": CUT.name, "input": {"location": "Zürich"}}]
            ),
            A.tool_use_script([WHOLE]),
            # The same for Bash: a cut stream, the fallback's whole call (refused), a whole one.
            A.script_for(A.events_for([bash_cut], pings=False), cut_after=4, pace=0.05),
            message_json(
                [
                    {
                        "type": "tool_use",
                        "id": bash_cut.id,
                        "name": "Bash",
                        "input": json.loads(bash_cut.arguments),
                    }
                ]
            ),
            A.tool_use_script([bash_whole]),
            A.script_for(A.events_for([A.Text("Sunny in Zürich.")], stop_reason="end_turn")),
        )
        options = ClaudeAgentOptions(
            env=cli_env(fake, home),
            cwd=home,
            model=A.MODEL,
            include_partial_messages=True,
            mcp_servers={"weather": create_sdk_mcp_server("weather", tools=[get_weather])},
            allowed_tools=[CUT.name, "Bash"],
            max_turns=6,
        )
        async with ClaudeSDKClient(options=options) as client:
            await client.query("Weather in Zürich?")
            async for message in client.receive_response():
                if isinstance(message, AssistantMessage):
                    for block in message.content:
                        if isinstance(block, TextBlock):
                            print(f"answer: {block.text}", flush=True)
        print(f"cut.txt written: {cut_file.exists()}; whole.txt written: {whole_file.exists()}", flush=True)
    for call in (CUT, WHOLE, bash_cut, bash_whole):
        print(f"{call.id}: {tool_call_outcome(call.id)}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
