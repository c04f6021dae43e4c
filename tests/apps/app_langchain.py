from dataclasses import replace

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER
from otel_toolcalls.testing.openai_chat import tool_call_script

WEATHER = replace(_WEATHER, id="call_langchain")  # its own id: the SDK-first runs share a process


@tool
def get_weather(location: str, unit: str = "celsius", days: int = 1, note: str = "") -> str:
    """Weather for a place."""
    return f"sunny in {location}"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        model = ChatOpenAI(
            model="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0
        ).bind_tools([get_weather])
        message = None
        for chunk in model.stream("Weather in Zürich?"):
            message = chunk if message is None else message + chunk
        assert message is not None
        for call in message.tool_calls:
            get_weather.invoke(call)
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
