"""OpenTelemetry instrumentation for streamed LLM tool calls.

One span per streamed tool-call block, ended ``completed`` or ``aborted`` with the reason; metrics
for alerting on the aborted-call rate; execution spans linked to their call only when it completed.
The telemetry contract (every name emitted) is documented in README.md.
"""

from ._execution import tool_call_context
from ._instrumentor import ToolCallsInstrumentor
from ._linking import IncompleteToolCallError, execute_tool, tool_call_outcome
from ._propagator import ToolCallsPropagator, install_propagator
from .version import __version__

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
