"""An lm15 tool loop with no tracing code but ``execute_tool``: run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        opentelemetry-instrument python examples/lm15_agent.py

It starts the package's fake OpenAI-compatible server (127.0.0.1, no API key) and streams two turns
with lm15's own client (``OpenAIChatLM.stream``, its own HTTP). The first turn's call is cut by the
token limit inside its arguments: its ``tool_call`` span ends ``aborted`` / ``truncated`` and, in
strict mode, ``execute_tool`` refuses it before the tool body. The second completes, runs inside
``execute_tool`` and is linked to its tool-call span.
"""

from __future__ import annotations

import json

from lm15 import FunctionTool, Message, OpenAIChatLM, Request

from otel_toolcalls import IncompleteToolCallError, execute_tool
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, tool_call_script

CUT = ToolCall(name="get_weather", id="call_cut", arguments='{"location": "Zürich, Sch')
WHOLE = ToolCall(name="get_weather", id="call_whole", arguments='{"location": "Zürich"}')
TOOL = FunctionTool(
    name="get_weather",
    description="Current weather for a location.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)


def get_weather(location: str) -> str:
    print(f"ran get_weather({location!r})", flush=True)
    return "sunny, 21 °C"


def calls_of(events: list) -> dict[str, tuple[str, str]]:
    """call id -> (tool name, argument text), joined from lm15's tool-call deltas."""
    ids: dict[int, str] = {}
    calls: dict[str, tuple[str, str]] = {}
    for event in events:
        delta = getattr(event, "delta", None)
        if getattr(delta, "type", None) != "tool_call":
            continue
        if delta.id:
            ids[delta.part_index] = delta.id
            calls[delta.id] = (delta.name or "", "")
        call_id = ids[delta.part_index]
        name, text = calls[call_id]
        calls[call_id] = (name, text + delta.input)
    return calls


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([CUT], finish_reason="length"), tool_call_script([WHOLE]))
        lm = OpenAIChatLM(api_key="not-needed", base_url=fake.base_url + "/v1")
        request = Request(model="gpt-4o-mini", messages=(Message.user("Weather?"),), tools=(TOOL,))
        for _ in range(2):
            for call_id, (name, arguments) in calls_of(list(lm.stream(request))).items():
                try:
                    with execute_tool(call_id, name=name):
                        print(f"{call_id}: {get_weather(**json.loads(arguments))}", flush=True)
                except IncompleteToolCallError:
                    print(f"{call_id}: refused (IncompleteToolCallError)", flush=True)


if __name__ == "__main__":
    main()
