import asyncio
import os

from google.adk.agents import Agent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import gemini as g

CALL_ID = "call_google_adk"  # its own id: the SDK-first runs share a process


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
    print(f"APP OK {CALL_ID}\n", end="", flush=True)


if __name__ == "__main__":
    main()
