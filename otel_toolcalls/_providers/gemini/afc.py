"""Execution spans around the tools google-genai runs itself (automatic function calling).

``get_function_response_parts`` (and its async twin) learns which calls of the chunk will run, in
order; ``invoke_function_from_dict_args`` (or ``..._async``) runs one of them inside
``execute_tool``: linked when that call completed, refused in strict mode when it was aborted.
"""

from __future__ import annotations

import contextvars
from collections import deque
from typing import Any

from otel_toolcalls._core.errors import report
from otel_toolcalls._linking.execute import execute_tool

# (call id, tool name, the function the SDK will invoke for it), in the SDK's order.
_Queue = deque[tuple[str | None, str, Any]]
_PENDING: contextvars.ContextVar[_Queue | None] = contextvars.ContextVar(
    "otel_toolcalls_gemini_afc", default=None
)


def _queue(response: Any, function_map: Any, *, needs_args: bool) -> _Queue:
    """The calls ``get_function_response_parts`` will invoke, read the way it reads them."""
    queue: _Queue = deque()
    candidates = response.candidates
    content = candidates[0].content if candidates else None
    for part in (content.parts if content is not None else None) or ():
        call = part.function_call
        if call is None or call.name is None or (needs_args and call.args is None):
            continue
        # No function_call.id: outcome unknown (TELEMETRY.md section 6, "No id"), as matching by
        # name alone could link the wrong call.
        queue.append((call.id or None, call.name, function_map.get(call.name)))
    return queue


def _next_call(function: Any) -> tuple[str | None, str | None]:
    queue = _PENDING.get()
    while queue:
        call_id, name, expected = queue.popleft()
        if expected is function:
            return call_id, name
    return None, None  # MCP tools and calls made outside a response: no call to link


def responses_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    token = _begin(args, kwargs, needs_args=True)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _end(token)


async def async_responses_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    token = _begin(args, kwargs, needs_args=False)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _end(token)


def invoke_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # A strict refusal (IncompleteToolCallError) reaches the SDK, which answers the model with an
    # error result instead of running the tool.
    call_id, name = _call_of(args, kwargs)
    with execute_tool(call_id, name=name):
        return wrapped(*args, **kwargs)


async def async_invoke_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    call_id, name = _call_of(args, kwargs)
    async with execute_tool(call_id, name=name):
        return await wrapped(*args, **kwargs)


def _call_of(args: Any, kwargs: Any) -> tuple[str | None, str | None]:
    function = kwargs.get("function_to_invoke", args[1] if len(args) > 1 else None)
    try:
        call_id, name = _next_call(function)
    except Exception as exc:
        report("_providers.gemini.afc._call_of", exc)
        call_id = name = None
    return call_id, name or getattr(function, "__name__", None)


def _begin(args: Any, kwargs: Any, *, needs_args: bool) -> contextvars.Token[_Queue | None] | None:
    try:
        response = kwargs.get("response", args[0] if args else None)
        function_map = kwargs.get("function_map", args[1] if len(args) > 1 else None) or {}
        return _PENDING.set(_queue(response, function_map, needs_args=needs_args))
    except Exception as exc:
        report("_providers.gemini.afc._begin", exc)
        return None


def _end(token: contextvars.Token[_Queue | None] | None) -> None:
    if token is not None:
        _PENDING.reset(token)
