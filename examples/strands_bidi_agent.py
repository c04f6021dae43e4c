"""A Strands BidiAgent on Nova Sonic with no tracing code: run it under ``opentelemetry-instrument``
(Python 3.12+, with ``strands-agents[bidi]``: the bidi lane's venv has both).

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none \\
        OTEL_TOOLCALLS_STRICT=true opentelemetry-instrument python examples/strands_bidi_agent.py

It starts the package's fake Nova Sonic service (TLS and HTTP/2 on 127.0.0.1, fake credentials)
and talks to it with the real SDK through Strands. The model asks for the weather, then for a table
booking, but the user barges in before that block ends: the weather call completes and its run is
linked to its tool-call span; in strict mode the interrupted booking is refused before its body
runs, and Strands tells the model so.
"""

from __future__ import annotations

import asyncio

import boto3
from strands import tool
from strands.bidi import BidiAgent
from strands.bidi.models.bedrock import BedrockNovaSonicModel

from otel_toolcalls.testing import nova_sonic as nova


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    print(f"ran get_weather({city!r})")
    return f"{city}: 21 °C, clear"


@tool
def book_table(time: str) -> str:
    """Books a table."""
    print(f"ran book_table({time!r})")
    return f"booked for {time}"


REGION = "us-east-1"
REPLIES = [
    [*nova.tool_block("c_weather", "get_weather", "tu_weather", {"city": "Zürich"})],
    [
        *nova.spoken("c_say", "Clear skies."),
        *nova.tool_block("c_book", "book_table", "tu_book", {"time": "19:30"}, stop_reason="INTERRUPTED"),
    ],
    nova.spoken("c_end", "Fine, no booking."),
]


async def converse() -> None:
    # Any credentials: the fake checks only that the request is SigV4-signed.
    session = boto3.Session(aws_access_key_id="AKIDFAKE", aws_secret_access_key="fake", region_name=REGION)
    model = BedrockNovaSonicModel(model_id="amazon.nova-sonic-v1:0", boto_session=session)
    agent = BidiAgent(model=model, tools=[get_weather, book_table])
    await agent.start()
    try:
        await agent.send("What's the weather in Zürich? And book a table.")
        results = 0
        async for event in agent.receive():
            if type(event).__name__ == "ToolResultMessageEvent":
                results += 1
                for block in event["message"]["content"]:
                    result = block["toolResult"]
                    print(f"answered {result['toolUseId']}: {result['status']}")
                if results == 2:
                    break
    finally:
        await agent.stop()


def main() -> None:
    with nova.NovaSonicServer(REPLIES) as fake, nova.strands_pointed_at(fake):
        asyncio.run(converse())


if __name__ == "__main__":
    main()
