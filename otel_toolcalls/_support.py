"""The versions each supported distribution was tested at: (oldest, newest) actually run.

The oldest is the floor pyproject.toml declares, run by the version lane (tests/versions/run.py,
``make versions``); the newest is what the main suite ran on when this table was last written.
The agent frameworks that run in venvs of their own (``make frameworks``) are tested at the one
version their requirements file pins: oldest and newest are that version.
``otel-toolcalls doctor`` reads it to say whether an installed SDK is in the tested range;
tests/test_support.py keeps the oldest equal to the floors.
"""

from __future__ import annotations

TESTED: dict[str, tuple[str, str]] = {
    "openai": ("1.40.0", "3.57.0"),
    "anthropic": ("0.43.0", "2.14.0"),
    "groq": ("0.11.0", "1.7.0"),
    "boto3": ("1.34.116", "1.44.8"),
    "botocore": ("1.34.116", "1.44.8"),
    # Its own version lanes (it pins botocore below the newest): 2.13.1 and 3.10.0.
    "aiobotocore": ("2.13.1", "3.10.0"),
    "mistralai": ("3.0.0", "3.7.0"),
    "cohere": ("7.0.0", "7.3.1"),
    "google-genai": ("1.55.0", "3.6.1"),
    "litellm": ("1.108.0", "1.110.2"),
    "ollama": ("0.4.0", "0.6.3"),
    "huggingface_hub": ("0.30.0", "2.4.0"),
    "langgraph": ("0.3.1", "1.2.24"),
    "langchain-openai": ("0.3.0", "1.7.4"),
    # The langchain adapter patches langchain-core: the langgraph floor lane resolves it to 0.3.86.
    "langchain-core": ("0.3.86", "1.8.3"),
    "pydantic-ai-slim": ("1.86.1", "2.68.0"),
    "openai-agents": ("0.19.0", "0.24.0"),
    "mcp": ("1.25.0", "2.3.0"),
    # The frameworks' venvs (tests/frameworks/requirements*.txt pin them).
    "llama-index-core": ("0.14.25", "0.14.25"),
    "strands-agents": ("1.62.0", "1.62.0"),
    "google-adk": ("2.13.0", "2.13.0"),
    # The autogen adapter patches autogen-core (autogen-agentchat's AssistantAgent runs on it).
    "autogen-core": ("0.7.5", "0.7.5"),
    "crewai": ("1.15.30", "1.15.30"),
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
    "openai_realtime": ("1.58.0", "3.57.0"),
    # client.responses.connect(): the Responses API's WebSocket transport, from 2.22.
    "openai_responses_ws": ("2.22.0", "3.57.0"),
}

