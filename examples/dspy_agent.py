"""DSPy with native tool calls, streamed, with no tracing code: run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        opentelemetry-instrument python examples/dspy_agent.py

It starts the package's fake OpenAI-compatible server (127.0.0.1, no API key) and streams a
``dspy.Predict`` with tools through ``dspy.streamify``, ``dspy.LM`` as users write it (its default
engine: from 3.4.0 DSPy's bundled lm15 client, traced by the dspy_lm15 adapter; LiteLLM before,
traced by the litellm adapter). The model's first call is cut by the token limit inside its
arguments: DSPy would run the tool on what it makes of the cut text; in strict mode ``execute``
refuses it before the tool body. The second call completes, runs inside ``execute_tool`` and is linked to its
tool-call span (DSPy keeps the call id from 3.3.0).
"""

from __future__ import annotations

import dspy

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

CUT = ToolCall(name="get_weather", id="call_cut", arguments='{"location": "Zürich, Sch')
WHOLE = ToolCall(name="get_weather", id="call_whole", arguments='{"location": "Zürich"}')


def get_weather(location: str) -> str:
    """Current weather for a location."""
    print(f"ran get_weather({location!r})", flush=True)
    return "sunny, 21 °C"


class Ask(dspy.Signature):
    """Answer with a tool call."""

    question: str = dspy.InputField()
    tools: list[dspy.Tool] = dspy.InputField()
    tool_calls: dspy.ToolCalls = dspy.OutputField()


def main() -> None:
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    tools = [dspy.Tool(get_weather)]
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([CUT], finish_reason="length"), tool_call_script([WHOLE]))
        lm = dspy.LM("openai/gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="not-needed", cache=False)
        program = dspy.streamify(dspy.Predict(Ask), async_streaming=False)
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            for _ in range(2):
                (prediction,) = [
                    o for o in program(question="Weather?", tools=tools) if isinstance(o, dspy.Prediction)
                ]
                for call in prediction.tool_calls.tool_calls:
                    try:
                        print(f"{getattr(call, 'id', None)}: {call.execute(functions=tools)}", flush=True)
                    except RuntimeError as error:  # what execute raises for a failed tool
                        print(f"{getattr(call, 'id', None)}: refused ({type(error).__name__})", flush=True)


if __name__ == "__main__":
    main()
