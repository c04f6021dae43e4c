"""A worker running a LangChain tool for a model's call, with langchain-core and no provider SDK, as
``opentelemetry-instrument python alone_langchain_worker.py`` runs it (tests/wiring/test_dark_processes.py).
Prints the span current in the tool's body."""

import json

from langchain_core.tools import tool
from opentelemetry import trace


@tool
def get_weather(location: str) -> str:
    """Weather for a place."""
    span = trace.get_current_span()
    seen = {"recording": span.is_recording(), "name": getattr(span, "name", None)}
    print(f"BODY {json.dumps(seen)}\n", end="", flush=True)
    return f"sunny in {location}"


if __name__ == "__main__":
    call = {"name": "get_weather", "args": {"location": "Zürich"}, "id": "call_worker", "type": "tool_call"}
    get_weather.invoke(call)
