"""MCP ``params._meta`` as a propagation carrier (SEP-414): what the client adds to a request, what
the server reads from one, and the tool run between the two (TELEMETRY.md section 8).

Both directions go through the global propagator, so ``OTEL_PROPAGATORS`` decides what rides along
(``traceparent``, ``baggage``, the ``toolcall`` header). On a server ``_meta`` is network input:
only string values of the fields the propagator reads are handed to it, and nothing it does raises.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.carried import carried
from otel_toolcalls._linking.execute import IncompleteToolCallError
from otel_toolcalls._linking.runner import ErrorOf, Execution

Refused = Callable[[IncompleteToolCallError], Awaitable[Any]]


def with_propagated(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``call_tool``'s keyword arguments with the current context injected into ``meta`` (for
    mcp releases that do not inject it themselves); keys the caller gave are never replaced."""
    carrier: dict[str, str] = {}
    try:
        propagate.inject(carrier)
    except Exception as exc:
        report("_frameworks.mcp.meta.with_propagated", exc)
        return kwargs
    given = kwargs.get("meta")
    if not carrier or (given is not None and not isinstance(given, Mapping)):
        return kwargs
    return {**kwargs, "meta": {**carrier, **(given or {})}}


def _entries(meta: object) -> Mapping[Any, Any]:
    if isinstance(meta, Mapping):  # mcp 2.x: a dict
        return meta
    extra = getattr(meta, "model_extra", None)  # mcp 1.x: a pydantic model keeping unknown keys
    return extra if isinstance(extra, Mapping) else {}


def carrier_of(meta: object) -> dict[str, str]:
    """The string values of the fields the global propagator reads, from a request's ``_meta``."""
    entries = _entries(meta)
    if not entries:
        return {}
    fields = propagate.get_global_textmap().fields
    return {name: value for name in fields if isinstance(value := entries.get(name), str)}


def extracted(meta: object) -> Context:
    """The current context with what ``_meta`` propagates. A span current here (the SDK's own
    server span, mcp 2.x) stays the current span: what else was extracted joins it."""
    current = otel_context.get_current()
    try:
        carrier = carrier_of(meta)
        if not carrier:
            return current
        context = propagate.extract(carrier, context=current)
    except Exception as exc:
        report("_frameworks.mcp.meta.extracted", exc)
        return current
    span = trace.get_current_span(current)
    if span.get_span_context().is_valid:
        context = trace.set_span_in_context(span, context)
    return context


# Claude Code names the call it runs in each tools/call's _meta (its SDK MCP servers run in the
# process that read the call's stream, so the id finds the call there).
_NAMED_CALL = "claudecode/toolUseId"


def named_call(meta: object) -> str | None:
    """The call id the client names in ``_meta`` (Claude Code), when nothing is carried."""
    value = _entries(meta).get(_NAMED_CALL)
    return value if isinstance(value, str) and value else None


def refusal(error: IncompleteToolCallError) -> Any:
    """The tool error result a strict server answers a carried aborted call with."""
    from mcp.types import CallToolResult  # the SDK is imported: its adapter is running

    return CallToolResult.model_validate({"content": [{"type": "text", "text": str(error)}], "isError": True})


def tool_error(result: Any) -> str | None:
    """``tool_error`` for a result that reports a failed tool (``isError``), as the SDK's span says."""
    flag = getattr(result, "is_error", getattr(result, "isError", None))
    if isinstance(result, Mapping):
        flag = result.get("isError")
    return "tool_error" if flag is True else None


async def serve(
    telemetry: Telemetry,
    *,
    meta: object,
    name: str | None,
    call: Callable[[], Awaitable[Any]],
    refused: Refused,
    error_of: ErrorOf | None = None,
) -> Any:
    """Run one ``tools/call`` in the context its ``_meta`` carries, as an ``Execution`` of the
    carried call; a strict refusal is answered with ``refused(error)`` and the tool never runs."""
    token = otel_context.attach(extracted(meta))
    try:
        call_of = carried()
        execution = Execution(call_of.call_id if call_of else named_call(meta), name, telemetry)
        started = False
        try:
            with execution:
                started = True
                return execution.returned(await call(), error_of)
        except IncompleteToolCallError as error:
            if started:  # the tool's own: not ours to answer
                raise
            return await refused(error)
    finally:
        otel_context.detach(token)
