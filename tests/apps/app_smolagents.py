from smolagents import OpenAIServerModel, ToolCallingAgent, tool
from smolagents.monitoring import LogLevel

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_smolagents", arguments='{"location": "Zürich"}')
FINAL = ToolCall(name="final_answer", id="call_smolagents_final", arguments='{"answer": "Sunny."}')


@tool
def get_weather(location: str) -> str:
    """Current weather for a location.

    Args:
        location: The place to look up.
    """
    return "sunny"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]), tool_call_script([FINAL]))
        model = OpenAIServerModel(
            model_id="gpt-4o-mini",
            api_base=fake.base_url + "/v1",
            api_key="sk-fake",
            client_kwargs={"max_retries": 0},
        )
        agent = ToolCallingAgent(
            tools=[get_weather], model=model, stream_outputs=True, max_steps=3, verbosity_level=LogLevel.OFF
        )
        agent.run("Weather in Zürich?")
    # smolagents' live view of the stream (drawn whatever the verbosity) ends without a newline.
    print(f"\nAPP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
