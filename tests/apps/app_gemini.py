from google import genai
from google.genai import types

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import gemini as g

CALL_ID = "fc_weather_1"


def main() -> None:
    with FakeProvider() as fake:
        parts = [g.whole_call("get_weather", {"location": "Zürich"}, CALL_ID)]
        fake.enqueue(g.script_for(g.one_part_each(parts)))
        client = genai.Client(api_key="fake-key", http_options=types.HttpOptions(base_url=fake.base_url))
        for _ in client.models.generate_content_stream(model=g.MODEL, contents="Weather in Zürich?"):
            pass
    print(f"APP OK {CALL_ID}\n", end="", flush=True)


if __name__ == "__main__":
    main()
