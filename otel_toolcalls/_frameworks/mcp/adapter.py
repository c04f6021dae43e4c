"""MCP: an ``execute_tool`` span around the client's ``ClientSession.call_tool``, and one around
the tool a server runs, with the outcome and link its request carries in ``params._meta``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from otel_toolcalls._core.errors import report
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._linking.context import current_tool_call_id
from otel_toolcalls._linking.runner import Execution, execution_in_progress, run_async
from otel_toolcalls._wiring.patches import Patches, Requires, Tested, resolve

from . import meta as _mcp_meta

_CLIENT = ("mcp.client.session", "ClientSession.call_tool")
# mcp 2.x: the runner looks up each request's handler here, inside the SDK's own span.
_SERVER_2 = ("mcp.server.lowlevel", "Server.get_request_handler")
# mcp 1.x: every request is handled (and answered) here.
_SERVER_1 = ("mcp.server.lowlevel.server", "Server._handle_request")

# What the adapter needs of the SDK and patches (the instrumentor waits for and checks it).
# main-frameworks-mid runs 2.0.0 too.
REQUIRES = Requires(
    sdk="mcp",
    targets=(_CLIENT, _SERVER_2, _SERVER_1),
    # Each server target exists in one major only: markers of the release that has it.
    surfaces=(
        ("mcp.server.lowlevel", "Server.add_request_handler"),
        ("mcp.server.lowlevel.server", "request_ctx"),
    ),
    tested=(Tested("mcp", "1.25.0", "2.3.0"),),
)
_patches = Patches()


@functools.cache
def _sdk_injects() -> bool:
    # mcp 2.x's dispatcher injects the global propagator into every request's _meta.
    return resolve("mcp.shared._otel", "inject_trace_context") is not None


def _injecting(wrapped: Any, *args: Any, **kwargs: Any) -> Any:
    return wrapped(*args, **_mcp_meta.with_propagated(kwargs))


def _call_tool(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """No call id crosses this API: it comes from ``tool_call_context(call_id)``, set by the caller
    or by a framework adapter around the tool that calls MCP (without one: outcome ``unknown``, no
    link). Inside an execution already open, the MCP call is part of it: no second span. mcp 2.x's
    ``MCP send tools/call`` CLIENT span is the RPC, a child of the execution span."""
    if not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)
    # Inside the execution (its span and call id current), so that what is injected is the call's.
    function = wrapped if _sdk_injects() else functools.partial(_injecting, wrapped)
    if execution_in_progress() is not None:
        return function(*args, **kwargs)
    name = kwargs.get("name", args[0] if args else None)
    execution = Execution(current_tool_call_id(), name if isinstance(name, str) else None, telemetry)
    return run_async(execution, function, args, kwargs)


async def _refuse_in_result(error: Any) -> Any:
    return _mcp_meta.refusal(error)


async def _tools_call_2(telemetry: Telemetry, handler: Any, ctx: Any, params: Any) -> Any:
    """The handler, run in the context extracted from ``_meta`` as the carried call's execution
    (mcp 2.x parents its own span on that context but attaches the span alone, so the carried call
    would not reach the tool); its span (``execute_tool``) gets the outcome and link. Strict mode
    answers a carried aborted call with a tool error result."""
    raw = getattr(ctx, "params", None)
    return await _mcp_meta.serve(
        telemetry,
        meta=raw.get("_meta") if isinstance(raw, Mapping) else None,
        name=getattr(params, "name", None),
        call=functools.partial(handler, ctx, params),
        refused=_refuse_in_result,
        error_of=_mcp_meta.tool_error,
    )


def _get_request_handler(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    entry = wrapped(*args, **kwargs)
    method = args[0] if args else kwargs.get("method")
    if method != "tools/call" or entry is None or not is_instrumentation_enabled():
        return entry
    try:
        return dataclasses.replace(entry, handler=functools.partial(_tools_call_2, telemetry, entry.handler))
    except Exception as exc:
        report("_frameworks.mcp.adapter._get_request_handler", exc)
        return entry


def _handle_request_1(telemetry: Telemetry, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # mcp 1.x has no span of its own for the request: the package makes it.
    from mcp import types  # imported: its module is being patched

    # A model in mcp 1.x, the only major this path runs on (a union of results in 2.x).
    server_result: Any = types.ServerResult

    message = args[0] if args else kwargs.get("message")
    request = args[1] if len(args) > 1 else kwargs.get("req")
    params = getattr(request, "params", None)
    if not isinstance(request, types.CallToolRequest) or params is None or not is_instrumentation_enabled():
        return wrapped(*args, **kwargs)

    async def answer(error: Any) -> None:
        await message.respond(server_result(_mcp_meta.refusal(error)))

    return _mcp_meta.serve(
        telemetry,
        meta=getattr(params, "meta", None),
        name=getattr(params, "name", None),
        call=functools.partial(wrapped, *args, **kwargs),
        refused=answer,
    )


def instrument(telemetry: Telemetry) -> bool:
    for (module, attr), wrapper in (
        (_CLIENT, _call_tool),
        (_SERVER_2, _get_request_handler),
        (_SERVER_1, _handle_request_1),
    ):
        if resolve(module, attr) is not None:
            _patches.wrap(module, attr, functools.partial(wrapper, telemetry))
    return bool(_patches)


def uninstrument() -> None:
    _patches.unwrap_all()
