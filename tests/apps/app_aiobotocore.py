import asyncio

from aiobotocore.session import get_session

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.bedrock import MODEL, WEATHER, ToolUse, tool_use_script

CALL = ToolUse(name=WEATHER.name, input=WEATHER.input, id="tooluse_aiobotocore_1")


async def stream(fake: FakeProvider) -> None:
    session = get_session()
    async with session.create_client(
        "bedrock-runtime",
        endpoint_url=fake.base_url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    ) as client:
        messages = [{"role": "user", "content": [{"text": "Weather in Zürich?"}]}]
        response = await client.converse_stream(modelId=MODEL, messages=messages)
        async for _ in response["stream"]:
            pass


def main() -> None:
    with FakeProvider() as fake:
        fake.enqueue(tool_use_script([CALL]))
        asyncio.run(stream(fake))
    print(f"APP OK {CALL.id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
