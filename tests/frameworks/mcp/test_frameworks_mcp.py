"""MCP client: call_tool against an in-process MCP server, the call id given by tool_call_context
(by the caller, or by a framework adapter around the framework tool that calls MCP)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

try:  # mcp 2.x: a client for a server object, in memory
    from mcp.client.client import Client
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x: FastMCP, and a ClientSession connected to it in memory
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.shared.memory import create_connected_server_and_client_session

    def Client(server: Any) -> Any:  # stands in for mcp 2.x's class
        return create_connected_server_and_client_session(server._mcp_server)

from otel_toolcalls import IncompleteToolCallError, tool_call_context
from otel_toolcalls._linking.context import current_tool_call_id
from otel_toolcalls.testing.openai_chat import WEATHER, tool_call_script

ran: list[str] = []
server = MCPServer("weather")


@server.tool()
def get_weather(location: str) -> str:
    ran.append(location)
    return f"sunny in {location}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def _stream(fake: Any, *, cut_after: int | None = None) -> None:
    fake.enqueue(tool_call_script([WEATHER], cut_after=cut_after))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    try:
        for _ in client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True):
            pass
    except (httpx.HTTPError, openai.APIError):
        assert cut_after is not None


def _all_executions(telemetry: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("execute_tool ")]


def _executions(telemetry: Any) -> list[Any]:
    """The client's: the in-memory server's own execution span (the server side of the adapter,
    here in the same process) is a child of it."""
    spans = _all_executions(telemetry)
    ids = {s.context.span_id for s in spans}
    return [s for s in spans if s.parent is None or s.parent.span_id not in ids]


async def test_call_id_from_context_links_the_completed_call(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    _stream(fake)
    async with Client(server) as client:
        with tool_call_context(WEATHER.id):
            result = await client.call_tool("get_weather", {"location": "Bern"})
    assert getattr(result, "is_error", getattr(result, "isError", None)) is False  # 2.x / 1.x
    assert ran == ["Bern"]
    call = telemetry.one("tool_call get_weather")
    (execution,) = _executions(telemetry)
    assert execution.attributes["gen_ai.tool.call.id"] == WEATHER.id
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in execution.links] == [call.context.span_id]
    # The server ran the tool in an execution span of its own, inside the client's.
    (served,) = [s for s in _all_executions(telemetry) if s is not execution]
    assert served.parent is not None and served.parent.span_id == execution.context.span_id


async def test_execution_span_goes_to_the_instrumentors_providers(
    instrument: Any, telemetry: Any, fake: Any, elsewhere: Any
) -> None:
    _stream(fake)
    async with Client(server) as client, tool_call_context(WEATHER.id):
        await client.call_tool("get_weather", {"location": "Bern"})
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert [s.name for s in elsewhere.get_finished_spans() if s.name.startswith("execute_tool")] == []


async def test_strict_refuses_an_aborted_call(instrument: Any, telemetry: Any, fake: Any) -> None:
    instrument(strict=True)
    _stream(fake, cut_after=3)
    async with Client(server) as client, tool_call_context(WEATHER.id):
        with pytest.raises(IncompleteToolCallError):
            await client.call_tool("get_weather", {"location": "Zü"})
    assert ran == []
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "aborted"
    assert execution.attributes["toolcall.abort_reason"] == "stream_error"
    assert execution.links == ()


async def test_without_a_call_id_the_outcome_is_unknown(instrument: Any, telemetry: Any) -> None:
    async with Client(server) as client:
        await client.call_tool("get_weather", {"location": "Bern"})
    (execution,) = _executions(telemetry)
    assert execution.name == "execute_tool get_weather"
    assert execution.attributes["toolcall.outcome"] == "unknown"
    assert "gen_ai.tool.call.id" not in execution.attributes
    assert execution.links == ()
    assert current_tool_call_id() is None


async def test_framework_tool_calling_mcp_makes_one_span(instrument: Any, telemetry: Any, fake: Any) -> None:
    lc_tools = pytest.importorskip("langchain_core.tools")
    seen: list[str | None] = []

    @lc_tools.tool
    async def get_weather(location: str, unit: str = "", days: int = 1, note: str = "") -> str:
        """Weather, from the MCP server."""
        seen.append(current_tool_call_id())
        async with Client(server) as client:
            result = await client.call_tool("get_weather", {"location": location})
        return str(getattr(result, "structured_content", getattr(result, "structuredContent", None)))

    _stream(fake)
    await get_weather.ainvoke(
        {"name": "get_weather", "args": {"location": "Bern"}, "id": WEATHER.id, "type": "tool_call"}
    )
    assert seen == [WEATHER.id]  # the LangChain adapter set the id for code inside the tool
    assert ran == ["Bern"]
    (execution,) = _executions(telemetry)
    assert execution.attributes["toolcall.outcome"] == "completed"
    assert len(execution.links) == 1


def test_meta_given_by_the_caller_is_kept_where_the_package_injects(telemetry: Any) -> None:
    from otel_toolcalls._frameworks.mcp.meta import with_propagated

    assert with_propagated({"meta": {"k": 1}}) == {"meta": {"k": 1}}  # no span: nothing to inject
    with telemetry.tracer_provider.get_tracer("t").start_as_current_span("execute_tool x") as span:
        added = with_propagated({"name": "x"})
        kept = with_propagated({"meta": {"traceparent": "the caller's", "k": 1}})
        odd = with_propagated({"meta": "not a mapping"})
    assert added["meta"]["traceparent"].split("-")[2] == f"{span.get_span_context().span_id:016x}"
    assert kept["meta"] == {"traceparent": "the caller's", "k": 1}
    assert odd == {"meta": "not a mapping"}
