import asyncio

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_llama_index", arguments='{"location": "Zürich"}')


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


async def run(fake: FakeProvider) -> None:
    llm = OpenAI(model="gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    agent = FunctionAgent(tools=[get_weather], llm=llm, streaming=True)
    handler = agent.run(user_msg="Weather in Zürich?")
    async for _ in handler.stream_events():
        pass
    assert "Sunny." in str(await handler)


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        asyncio.run(run(fake))
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
