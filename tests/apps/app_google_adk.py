import asyncio
import os

from google import genai
from google.adk.agents import Agent
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import gemini as g
from otel_toolcalls.testing import gemini_live as live

CALL_ID = "call_google_adk"  # its own id: the SDK-first runs share a process
LIVE_CALL = live.FunctionCall("get_weather", {"location": "Zürich"}, "call_google_adk_live")


def get_weather(location: str) -> str:
    """Current weather for a location."""
    return "sunny"


def model(fake: FakeProvider) -> Gemini:
    if "base_url" in Gemini.model_fields:
        return Gemini(model=g.MODEL, base_url=fake.base_url)
    # google-adk 1.x's Gemini takes no base_url: google-genai reads it from the environment.
    os.environ["GOOGLE_GEMINI_BASE_URL"] = fake.base_url
    return Gemini(model=g.MODEL)


async def run(fake: FakeProvider) -> None:
    agent = Agent(name="weather", model=model(fake), tools=[get_weather])
    runner = InMemoryRunner(agent=agent, app_name="weather")
    session = await runner.session_service.create_session(app_name="weather", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="Weather in Zürich?")])
    config = RunConfig(streaming_mode=StreamingMode.SSE)
    run = runner.run_async(user_id="u", session_id=session.id, new_message=message, run_config=config)
    async for _ in run:
        pass


def live_model(endpoint: live.LiveEndpoint) -> Gemini:
    class FakeEndpointGemini(Gemini):
        # ADK builds its Live client for Google's endpoint: this one connects to the fake.
        @property
        def _live_api_client(self) -> genai.Client:
            return genai.Client(api_key="fake-key", http_options=endpoint.client_options())

    return FakeEndpointGemini(model=live.MODEL)


async def run_live(endpoint: live.LiveEndpoint) -> None:
    """Runner.run_live with a LiveRequestQueue, until the model's answer after the tool's."""
    agent = Agent(name="weather", model=live_model(endpoint), tools=[get_weather])
    runner = InMemoryRunner(agent=agent, app_name="weather")
    session = await runner.session_service.create_session(app_name="weather", user_id="u")
    queue = LiveRequestQueue()
    queue.send_content(types.Content(role="user", parts=[types.Part(text="Weather in Zürich?")]))
    config = RunConfig(response_modalities=["TEXT"])
    run = runner.run_live(user_id="u", session_id=session.id, live_request_queue=queue, run_config=config)
    try:
        async for event in run:
            parts = (event.content.parts if event.content else None) or []
            if any(part.text == "Sunny." for part in parts):
                break
    finally:
        await run.aclose()
        queue.close()


def converse_live() -> None:
    endpoint = live.LiveEndpoint()
    asked, answered = live.Await("client_content"), live.Await("tool_response")
    steps = (live.tool_call(LIVE_CALL), live.turn_complete(), answered, live.text("Sunny."))
    endpoint.enqueue(live.session(asked, *steps, live.turn_complete()))
    try:
        asyncio.run(run_live(endpoint))
    finally:
        endpoint.stop()


def main() -> None:
    os.environ.setdefault("GOOGLE_API_KEY", "fake-key")  # ADK's Gemini asks for one; the fake takes any
    with FakeProvider() as fake:
        call = g.whole_call("get_weather", {"location": "Zürich"}, CALL_ID)
        fake.enqueue(
            g.script_for(g.one_part_each([call])), g.script_for(g.one_part_each([g.text("Sunny.")]))
        )
        try:
            asyncio.run(run(fake))
        finally:
            os.environ.pop("GOOGLE_GEMINI_BASE_URL", None)
    converse_live()
    print(f"APP OK {CALL_ID}\n", end="", flush=True)


if __name__ == "__main__":
    main()
