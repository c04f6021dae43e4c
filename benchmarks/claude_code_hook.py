"""The SDK's side of each round trip of the package's PreToolUse hook (``claude_code_tools``): from
the CLI's ``hook_callback`` request line read to its ``control_response`` written, the package's
span start included. Runs the real CLI against the fake endpoint, in a claude-agent venv:

    PYTHONPATH=$PWD .venv-claude-agent/bin/python benchmarks/claude_code_hook.py 20 3   # calls, responses

The CLI's side of the trip (its write, wait and read) is not in it; docs/GUIDE.md says what a
whole-response comparison showed.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from typing import Any

from claude_agent_sdk import ClaudeSDKClient
from claude_agent_sdk._internal.transport import subprocess_cli
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_toolcalls import ToolCallsInstrumentor
from otel_toolcalls.testing import anthropic as A
from otel_toolcalls.testing.claude_code import CLIFake, cli_options

Transport = subprocess_cli.SubprocessCLITransport
_read, _write = Transport.read_messages, Transport.write
read_at: dict[str, float] = {}
trips: list[float] = []


def read_messages(self: Any) -> Any:
    async def lines() -> Any:
        async for message in _read(self):
            request = message.get("request") if message.get("type") == "control_request" else None
            if request and request.get("subtype") == "hook_callback":
                read_at[message["request_id"]] = time.perf_counter()
            yield message

    return lines()


async def write(self: Any, data: str) -> None:
    now = time.perf_counter()
    request_id = json.loads(data).get("response", {}).get("request_id")
    if request_id in read_at:
        trips.append(now - read_at.pop(request_id))
    await _write(self, data)


async def respond(fake: CLIFake, calls: int) -> None:
    home = tempfile.mkdtemp()
    command = json.dumps({"command": "true", "description": "probe"})
    blocks = [A.ToolUse(name="Bash", id=f"toolu_bench_{i}", arguments=command) for i in range(calls)]
    fake.enqueue(
        A.script_for(A.events_for(blocks, pings=False)),
        A.script_for(A.events_for([A.Text("ok")], stop_reason="end_turn")),
    )
    options = cli_options(fake, home, allowed_tools=["Bash"], max_turns=3)
    async with ClaudeSDKClient(options=options) as client:
        await client.query("go")
        async for _ in client.receive_response():
            pass


async def main(calls: int = 20, responses: int = 3) -> None:
    Transport.read_messages, Transport.write = read_messages, write  # type: ignore[method-assign]
    ToolCallsInstrumentor().instrument(
        tracer_provider=TracerProvider(), meter_provider=MeterProvider(), claude_code_tools=True
    )
    with CLIFake() as fake:
        for _ in range(responses):
            await respond(fake, calls)
    ms = sorted(trip * 1000 for trip in trips)
    print(f"{len(ms)} hooks, SDK side of the round trip: min {ms[0]:.2f} ms, "
          f"median {statistics.median(ms):.2f} ms, p90 {ms[int(len(ms) * 0.9)]:.2f} ms")  # fmt: skip


if __name__ == "__main__":
    arguments = [int(value) for value in sys.argv[1:3]]
    asyncio.run(main(*arguments))
