import os
import tempfile

os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="dspy-cache-"))

import dspy

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_dspy_lm15", arguments='{"location": "Zürich"}')


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


class Ask(dspy.Signature):
    """Answer with a tool call."""

    question: str = dspy.InputField()
    tools: list[dspy.Tool] = dspy.InputField()
    tool_calls: dspy.ToolCalls = dspy.OutputField()


def main() -> None:
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    tools = [dspy.Tool(get_weather)]
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        # dspy.LM as users write it: the default engine (DSPy's bundled lm15 client from 3.4.0).
        lm = dspy.LM("openai/gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="sk-fake", cache=False)
        program = dspy.streamify(dspy.Predict(Ask), async_streaming=False)
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            outputs = list(program(question="Weather?", tools=tools))
    (prediction,) = [o for o in outputs if isinstance(o, dspy.Prediction)]
    for call in prediction.tool_calls.tool_calls:
        call.execute(functions=tools)
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
