import asyncio
from dataclasses import replace

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER
from otel_toolcalls.testing.openai_chat import events_for, script_for, tool_call_script

WEATHER = replace(_WEATHER, id="call_pydantic_ai")  # its own id: the SDK-first runs share a process


async def run(fake: FakeProvider) -> None:
    provider = OpenAIProvider(base_url=fake.base_url + "/v1", api_key="sk-fake")
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider))

    @agent.tool_plain
    def get_weather(location: str, unit: str = "celsius", days: int = 1, note: str = "") -> str:
        return "sunny"

    async with agent.run_stream_events("Weather in Zürich?") as events:
        async for _ in events:
            pass


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        asyncio.run(run(fake))
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
