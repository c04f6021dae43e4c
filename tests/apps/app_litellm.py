# LiteLLM's own HTTP handler (hosted_vllm), not the openai SDK: the litellm adapter's stream.
from dataclasses import replace

import litellm

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import WEATHER as _WEATHER
from otel_toolcalls.testing.openai_chat import tool_call_script

WEATHER = replace(_WEATHER, id="call_litellm")  # its own id: the SDK-first runs share a process


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script([WEATHER]))
        response = litellm.completion(
            model="hosted_vllm/qwen3-8b",
            api_base=fake.base_url + "/v1",
            api_key="x",
            messages=[{"role": "user", "content": "Weather in Zürich?"}],
            stream=True,
        )
        for _ in response:
            pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
