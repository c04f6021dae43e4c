"""The SDK and framework versions the package is tested with, by distribution: (oldest, newest).

``oldest`` is the floor ``pyproject.toml`` declares, until the oldest-version lane of ``make test``
establishes its own; ``newest`` is the newest release CI installed when the table was last updated.
``otel-toolcalls doctor`` compares what is installed with these; every adapter's ``REQUIRES.sdk``
has a row (a test keeps it so).
"""

from __future__ import annotations

TESTED: dict[str, tuple[str, str]] = {
    "openai": ("1.40", "3.57.0"),
    "anthropic": ("0.40", "2.14.0"),
    "groq": ("0.9", "1.7.0"),
    # boto3>=1.34 in pyproject: the adapter patches botocore, released in step with it.
    "botocore": ("1.34", "1.44.8"),
    "google-genai": ("1.55", "3.6.1"),
    "mistralai": ("3.0", "3.7.0"),
    "cohere": ("7.0", "7.3.1"),
    "litellm": ("1.50", "1.110.2"),
    # langchain-openai>=0.3 and langgraph>=0.3 in pyproject: both need langchain-core 0.3 or later.
    "langchain-core": ("0.3", "1.8.3"),
    "pydantic-ai-slim": ("1.0", "2.68.0"),
    "openai-agents": ("0.3", "0.24.0"),
    "mcp": ("1.10", "2.3.0"),
}
