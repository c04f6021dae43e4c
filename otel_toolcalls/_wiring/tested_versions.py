"""The versions each supported distribution was tested at: (oldest, newest) actually run.

``otel-toolcalls doctor`` reads it to say whether an installed SDK is in the tested range;
tests/repo/test_support.py keeps the oldest equal to the floors pyproject.toml declares.
"""

from __future__ import annotations

# The oldest: the floor, run by the version lane (tests/versions/run.py, ``make versions``); the
# newest: what the main suite ran on when this table was last written. The frameworks in venvs of
# their own (``make frameworks``) are tested at their lanes' pins (tests/frameworks/requirements*.txt):
# the newest, the last release of the previous tool-execution design where the adapter hooks another
# choke point (``Requires.earlier``), and the oldest, covering at least the last twelve months'
# releases, or since the tool-execution design the adapter can hook began, where that is later.
TESTED: dict[str, tuple[str, str]] = {
    "openai": ("1.40.0", "3.63.0"),
    "anthropic": ("0.43.0", "2.17.0"),
    "groq": ("0.11.0", "1.7.0"),
    "boto3": ("1.34.116", "1.44.18"),
    "botocore": ("1.34.116", "1.44.18"),
    # Its own version lanes (it pins botocore below the newest): 2.13.1 and 3.10.0.
    "aiobotocore": ("2.13.1", "3.10.0"),
    "mistralai": ("3.0.0", "3.8.0"),
    "cohere": ("7.0.0", "7.3.1"),
    "google-genai": ("1.55.0", "3.6.1"),
    "litellm": ("1.108.0", "1.110.2"),
    "ollama": ("0.4.0", "0.6.3"),
    "huggingface_hub": ("0.30.0", "2.5.0"),
    # The smithy-based AWS SDK (not boto3): its bidirectional stream (Nova Sonic) needs Python 3.12+;
    #   0.11.0 is the release Strands' bidi extra requires (>=0.11,<0.12). Lane bidi (Python 3.12).
    "aws-sdk-bedrock-runtime": ("0.11.0", "0.11.0"),
    # lm15: 0.9.9 (2026-09-15), its first release on PyPI; BaseProviderLM.stream /
    #   AsyncBaseProviderLM.stream and the canonical events are the same from it to 1.5.0. Lanes
    #   lm15-floor, lm15 (newest).
    "lm15": ("0.9.9", "1.5.0"),
    # LangGraph's floor is older than twelve months (1.0.4 was the newest on 2025-12-01).
    "langgraph": ("0.3.1", "1.2.24"),
    "langchain-openai": ("0.3.0", "1.8.1"),
    # The langchain adapter patches langchain-core: the langgraph floor lane resolves it to 0.3.86.
    "langchain-core": ("0.3.86", "1.8.3"),
    # pydantic-ai and the OpenAI Agents SDK: younger than twelve months (1.25.1 / 0.6.1 were the
    # newest on 2025-12-01), at the release where what the adapter hooks began: ToolManager.
    # _raw_execute (1.78; annotating the instrumented agent's span from 1.86.1) and
    # _invoke_function_tool_with_metadata (0.19); tests/versions/run.py's floors say the same.
    "pydantic-ai-slim": ("1.86.1", "2.78.0"),
    "openai-agents": ("0.19.0", "0.25.0"),
    "mcp": ("1.25.0", "2.3.0"),
    # LangGraph/langchain-core, pydantic-ai, openai-agents and mcp also run between floor and newest
    #   (langchain-core 1.0.7, 2.0.0, 0.20.0, 2.0.0): the version lane main-frameworks-mid.
    # The frameworks' lanes (tests/frameworks/requirements*.txt pin them). Why each oldest is there:
    # LlamaIndex: 0.14.9 is the first of the last twelve months; 0.13.0, where the
    #   workflow agents' call_tool step took its present form, is covered too. Lanes 0.13.0,
    #   0.13.6 (-mid) and 0.14.25 (the step is the same in all).
    "llama-index-core": ("0.13.0", "0.14.25"),
    # Strands: 1.19.0, the first of the last twelve months. Its tool span and run moved from
    #   Tracer.start_tool_call_span / ToolExecutor._stream to the executor's _start_tool_telemetry /
    #   _run_tool in 1.62. Lanes 1.19.0, 1.50.2 (-mid), 1.61.1, 1.62.0.
    "strands-agents": ("1.19.0", "1.62.0"),
    # Google ADK: 1.20.0, the first of the last twelve months (1.x and 2.x). Its tool call moved
    #   from functions.__call_tool_async (to 2.8) to _tool_caller (2.9) and tools._caller (2.10).
    #   Lanes 1.20.0, 1.39.1 (the last 1.x), 2.5.0 (-mid: 2.x on 1.x's design), 2.9.2 (beside
    #   CrewAI 1.15.28), 2.13.0.
    "google-adk": ("1.20.0", "2.13.0"),
    # The autogen adapter patches autogen-core (autogen-agentchat's AssistantAgent runs on it). No
    #   release in the last twelve months (0.7.5 is of September 2025): its oldest is 0.6.2, the
    #   first whose trace_tool_span carries the model's call id (before it, BaseTool.run_json is
    #   given none: 0.5 and 0.6.0/0.6.1 are not covered). Lanes 0.6.2, 0.7.1 (-mid), 0.7.5.
    "autogen-core": ("0.6.2", "0.7.5"),
    # CrewAI: 1.7.0 is the first of the last twelve months, but native tool calls (with the model's
    #   call id) began in 1.9, and a per-call choke point, _execute_single_native_tool_call, in
    #   1.10.1 (1.9 runs calls inline in _handle_native_tool_calls): its oldest is 1.10.1. Its
    #   executors: CrewAgentExecutor and crewai.experimental's AgentExecutor to 1.15.28, the
    #   latter moved to crewai.agents.agent_executor in 1.15.29. Lanes 1.10.1, 1.13.0 (-mid),
    #   1.15.28, 1.15.30.
    "crewai": ("1.10.1", "1.15.30"),
    # smolagents: 1.24.0 (2025-12-22), the first of the last twelve months; ToolCallingAgent's
    #   process_tool_calls / execute_tool_call and the streamed step are the same from 1.24.0 to
    #   1.26.0. Lanes 1.24.0, 1.26.0.
    "smolagents": ("1.24.0", "1.26.0"),
    # Microsoft Agent Framework: 1.0.0 (2026-04-02), its first release; the betas and release
    #   candidates before it (from 2025-10) are not covered. FunctionTool.invoke(tool_call_id=...),
    #   the get_function_span it opens and its __call__ of the body are the same from 1.0.0 to
    #   1.23.0. Lanes 1.0.0 (in -previous: -floor pins opentelemetry-api and openai below what it
    #   needs), 1.23.0.
    "agent-framework-core": ("1.0.0", "1.23.0"),
    # agno: 2.3.5 (2025-12-03), the first of the last twelve months; FunctionCall.execute / aexecute,
    #   Model.process_response_stream / aprocess_response_stream and RunCancelledEvent (agent and
    #   team) are where the adapter hooks from 2.3.5 to 3.1.10. Lanes 2.3.5, 3.1.10.
    "agno": ("2.3.5", "3.1.10"),
    # Claude Agent SDK: 0.1.19 (January 2026, Claude Code 2.1.1), the first of the last twelve
    #   months; its transport's read_messages and Query._handle_sdk_mcp_request are in every release
    #   since. Before 0.2.140 the SDK calls its MCP tools itself; from it a real mcp server runs them.
    #   Lanes 0.1.19 (with mcp 1.x), 0.2.189 (Claude Code 2.1.332).
    "claude-agent-sdk": ("0.1.19", "0.2.189"),
    # Haystack: 2.21.0 (2025-12-09), the first of the last twelve months. Its tools ran in the
    #   ToolInvoker component to 2.31 and in components.agents.tool_calling from 3.0 (with a span
    #   per tool). Lanes 2.21.0, 3.4.1.
    "haystack-ai": ("2.21.0", "3.4.1"),
    # DSPy: 3.1.0 (2026-01-06) is the first of the last twelve months, but a native tool call keeps
    #   its id (so an execution can be linked or refused) from 3.3.0 (2026-08-03): its oldest.
    #   Tool.__call__ / acall and ToolCalls.ToolCall.execute are the same from 3.1.0 (spans, not
    #   linked, before 3.3.0). Lanes 3.3.0 (-previous), 3.4.1. The dspy_lm15 adapter (dspy.LM's default
    #   engine, the lm15 1.0.0rc3 DSPy bundles from 3.4.0) runs in the 3.4.1 lane.
    "dspy": ("3.3.0", "3.4.1"),
    "opentelemetry-api": ("1.30.0", "1.45.2"),
    "opentelemetry-sdk": ("1.30.0", "1.45.2"),
    "opentelemetry-instrumentation": ("0.51b0", "0.66b2"),
    "opentelemetry-semantic-conventions": ("0.51b0", "0.66b2"),
    "wrapt": ("1.14.0", "2.5.2"),
}

# Adapters that cover a surface younger than their SDK's floor: the range that surface was tested at
# (doctor shows it on the adapter's row). openai's Realtime client: client.beta.realtime from 1.58,
# client.realtime (GA) from 1.103; the lanes openai-realtime-beta / -ga run the oldest of each.
SURFACES: dict[str, tuple[str, str]] = {
    "openai_realtime": ("1.58.0", "3.63.0"),
    # client.responses.connect(): the Responses API's WebSocket transport, from 2.22.
    "openai_responses_ws": ("2.22.0", "3.63.0"),
}

