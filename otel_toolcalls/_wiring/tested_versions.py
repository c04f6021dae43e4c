"""The versions each supported distribution was tested at: (oldest, newest).

Written by `make tables` (tests/helpers/tables.py) from the adapters' REQUIRES: do not edit. Each
row names the adapter that declares it (its module says why the oldest is there).
``otel-toolcalls doctor`` reads it; the version and framework lanes run its ends.
"""

from __future__ import annotations

TESTED: dict[str, tuple[str, str]] = {
    "agent-framework-core": ("1.0.0", "1.23.0"),  # agent_framework
    "agno": ("2.3.5", "3.1.10"),  # agno
    "aiobotocore": ("2.13.1", "3.10.0"),  # aiobotocore
    "anthropic": ("0.43", "2.17.0"),  # anthropic
    "autogen-core": ("0.6.2", "0.7.5"),  # autogen
    "botocore": ("1.34.116", "1.44.18"),  # bedrock
    "boto3": ("1.34.116", "1.44.18"),  # bedrock
    "aws-sdk-bedrock-runtime": ("0.11.0", "0.12.0"),  # bedrock_bidi
    "claude-agent-sdk": ("0.1.19", "0.2.189"),  # claude_agent_sdk
    "cohere": ("7.0", "7.3.1"),  # cohere
    "crewai": ("1.10.1", "1.15.30"),  # crewai
    "dspy": ("3.3.0", "3.4.1"),  # dspy
    "google-genai": ("1.55", "3.6.1"),  # gemini
    "google-adk": ("1.20.0", "2.13.0"),  # google_adk
    "groq": ("0.11", "1.7.0"),  # groq
    "haystack-ai": ("2.21.0", "3.4.1"),  # haystack
    "huggingface_hub": ("0.30.0", "2.5.0"),  # huggingface
    "langchain-core": ("0.3.86", "1.8.3"),  # langchain
    "langgraph": ("0.3.1", "1.2.24"),  # langchain
    "langchain-openai": ("0.3", "1.8.1"),  # langchain
    "litellm": ("1.108.0", "1.110.2"),  # litellm
    "llama-index-core": ("0.13.0", "0.14.25"),  # llama_index
    "lm15": ("0.9.9", "1.5.0"),  # lm15
    "mcp": ("1.25.0", "2.3.0"),  # mcp
    "mistralai": ("3.0", "3.8.0"),  # mistral
    "ollama": ("0.4.0", "0.6.3"),  # ollama
    "openai": ("1.40", "3.63.0"),  # openai
    "openai-agents": ("0.19.0", "0.25.0"),  # openai_agents
    "pydantic-ai-slim": ("1.86.1", "2.78.0"),  # pydantic_ai
    "smolagents": ("1.24.0", "1.26.0"),  # smolagents
    "strands-agents": ("1.19.0", "1.62.0"),  # strands
    "opentelemetry-api": ("1.30.0", "1.45.2"),  # the package itself
    "opentelemetry-sdk": ("1.30.0", "1.45.2"),  # the package itself
    "opentelemetry-instrumentation": ("0.51b0", "0.66b2"),  # the package itself
    "opentelemetry-semantic-conventions": ("0.51b0", "0.66b2"),  # the package itself
    "wrapt": ("1.14.0", "2.5.2"),  # the package itself
}

# Adapters that cover a surface younger than their distribution's oldest: the range that
# surface was tested at (doctor shows it on the adapter's row).
SURFACES: dict[str, tuple[str, str]] = {
    "openai_realtime": ("1.58.0", "3.63.0"),
    "openai_responses_ws": ("2.22.0", "3.63.0"),
    "strands_bidi": ("1.58.0", "1.62.0"),
}
