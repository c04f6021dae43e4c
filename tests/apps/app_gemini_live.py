import asyncio

from google import genai
from google.genai import types

from otel_toolcalls import execute_tool
from otel_toolcalls.testing import gemini_live as live

CALL = live.FunctionCall("get_weather", {"city": "Zürich"}, "fc_gemini_live")


async def converse(endpoint: live.LiveEndpoint) -> None:
    client = genai.Client(api_key="fake-key", http_options=endpoint.client_options())
    async with client.aio.live.connect(model=live.MODEL, config={"response_modalities": ["TEXT"]}) as session:
        await session.send_client_content(turns={"role": "user", "parts": [{"text": "Weather?"}]})
        async for message in session.receive():
            for call in (message.tool_call.function_calls or []) if message.tool_call else []:
                async with execute_tool(call.id, name=call.name):
                    result = {"temperature": 21}
                answer = types.FunctionResponse(id=call.id, name=call.name, response=result)
                await session.send_tool_response(function_responses=[answer])


def main() -> None:
    endpoint = live.LiveEndpoint()
    asked, answered = live.Await("client_content"), live.Await("tool_response")
    endpoint.enqueue(live.session(asked, live.tool_call(CALL), answered, live.turn_complete()))
    try:
        asyncio.run(converse(endpoint))
    finally:
        endpoint.stop()
    print(f"APP OK {CALL.call_id}\n", end="", flush=True)


if __name__ == "__main__":
    main()
