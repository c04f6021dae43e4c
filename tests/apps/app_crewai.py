import os

# CrewAI's own telemetry would phone home; its tracing asks on a terminal.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_crewai", arguments='{"location": "Zürich"}')


@tool("get_weather")
def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        llm = LLM(model="openai/gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", stream=True)
        agent = Agent(role="forecaster", goal="weather", backstory="-", llm=llm, tools=[get_weather])
        task = Task(description="Weather in Zürich?", expected_output="the weather", agent=agent)
        result = Crew(agents=[agent], tasks=[task]).kickoff()
        assert "Sunny." in str(result)
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
