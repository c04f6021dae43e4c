import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack.components.agents import Agent
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.tools import Tool
from haystack.utils import Secret

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_haystack", arguments='{"location": "Zürich"}')
PARAMETERS = {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}


def get_weather(location: str) -> str:
    return "sunny"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([WEATHER]), script_for(events_for([], text="Sunny.", finish_reason="stop"))
        )
        generator = OpenAIChatGenerator(
            api_key=Secret.from_token("sk-fake"), model="gpt-4o-mini", api_base_url=fake.base_url + "/v1"
        )
        tool = Tool(name="get_weather", description="Weather.", parameters=PARAMETERS, function=get_weather)
        Agent(chat_generator=generator, tools=[tool]).run(
            [ChatMessage.from_user("Weather in Zürich?")], streaming_callback=lambda chunk: None
        )
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
