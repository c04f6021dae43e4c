from strands import Agent, tool
from strands.models.openai import OpenAIModel

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_strands", arguments='{"location": "Zürich"}')


@tool
def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        model = OpenAIModel(
            client_args={"base_url": fake.base_url + "/v1", "api_key": "sk-fake", "max_retries": 0},
            model_id="gpt-4o-mini",
        )
        agent = Agent(model=model, tools=[get_weather], callback_handler=None)
        result = agent("Weather in Zürich?")  # Strands streams from the model
        assert "Sunny." in str(result)
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
