"""A Haystack ``Agent`` that streams, with no tracing code: run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        HAYSTACK_TELEMETRY_ENABLED=False opentelemetry-instrument python examples/haystack_agent.py

It starts the package's fake OpenAI-compatible server (127.0.0.1, no API key) and runs the agent
on ``OpenAIChatGenerator`` (the openai SDK). The model's first call is cut by the token limit,
its arguments whole JSON by chance (``{"location": "Zür"}``): Haystack would run it; in strict
mode the package refuses it before the tool body, Haystack answers the model with a tool error,
and the model asks again. The second call completes, runs inside ``execute_tool`` and is linked
to its tool-call span.
"""

from __future__ import annotations

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # Haystack's own usage reports: off

from haystack.components.agents import Agent
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.tools import Tool
from haystack.utils import Secret

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

CUT = ToolCall(name="get_weather", id="call_cut", arguments='{"location": "Zür"}')
WHOLE = ToolCall(name="get_weather", id="call_whole", arguments='{"location": "Zürich"}')
PARAMETERS = {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}


def get_weather(location: str) -> str:
    print(f"ran get_weather({location!r})", flush=True)
    return "sunny, 21 °C"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([CUT], finish_reason="length"),  # the token limit
            tool_call_script([WHOLE]),
            script_for(events_for([], text="Sunny.", finish_reason="stop")),
        )
        generator = OpenAIChatGenerator(
            api_key=Secret.from_token("not-needed"), model="gpt-4o-mini", api_base_url=fake.base_url + "/v1"
        )
        tool = Tool(name="get_weather", description="Weather.", parameters=PARAMETERS, function=get_weather)
        agent = Agent(chat_generator=generator, tools=[tool])
        result = agent.run(
            [ChatMessage.from_user("Weather in Zürich?")], streaming_callback=lambda chunk: None
        )
    for message in result["messages"]:
        for tool_result in message.tool_call_results:
            print(f"tool {tool_result.origin.id}: error={tool_result.error}", flush=True)
    print(f"answer: {result['last_message'].text}", flush=True)


if __name__ == "__main__":
    main()
