import os

os.environ.setdefault("AGNO_TELEMETRY", "false")  # agno's usage reports: only loopback here

from agno.agent import Agent
from agno.models.openai import OpenAIChat

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_agno", arguments='{"location": "Zürich"}')


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        model = OpenAIChat(id="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
        agent = Agent(model=model, tools=[get_weather], telemetry=False)
        for _ in agent.run("Weather in Zürich?", stream=True):
            pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
