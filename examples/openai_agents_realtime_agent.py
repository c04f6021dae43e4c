"""An OpenAI Agents SDK realtime agent (``RealtimeAgent`` + ``RealtimeRunner``), with no tracing
code: run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        opentelemetry-instrument python examples/openai_agents_realtime_agent.py

It starts the package's fake provider (a Realtime WebSocket endpoint on 127.0.0.1, no API key).
The session's own ``websockets`` connection streams two responses: in the first the model calls
``get_weather``; the call completes, the session runs the tool inside ``execute_tool``, linked to
its tool-call span. In the second the model starts another call and the user interrupts it at its
first argument fragment: the server cancels the response, the call ends aborted / cancelled and
never runs. The spans go to stdout.
"""

from __future__ import annotations

import asyncio

from agents import function_tool, set_tracing_disabled
from agents.realtime import RealtimeAgent, RealtimeRunner

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_realtime import MODEL, ToolCall, frames, response_events, turn

WHOLE = ToolCall("get_weather", '{"location": "Zürich"}', call_id="call_whole")
INTERRUPTED = ToolCall("get_weather", '{"location": "Bern"}', call_id="call_interrupted", status="incomplete")


@function_tool
def get_weather(location: str) -> str:
    """Current weather for a location."""
    print(f"ran get_weather({location!r})", flush=True)
    return "sunny, 21 °C"


def _argument_fragment(event: object) -> bool:
    # The session passes each server event on as a raw model event.
    data = getattr(getattr(event, "data", None), "data", None)
    return isinstance(data, dict) and data.get("type") == "response.function_call_arguments.delta"


async def converse(url: str) -> None:
    agent = RealtimeAgent(name="weather", instructions="Answer briefly.", tools=[get_weather])
    session = await RealtimeRunner(agent).run(model_config={"url": url, "api_key": "not-needed"})
    async with session:
        await session.send_message("Weather in Zürich, then in Bern?")
        interrupted = False
        async for event in session:
            if event.type == "tool_end":
                print(f"tool_end {event.output!r}", flush=True)
            elif _argument_fragment(event) and event.data.data.get("response_id") == "resp_2":
                interrupted = True
                await session.interrupt()  # the user speaks over the second call
            elif event.type == "agent_end" and interrupted:
                break


def main() -> None:
    set_tracing_disabled(True)  # the SDK's own tracing (not OpenTelemetry) would export to OpenAI
    with FakeProvider() as fake:
        first = turn(response_events([WHOLE], response_id="resp_1"))
        second = response_events(
            [INTERRUPTED], response_id="resp_2", end="cancelled", reason="client_cancelled"
        )
        fake.websocket.enqueue(frames(first, turn(second, cancel_after=3)))
        asyncio.run(converse(fake.websocket.base_url + "/realtime?model=" + MODEL))
    print("done", flush=True)


if __name__ == "__main__":
    main()
