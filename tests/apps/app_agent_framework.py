import asyncio

from agent_framework import Agent, tool
from agent_framework.openai import OpenAIChatCompletionClient

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_agent_framework", arguments='{"location": "Zürich"}')


@tool
def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


async def run(fake: FakeProvider) -> None:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake"
    )
    agent = Agent(client=client, tools=[get_weather], instructions="Answer.")
    stream = agent.run("Weather in Zürich?", stream=True)
    async for _ in stream:
        pass
    await stream.get_final_response()


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        asyncio.run(run(fake))
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
