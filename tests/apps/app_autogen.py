import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_autogen", arguments='{"location": "Zürich"}')


async def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


async def run(fake: FakeProvider) -> None:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0
    )
    agent = AssistantAgent(
        "weather",
        model_client=client,
        tools=[get_weather],
        model_client_stream=True,
        reflect_on_tool_use=True,
    )
    async for _ in agent.run_stream(task="Weather in Zürich?"):
        pass
    await client.close()


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        asyncio.run(run(fake))
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
