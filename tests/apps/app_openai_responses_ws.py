from dataclasses import replace

from openai import OpenAI

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_realtime import frames, turn
from otel_toolcalls.testing.openai_responses import MODEL, events_for
from otel_toolcalls.testing.openai_responses import WEATHER as _WEATHER

WEATHER = replace(_WEATHER, call_id="call_openai_responses_ws")  # its own id: one process


def main() -> None:
    with FakeProvider() as fake:
        fake.websocket.enqueue(frames(turn(events_for([WEATHER])), session=False))
        websocket = fake.websocket.base_url
        client = OpenAI(api_key="sk-fake", base_url=fake.base_url + "/v1", websocket_base_url=websocket)
        with client.responses.connect() as connection:
            connection.response.create(model=MODEL, input="weather?")
            for event in connection:
                if event.type == "response.completed":
                    break
    print(f"APP OK {WEATHER.call_id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
