"""A small agent turn with no tracing code: run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none \
        opentelemetry-instrument python examples/weather_agent.py

It starts the package's fake provider (no API key, real OpenAI SSE on 127.0.0.1), streams one
tool call with the real openai SDK, and runs the tool inside ``execute_tool``. The instrumentor,
loaded by ``opentelemetry-instrument`` through its entry point, makes the spans.
"""

from __future__ import annotations

import json

import openai

from otel_toolcalls import execute_tool
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER, request, tool_call_script


def get_weather(location: str, **_: object) -> str:
    return f"{location}: 21 °C, clear"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="not-needed", max_retries=0)
        calls: dict[int, dict[str, str]] = {}
        for chunk in client.chat.completions.create(**request()):
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or ():
                    call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = delta.id or call["id"]
                    if delta.function is not None:
                        call["name"] = delta.function.name or call["name"]
                        call["arguments"] += delta.function.arguments or ""
        for call in calls.values():
            with execute_tool(call["id"], name=call["name"]):
                print("tool result:", get_weather(**json.loads(call["arguments"])))


if __name__ == "__main__":
    main()
