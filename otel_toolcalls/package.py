"""What the package instruments, stated as opentelemetry-python-contrib's instrumentations state it.

``_instruments_any``: ``opentelemetry-instrument`` runs the instrumentor when one of these is
installed in its range (pyproject.toml's ``instruments-any`` extra says the same). One entry per
distribution an adapter patches, at the oldest release tested: written by ``make tables``
(tests/helpers/tables.py) from the adapters' ``REQUIRES``; tests/repo/test_tables.py fails when it is stale.
"""

_instruments: tuple[str, ...] = ()

_instruments_any = (
    "agent-framework-core>=1.0.0",
    "agno>=2.3.5",
    "aiobotocore>=2.13.1",
    "anthropic>=0.43",
    "autogen-core>=0.6.2",
    "aws-sdk-bedrock-runtime>=0.11.0",
    "botocore>=1.34.116",
    "claude-agent-sdk>=0.1.19",
    "cohere>=7.0",
    "crewai>=1.10.1",
    "dspy>=3.3.0",
    "google-adk>=1.20.0",
    "google-genai>=1.55",
    "groq>=0.11",
    "haystack-ai>=2.21.0",
    "huggingface_hub>=0.30.0",
    "langchain-core>=0.3.86",
    "litellm>=1.108.0",
    "llama-index-core>=0.13.0",
    "lm15>=0.9.9",
    "mcp>=1.25.0",
    "mistralai>=3.0",
    "ollama>=0.4.0",
    "openai>=1.40",
    "openai-agents>=0.19.0",
    "pydantic-ai-slim>=1.86.1",
    "smolagents>=1.24.0",
    "strands-agents>=1.19.0",
)

_supports_metrics = True
