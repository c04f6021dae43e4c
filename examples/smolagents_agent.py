"""A smolagents ``ToolCallingAgent`` that streams, with no tracing code: run it under
``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        opentelemetry-instrument python examples/smolagents_agent.py

It starts the package's fake OpenAI-compatible server (127.0.0.1, no API key) and runs the agent
on smolagents' ``OpenAIServerModel`` (the openai SDK). The model's first call is cut by the token
limit inside its arguments: smolagents would run the tool on the unparsed text; in strict mode the
package refuses it before the tool body, smolagents records the refusal as the step's error and
asks the model again. The second call completes, runs inside ``execute_tool`` and is linked to its
tool-call span. smolagents' own console output goes to stderr, the spans to stdout.
"""

from __future__ import annotations

from rich.console import Console
from smolagents import OpenAIServerModel, ToolCallingAgent, tool
from smolagents.monitoring import AgentLogger, LogLevel

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

CUT = ToolCall(name="get_weather", id="call_cut", arguments='{"location": "Zürich, Sch')
WHOLE = ToolCall(name="get_weather", id="call_whole", arguments='{"location": "Zürich"}')
FINAL = ToolCall(name="final_answer", id="call_final", arguments='{"answer": "Sunny in Zürich."}')


@tool
def get_weather(location: str) -> str:
    """Current weather for a location.

    Args:
        location: The place to look up.
    """
    print(f"ran get_weather({location!r})", flush=True)
    return "sunny, 21 °C"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(
            tool_call_script([CUT], finish_reason="length"),  # the token limit, mid-arguments
            tool_call_script([WHOLE]),
            tool_call_script([FINAL]),
        )
        model = OpenAIServerModel(
            model_id="gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="not-needed"
        )
        agent = ToolCallingAgent(
            tools=[get_weather],
            model=model,
            stream_outputs=True,
            max_steps=4,
            logger=AgentLogger(level=LogLevel.OFF, console=Console(stderr=True)),
        )
        answer = agent.run("Weather in Zürich?")
    for step in agent.memory.steps:
        if getattr(step, "error", None) is not None:
            print(f"step {step.step_number}: {type(step.error).__name__}", flush=True)
    print(f"answer: {answer}", flush=True)


if __name__ == "__main__":
    main()
