import asyncio
from dataclasses import replace

from agents import function_tool, set_tracing_disabled
from agents.realtime import RealtimeAgent, RealtimeRunner

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_realtime import MODEL, frames, response_events, turn
from otel_toolcalls.testing.openai_realtime import WEATHER as _WEATHER

WEATHER = replace(_WEATHER, call_id="call_agents_realtime")  # its own id: the SDK-first runs share a process


@function_tool
def get_weather(location: str, unit: str, days: int, note: str) -> str:
    """Weather for a place."""
    return "sunny"


async def run(fake: FakeProvider) -> None:
    agent = RealtimeAgent(name="weather", tools=[get_weather])
    config = {"url": fake.websocket.base_url + "/realtime?model=" + MODEL, "api_key": "sk-fake"}
    async with await RealtimeRunner(agent).run(model_config=config) as session:  # type: ignore[arg-type]
        await session.send_message("Weather in Zürich?")
        async for event in session:
            if event.type == "tool_end":
                break


def main() -> None:
    set_tracing_disabled(True)  # the SDK's own tracing (not OpenTelemetry) would export to OpenAI
    with FakeProvider() as fake:
        answer = turn(response_events([], text="Sunny."))
        fake.websocket.enqueue(frames(turn(response_events([WEATHER])), answer))
        asyncio.run(run(fake))
    print(f"APP OK {WEATHER.call_id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
