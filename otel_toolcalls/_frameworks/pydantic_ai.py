"""pydantic-ai: the execution of each function tool the agent runs.

Choke point: ``ToolManager._raw_execute``, the tool body's call once its arguments validated. When
the agent is instrumented, pydantic-ai's own ``execute_tool`` span (``running tool: {name}``) is
current there: it gets ``toolcall.outcome`` and the link, and the package makes no second span.
When it is not, the package makes the ``execute_tool`` span. A call whose arguments failed
validation never reaches this point: pydantic-ai's span for it is left as is.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.runner import Execution, run_async
from otel_toolcalls._wiring.patches import Patches, Requires, Tested

_log = logging.getLogger(__name__)

# What the adapter needs of the SDK and patches (the instrumentor waits for and checks it).
# Younger than twelve months (1.25.1 was the newest on 2025-12-01), at the release where what the
# adapter hooks began: ToolManager._raw_execute (1.78; annotating the instrumented agent's span
# from 1.86.1). main-frameworks-mid runs 2.0.0 too.
REQUIRES = Requires(
    sdk="pydantic-ai-slim", targets=(("pydantic_ai.tool_manager", "ToolManager._raw_execute"),),
    tested=(Tested("pydantic-ai-slim", "1.86.1", "2.78.0"),),
)
_patches = Patches()


def _raw_execute(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    validated = kwargs.get("validated", args[0] if args else None)
    call = getattr(validated, "call", None)
    execution = Execution(getattr(call, "tool_call_id", None), getattr(call, "tool_name", None), telemetry)
    return run_async(execution, wrapped, args, kwargs)


def instrument(telemetry: Telemetry) -> bool:
    return _patches.wrap_all(REQUIRES, functools.partial(_raw_execute, telemetry))


def uninstrument() -> None:
    _patches.unwrap_all()
