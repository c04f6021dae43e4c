import asyncio
from dataclasses import replace

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER
from otel_toolcalls.testing.openai_chat import events_for, script_for, tool_call_script

WEATHER = replace(_WEATHER, id="call_openai_agents")  # its own id: the SDK-first runs share a process


@function_tool
def get_weather(location: str, unit: str, days: int, note: str) -> str:
    """Weather for a place."""
    return "sunny"


async def run(fake: FakeProvider) -> None:
    client = AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    model = OpenAIChatCompletionsModel("gpt-4o-mini", client)
    agent = Agent(name="weather", model=model, tools=[get_weather])
    result = Runner.run_streamed(agent, "Weather in Zürich?")
    async for _ in result.stream_events():
        pass
    assert result.final_output == "Sunny."


def main() -> None:
    set_tracing_disabled(True)  # the SDK's own tracing (not OpenTelemetry) would export to OpenAI
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        asyncio.run(run(fake))
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
