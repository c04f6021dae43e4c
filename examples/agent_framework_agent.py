"""A Microsoft Agent Framework ``Agent`` that streams, with no tracing code: run it under
``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        opentelemetry-instrument python examples/agent_framework_agent.py

It starts the package's fake OpenAI-compatible server (127.0.0.1, no API key) and runs the agent
on ``OpenAIChatCompletionClient`` (the openai SDK) with ``run(..., stream=True)``. The model's
first call ends with the token limit: its arguments happen to be whole JSON, so the framework
would run it; in strict mode the package refuses it before the tool body, and the framework
answers the model with an error result. The model asks again, that call completes, runs inside
``execute_tool`` and is linked to its tool-call span. With the framework's own observability on
(``ENABLE_INSTRUMENTATION=true``; the default from its later 1.x releases), its ``chat`` and
``execute_tool`` spans are the ones annotated: no second span of the package's.
"""

from __future__ import annotations

import asyncio

from agent_framework import Agent, tool
from agent_framework.openai import OpenAIChatCompletionClient

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

CUT = ToolCall(name="get_weather", id="call_cut", arguments='{"location": "Zürich"}')
WHOLE = ToolCall(name="get_weather", id="call_whole", arguments='{"location": "Zürich"}')


@tool
def get_weather(location: str) -> str:
    """Current weather for a location."""
    print(f"ran get_weather({location!r})", flush=True)
    return "sunny, 21 °C"


async def run(fake: FakeProvider) -> None:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="not-needed"
    )
    agent = Agent(client=client, tools=[get_weather], instructions="Answer with the weather.")
    stream = agent.run("Weather in Zürich?", stream=True)
    async for update in stream:
        for content in update.contents:
            if content.type == "function_result":
                print(f"result {content.call_id}: {'error' if content.exception else 'ok'}", flush=True)
    print(f"answer: {(await stream.get_final_response()).text}", flush=True)


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([CUT], finish_reason="length"),  # the token limit, no completion
            tool_call_script([WHOLE]),
            script_for(events_for([], text="Sunny in Zürich.", finish_reason="stop")),
        )
        asyncio.run(run(fake))


if __name__ == "__main__":
    main()
