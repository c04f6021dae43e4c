"""The function tool the OpenAI Agents SDK tests hand their agents, and what its body was handed."""

from __future__ import annotations

from typing import Any

from agents import FunctionTool, set_tracing_disabled

ran: list[str] = []


async def _weather(context: Any, arguments: str) -> str:
    ran.append(arguments)  # the tool body: runs on the text it is handed
    return "sunny"


WEATHER_TOOL = FunctionTool(
    name="get_weather",
    description="Weather for a place.",
    params_json_schema={"type": "object", "properties": {"location": {"type": "string"}}},
    on_invoke_tool=_weather,
    strict_json_schema=False,
)


def reset() -> None:
    set_tracing_disabled(True)  # the SDK's own (non-OpenTelemetry) tracing would export to OpenAI
    ran.clear()
