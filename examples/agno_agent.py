"""An agno ``Agent`` that streams, with no tracing code: run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        AGNO_TELEMETRY=false opentelemetry-instrument python examples/agno_agent.py

It starts the package's fake OpenAI-compatible server (127.0.0.1, no API key) and runs the agent on
agno's ``OpenAIChat`` (the openai SDK). The model's first call is cut by the token limit before
its arguments: agno would run the tool on its defaults; in strict mode the package refuses it
before the tool body, agno hands the refusal to the model as the tool's error, and the model asks
again. The second call completes, runs inside ``execute_tool`` and is linked to its tool-call span.
"""

from __future__ import annotations

import os

os.environ.setdefault("AGNO_TELEMETRY", "false")  # agno's usage reports: this example stays local

from agno.agent import Agent
from agno.models.openai import OpenAIChat

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

CUT = ToolCall(name="get_weather", id="call_cut", arguments="", fragments=[])
WHOLE = ToolCall(name="get_weather", id="call_whole", arguments='{"location": "Zürich"}')


def get_weather(location: str = "here") -> str:
    """Current weather for a location."""
    print(f"ran get_weather({location!r})", flush=True)
    return "sunny, 21 °C"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([CUT], finish_reason="length"),  # the token limit, before any argument
            tool_call_script([WHOLE]),
            script_for(events_for([], text="Sunny in Zürich.", finish_reason="stop")),
        )
        model = OpenAIChat(id="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="not-needed")
        agent = Agent(model=model, tools=[get_weather], telemetry=False)
        for event in agent.run("Weather in Zürich?", stream=True, stream_events=True):
            if type(event).__name__ == "ToolCallCompletedEvent":
                print(f"{event.tool.tool_call_id}: error={event.tool.tool_call_error}", flush=True)
            elif type(event).__name__ == "RunCompletedEvent":
                print(f"answer: {event.content}", flush=True)


if __name__ == "__main__":
    main()
