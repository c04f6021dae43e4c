import ollama

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import ollama as o

# The ollama client keeps no call id: the test finds this app's call by its tool name.
TOOL = "get_local_weather"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(o.script_for(o.chunks_for([o.ToolCall(TOOL, {"city": "Zürich"})])))
        client = ollama.Client(host=fake.base_url)
        for _ in client.chat(model=o.MODEL, messages=[{"role": "user", "content": "Weather?"}], stream=True):
            pass
    print(f"APP OK {TOOL}\n", end="", flush=True)


if __name__ == "__main__":
    main()
