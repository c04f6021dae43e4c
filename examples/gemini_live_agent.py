"""A Gemini Live session with tools and no tracing code: run it under ``opentelemetry-instrument``.

    OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=none OTEL_TOOLCALLS_STRICT=true \
        opentelemetry-instrument python examples/gemini_live_agent.py

It starts the package's fake Live endpoint (wss:// on 127.0.0.1, no API key) and talks to it with
the real google-genai client. The model asks for two tools; the user speaks over it and the server
cancels one of them before the app gets to run it. Each tool runs inside ``execute_tool``: the
completed call is linked to its tool-call span, the cancelled one is refused in strict mode before
its body runs, and only the tool that ran is answered.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google import genai
from google.genai import types

from otel_toolcalls import IncompleteToolCallError, execute_tool
from otel_toolcalls.testing import gemini_live as live

TOOLS = {
    "get_weather": lambda args: {"forecast": f"{args['city']}: 21 °C, clear"},
    "book_table": lambda args: {"booked": args["time"]},
}
WEATHER = live.FunctionCall("get_weather", {"city": "Zürich"}, "fc_weather")
BOOKING = live.FunctionCall("book_table", {"time": "19:30"}, "fc_booking")


async def run_calls(session: Any, calls: list[Any]) -> None:
    answers = []
    for call in calls:
        try:
            async with execute_tool(call.id, name=call.name):
                result = TOOLS[call.name](call.args)
                print(f"ran {call.name} ({call.id})")
        except IncompleteToolCallError as refused:
            print(f"refused {call.name} ({call.id}): {refused.reason}")
            continue
        answers.append(types.FunctionResponse(id=call.id, name=call.name, response=result))
    if answers:
        await session.send_tool_response(function_responses=answers)


async def converse(endpoint: live.LiveEndpoint) -> None:
    client = genai.Client(api_key="not-needed", http_options=endpoint.client_options())
    tools = [{"function_declarations": [{"name": name} for name in TOOLS]}]
    config = {"response_modalities": ["TEXT"], "tools": tools}
    async with client.aio.live.connect(model=live.MODEL, config=config) as session:
        question = {"role": "user", "parts": [{"text": "Weather, then a table?"}]}
        await session.send_client_content(turns=question)
        calls: list[Any] = []
        async for message in session.receive():
            if message.tool_call:
                calls += message.tool_call.function_calls or []
                continue
            if message.tool_call_cancellation:
                print("the server cancelled", ", ".join(message.tool_call_cancellation.ids or []))
            if calls:  # the server moved on: run what it asked for
                await run_calls(session, calls)
                calls = []
            if message.text:
                print("model:", message.text)


def main() -> None:
    endpoint = live.LiveEndpoint()
    endpoint.enqueue(live.session(
        live.Await("client_content"),
        live.tool_call(WEATHER, BOOKING),
        live.cancellation(BOOKING.call_id),  # the user spoke over the model
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
