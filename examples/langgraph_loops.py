"""LangGraph agents to test with the plugin: the stock ReAct agent, and one that checks the turn.

The stock agent (the graph ``create_react_agent`` builds, over ``ChatOpenAI(streaming=True)``)
runs whatever tool calls the aggregated message holds: when the model hits its token limit
mid-arguments, LangChain repairs the partial JSON and ``ToolNode`` executes the truncated call.
The careful graph's model node accepts a message only when its ``finish_reason`` says the turn is
complete, and asks again otherwise, so the broken message never enters the graph's state.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from loops import STREAM_ERRORS


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def model(base_url: str) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini", base_url=base_url, api_key="test-key", streaming=True, max_retries=0
    )


def agent(base_url: str, *, careful: bool, attempts: int = 3) -> Any:
    """The ReAct graph (model, ToolNode, tools_condition). ``careful=False`` is what
    ``create_react_agent`` does: the model's message enters the state whatever ended its stream."""
    llm = model(base_url).bind_tools([get_weather])

    def call_model(state: MessagesState) -> dict[str, Any]:
        if not careful:
            return {"messages": [llm.invoke(state["messages"])]}
        for _ in range(attempts):
            try:
                message = llm.invoke(state["messages"])
            except STREAM_ERRORS:
                continue  # the stream broke: nothing of it enters the state
            if message.response_metadata.get("finish_reason") in ("tool_calls", "stop"):
                return {"messages": [message]}
        raise RuntimeError(f"no complete turn in {attempts} attempts")

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "model")
    return graph.compile()
