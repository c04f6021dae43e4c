import asyncio
from dataclasses import replace

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesWSModel
from openai import AsyncOpenAI

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_realtime import frames, turn
from otel_toolcalls.testing.openai_responses import MODEL, events_for
from otel_toolcalls.testing.openai_responses import WEATHER as _WEATHER

WEATHER = replace(_WEATHER, call_id="call_agents_responses_ws")  # its own id: one process


@function_tool
def get_weather(location: str, unit: str, days: int, note: str) -> str:
    """Weather for a place."""
    return "sunny"


async def run(fake: FakeProvider) -> None:
    websocket = fake.websocket.base_url
    client = AsyncOpenAI(api_key="sk-fake", base_url=fake.base_url + "/v1", websocket_base_url=websocket)
    agent = Agent(name="weather", model=OpenAIResponsesWSModel(MODEL, client), tools=[get_weather])
    result = await Runner.run(agent, "Weather in Zürich?")
    assert result.final_output == "Sunny."


def main() -> None:
    set_tracing_disabled(True)  # the SDK's own tracing (not OpenTelemetry) would export to OpenAI
    with FakeProvider() as fake:
        answer = turn(events_for([], text="Sunny."))
        fake.websocket.enqueue(frames(turn(events_for([WEATHER])), answer, session=False))
        asyncio.run(run(fake))
    print(f"APP OK {WEATHER.call_id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
