"""What every framework's tests read back: execution spans, the span current in a tool body, and
the scripts of a turn that calls one tool then answers."""

from __future__ import annotations

import sys
from typing import Any

from opentelemetry import trace

from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

WHOLE = ToolCall(name="get_weather", id="call_weather_1", arguments='{"location": "Zürich"}')
# Cut inside the string value: a partial-JSON parser still gets an object out of it.
PARTIAL = ToolCall(name="get_weather", id="call_weather_1", arguments='{"location": "Zürich, Sch')


class Body:
    """The tool body's record: the arguments it ran with and the span current while it ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, int]] = []

    def ran(self, location: Any) -> str:
        self.calls.append((location, trace.get_current_span().get_span_context().span_id))
        return "sunny"

    @property
    def locations(self) -> list[Any]:
        return [location for location, _ in self.calls]


def answer() -> Any:
    return script_for(events_for([], text="Sunny.", finish_reason="stop"))


def completed_turn() -> list[Any]:
    return [tool_call_script([WHOLE]), answer()]


def truncated_turn() -> list[Any]:
    # The token limit ends the stream inside the arguments.
    return [tool_call_script([PARTIAL], finish_reason="length"), answer()]


def cut_turn() -> list[Any]:
    # The connection drops inside the arguments (start + 2 fragments written).
    return [tool_call_script([PARTIAL], finish_reason=None, cut_after=3), answer()]


def executions(telemetry: Any) -> list[Any]:
    return [
        s for s in telemetry.spans() if (s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"
    ]


ADK_SCOPE = "gcp.vertex.agent"


def trace_adk(telemetry: Any, monkeypatch: Any) -> None:
    """ADK's own spans go to the test's provider (ADK's tracer reads the global one); in 1.x its
    modules hold the tracer under their own names too."""
    from google.adk.telemetry import tracing

    adk_tracer = tracing.tracer
    for name, module in list(sys.modules.items()):
        if name.startswith("google.adk") and getattr(module, "tracer", None) is adk_tracer:
            monkeypatch.setattr(module, "tracer", telemetry.tracer_provider.get_tracer(ADK_SCOPE))
