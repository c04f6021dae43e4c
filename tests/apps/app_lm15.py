from lm15 import Message, OpenAIChatLM, Request

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import MODEL, ToolCall, tool_call_script

# Its own id: the SDK-first runs share a process.
WEATHER = ToolCall(name="get_weather", id="call_lm15", arguments='{"location": "Zürich"}')


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        lm = OpenAIChatLM(api_key="sk-fake", base_url=fake.base_url + "/v1")
        for _ in lm.stream(Request(model=MODEL, messages=(Message.user("Weather?"),))):
            pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
