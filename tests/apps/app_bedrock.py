import boto3
from botocore.config import Config

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.bedrock import MODEL, WEATHER, tool_use_script


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_use_script([WEATHER]))
        client = boto3.client(
            "bedrock-runtime",
            endpoint_url=fake.base_url,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=Config(retries={"total_max_attempts": 1}),
        )
        messages = [{"role": "user", "content": [{"text": "Weather in Zürich?"}]}]
        for _ in client.converse_stream(modelId=MODEL, messages=messages)["stream"]:
            pass
    print(f"APP OK {WEATHER.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
