# mistralai 3.x is a namespace package (no mistralai/__init__.py).
from dataclasses import replace

from mistralai.client import Mistral

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.mistral import MODEL, tool_call_script
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER

WEATHER = replace(_WEATHER, id="call_mistral")  # its own id: the SDK-first runs share a process


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        client = Mistral(api_key="x", server_url=fake.base_url)
        for _ in client.chat.stream(model=MODEL, messages=[{"role": "user", "content": "Weather?"}]):
            pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
