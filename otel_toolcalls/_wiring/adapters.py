"""The table of adapters: each name (what settings, logs and doctor say) and the module that is it.

``ADAPTERS`` is written by ``make tables`` (tests/helpers/tables.py) from the modules under
_providers/ and _frameworks/ that declare a ``REQUIRES``: adding a provider or a framework is adding
its module. A module is imported only when ``instrument()`` runs, and it imports its SDK only when the
application does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from otel_toolcalls._core.telemetry import Telemetry
    from otel_toolcalls._wiring.patches import Requires

_P = "otel_toolcalls._providers"
_F = "otel_toolcalls._frameworks"

ADAPTERS: dict[str, str] = {
    # Provider APIs: their streams become tool-call spans.
    "agents_realtime": f"{_P}.openai.agents_realtime",
    "agents_responses_ws": f"{_P}.openai.agents_responses_ws",
    "aiobotocore": f"{_P}.bedrock.aiobotocore",
    "anthropic": f"{_P}.anthropic",
    "bedrock": f"{_P}.bedrock.adapter",
    "bedrock_bidi": f"{_P}.bedrock.bidi",
    "cohere": f"{_P}.cohere",
    "dspy_lm15": f"{_P}.lm15.dspy",
    "gemini": f"{_P}.gemini.adapter",
    "gemini_live": f"{_P}.gemini.live",
    "groq": f"{_P}.groq",
    "huggingface": f"{_P}.huggingface",
    "litellm": f"{_P}.litellm",
    "lm15": f"{_P}.lm15.adapter",
    "mistral": f"{_P}.mistral",
    "ollama": f"{_P}.ollama",
    "openai": f"{_P}.openai.adapter",
    "openai_realtime": f"{_P}.openai.realtime",
    "openai_responses_ws": f"{_P}.openai.responses_ws",
    # Code that executes tools: its executions become execute_tool spans linked to their calls.
    "agent_framework": f"{_F}.agent_framework",
    "agno": f"{_F}.agno",
    "anthropic_tools": f"{_F}.anthropic_tools",
    "autogen": f"{_F}.autogen",
    "claude_agent_sdk": f"{_F}.claude_agent_sdk",
    "crewai": f"{_F}.crewai",
    "dspy": f"{_F}.dspy",
    "google_adk": f"{_F}.google_adk",
    "haystack": f"{_F}.haystack",
    "langchain": f"{_F}.langchain",
    "llama_index": f"{_F}.llama_index",
    "mcp": f"{_F}.mcp.adapter",
    "openai_agents": f"{_F}.openai_agents",
    "pydantic_ai": f"{_F}.pydantic_ai",
    "smolagents": f"{_F}.smolagents",
    "strands": f"{_F}.strands",
    "strands_bidi": f"{_F}.strands_bidi",
}


class Adapter(Protocol):
    """What every module of the table provides."""

    REQUIRES: Requires

    def instrument(self, telemetry: Telemetry) -> bool:
        """Patches the SDK (once it is imported); False when it is not installed."""
        ...

    def uninstrument(self) -> None: ...


def adapter_names() -> list[str]:
    return sorted(ADAPTERS)


def load(name: str) -> Adapter:
    return cast("Adapter", importlib.import_module(ADAPTERS[name]))
