from anthropic import Anthropic, beta_tool

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.anthropic import MODEL, Text, ToolUse, tool_use_script

CALL = ToolUse(name="get_weather", id="toolu_runner_01", arguments='{"location": "Zürich"}')


@beta_tool
def get_weather(location: str) -> str:
    """The weather at a location."""
    return f"sunny in {location}"


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_use_script([CALL]), tool_use_script([Text("Sunny.")], stop_reason="end_turn"))
        client = Anthropic(api_key="sk-ant-fake", base_url=fake.base_url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=1024,
            messages=[{"role": "user", "content": "Weather in Zürich?"}],
            tools=[get_weather],
            stream=True,
        )
        assert runner.until_done().stop_reason == "end_turn"
    print(f"APP OK {CALL.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
