from huggingface_hub import InferenceClient

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import openai_chat as chat

CALL_ID = "call_huggingface"


def main() -> None:
    with FakeProvider() as fake:
        call = chat.ToolCall("get_weather", '{"location": "Zürich"}', id=CALL_ID)
        fake.enqueue(chat.tool_call_script([call]))
        client = InferenceClient(base_url=f"{fake.base_url}/v1", api_key="x")
        messages = [{"role": "user", "content": "Weather in Zürich?"}]
        for _ in client.chat_completion(messages=messages, model="tgi", stream=True):
            pass
    print(f"APP OK {CALL_ID}\n", end="", flush=True)


if __name__ == "__main__":
    main()
