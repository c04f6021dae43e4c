from dataclasses import replace

import cohere

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.cohere import MODEL, tool_call_script
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER

WEATHER = replace(_WEATHER, id="call_cohere")  # its own id: the SDK-first runs share a process


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        client = cohere.ClientV2(api_key="x", base_url=fake.base_url)
        for _ in client.chat_stream(model=MODEL, messages=[{"role": "user", "content": "Weather?"}]):
            pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
