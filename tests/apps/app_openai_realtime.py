from dataclasses import replace

from openai import OpenAI

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_realtime import MODEL, frames, response_events, turn
from otel_toolcalls.testing.openai_realtime import WEATHER as _WEATHER

WEATHER = replace(_WEATHER, call_id="call_openai_realtime")  # its own id: the SDK-first runs share a process


def main() -> None:
    with FakeProvider() as fake:
        fake.websocket.enqueue(frames(turn(response_events([WEATHER]))))
        websocket = fake.websocket.base_url
        client = OpenAI(api_key="sk-fake", base_url=fake.base_url + "/v1", websocket_base_url=websocket)
        with client.realtime.connect(model=MODEL) as connection:
            connection.response.create()
            for event in connection:
                if event.type == "response.done":
                    break
    print(f"APP OK {WEATHER.call_id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
