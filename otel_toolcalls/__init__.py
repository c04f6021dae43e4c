"""OpenTelemetry instrumentation for streamed LLM tool calls.

One span per streamed tool-call block, ended ``completed`` or ``aborted`` with the reason; metrics
for alerting on the aborted-call rate; execution spans linked to their call only when it completed.
The telemetry contract (every name emitted) is documented in docs/TELEMETRY.md.
"""

from typing import TYPE_CHECKING, Any

from ._linking.context import tool_call_context
from ._linking.execute import IncompleteToolCallError, execute_tool, tool_call_outcome
from ._linking.propagator import ToolCallsPropagator, install_propagator
from .version import __version__

if TYPE_CHECKING:
    from ._wiring.instrumentor import ToolCallsInstrumentor


def __getattr__(name: str) -> Any:
    # The instrumentor imports opentelemetry.instrumentation, whose import loads the configured
    # propagators, this package's among them (OTEL_PROPAGATORS=...,toolcalls): importing it on first
    # use keeps that load from finding this package half imported, whatever is imported first.
    if name == "ToolCallsInstrumentor":
        from ._wiring.instrumentor import ToolCallsInstrumentor

        return ToolCallsInstrumentor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "IncompleteToolCallError",
    "ToolCallsInstrumentor",
    "ToolCallsPropagator",
    "__version__",
    "execute_tool",
    "install_propagator",
    "tool_call_context",
    "tool_call_outcome",
]
