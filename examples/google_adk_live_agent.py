"""A Google ADK live agent (``Runner.run_live``), no tracing code: run it under opentelemetry-instrument.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        opentelemetry-instrument python examples/google_adk_live_agent.py

It starts the package's fake Live endpoint (wss:// on 127.0.0.1, no API key) and points ADK's Gemini
model at it. The model asks for two tools in one turn; the user speaks over it and the server cancels
one of them before the turn ends. ADK ignores the cancellation and would run both: the package links
the completed call's execution (ADK's own ``execute_tool`` span) to its tool-call span, and in strict
mode refuses the cancelled call before its body runs; ``run_live`` raises the refusal to its caller.
"""

from __future__ import annotations

import asyncio
import os

from google import genai
from google.adk.agents import Agent
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.models import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing import gemini_live as live

WEATHER = live.FunctionCall("get_weather", {"city": "Zürich"}, "fc_weather")
BOOKING = live.FunctionCall("book_table", {"time": "19:30"}, "fc_booking")


def get_weather(city: str) -> dict[str, str]:
    """The forecast for a city."""
    print(f"ran get_weather({city!r})")
    return {"forecast": f"{city}: 21 °C, clear"}


def book_table(time: str) -> dict[str, str]:
    """Books a table."""
    print(f"ran book_table({time!r})")
    return {"booked": time}


def model(endpoint: live.LiveEndpoint) -> Gemini:
    class LocalGemini(Gemini):
        # ADK builds its Live client for Google's endpoint: this one connects to the fake.
        @property
        def _live_api_client(self) -> genai.Client:
            return genai.Client(api_key="not-needed", http_options=endpoint.client_options())

    return LocalGemini(model=live.MODEL)


async def converse(endpoint: live.LiveEndpoint) -> None:
    agent = Agent(name="concierge", model=model(endpoint), tools=[get_weather, book_table])
    runner = InMemoryRunner(agent=agent, app_name="concierge")
    session = await runner.session_service.create_session(app_name="concierge", user_id="u")
    queue = LiveRequestQueue()
    queue.send_content(types.Content(role="user", parts=[types.Part(text="Weather, then a table?")]))
    run = runner.run_live(
        user_id="u",
        session_id=session.id,
        live_request_queue=queue,
        run_config=RunConfig(response_modalities=["TEXT"]),
    )
    try:
        async for event in run:
            for part in (event.content.parts if event.content else None) or []:
                if part.text:
                    print("model:", part.text)
                    return
    except IncompleteToolCallError as refused:
        print(f"refused {refused.call_id}: {refused.reason}")
    finally:
        await run.aclose()
        queue.close()


def main() -> None:
    os.environ.setdefault("GOOGLE_API_KEY", "not-needed")  # ADK's Gemini asks for one
    endpoint = live.LiveEndpoint()
    endpoint.enqueue(live.session(
        live.Await("client_content"),
        live.tool_call(WEATHER, BOOKING),
        live.cancellation(BOOKING.call_id),  # the user spoke over the model
        live.turn_complete(),
        live.Await("tool_response"),
        live.text("Sunny in Zürich."),
        live.turn_complete(),
    ))  # fmt: skip
    try:
        asyncio.run(converse(endpoint))
    finally:
        endpoint.stop()


if __name__ == "__main__":
    main()
