from dataclasses import replace

from groq import Groq

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER
from otel_toolcalls.testing.openai_chat import request, tool_call_script

WEATHER = replace(_WEATHER, id="call_groq")  # its own id: the SDK-first runs share a process


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        client = Groq(base_url=fake.base_url, api_key="gsk-fake", max_retries=0)
        for _ in client.chat.completions.create(**request(model="llama-3.3-70b-versatile")):
            pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
