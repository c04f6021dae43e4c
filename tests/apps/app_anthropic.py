from anthropic import Anthropic

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.anthropic import MODEL, WEATHER, tool_use_script


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_use_script([WEATHER]))
        client = Anthropic(api_key="sk-ant-fake", base_url=fake.base_url, max_retries=0)
        messages = [{"role": "user", "content": "Weather in Zürich?"}]
        with client.messages.stream(model=MODEL, max_tokens=1024, messages=messages) as stream:
            for _ in stream:
                pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
