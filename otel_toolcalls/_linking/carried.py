"""A streamed call's outcome carried across a process boundary: the ``toolcall`` header's codec,
and the call an extracted context carries (TELEMETRY.md section 8).

The header is ``00-{outcome}-{trace id}-{span id}-{call id}``, e.g.
``00-completed-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-call_Qx81``: the tool_call span's
ids as W3C traceparent writes them, the call id percent-encoded (RFC 3986 unreserved characters
stay as they are). It arrives from the network: ``decode`` accepts only that exact form within
the byte budget, and answers None for anything else.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import quote, unquote

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import SpanContext, TraceFlags

from otel_toolcalls._core import names as n
from otel_toolcalls._core.registry import CallRecord, call_key

HEADER = "toolcall"
VERSION = "00"
# The whole header value: a 256-character ASCII id (the longest an id is sent) fits with room.
MAX_HEADER_BYTES = 512
_OUTCOMES = frozenset({n.COMPLETED, n.ABORTED})
_FORM = re.compile(
    r"00-(completed|aborted)-([0-9a-f]{32})-([0-9a-f]{16})-((?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)"
)
_INVALID_TRACE_ID = "0" * 32
_INVALID_SPAN_ID = "0" * 16
_KEY = otel_context.create_key("otel_toolcalls.carried_call")


class CarriedCall(NamedTuple):
    outcome: str  # "completed" or "aborted"
    call_id: str  # cut to 256 characters, as every stored id
    span_context: SpanContext  # the sender's tool_call span, remote here


def encode(outcome: str, call_id: str, span_context: SpanContext) -> str | None:
    """The header value, or None where there is nothing valid to say or it would not fit."""
    if outcome not in _OUTCOMES or not call_id or not span_context.is_valid:
        return None
    value = (
        f"{VERSION}-{outcome}-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
        f"{quote(call_key(call_id), safe='')}"
    )
    return value if len(value) <= MAX_HEADER_BYTES else None


def decode(value: object) -> CarriedCall | None:
    """What a received header value says, or None for anything not of the exact form."""
    if not isinstance(value, str) or len(value) > MAX_HEADER_BYTES:
        return None
    match = _FORM.fullmatch(value)
    if match is None:
        return None
    outcome, trace_id, span_id, encoded = match.groups()
    if trace_id == _INVALID_TRACE_ID or span_id == _INVALID_SPAN_ID:
        return None
    try:
        call_id = unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        return None
    # The id may become an attribute (an execution span that takes the carried id): printable text
    # of at most the length ids are cut to, or nothing.
    if len(call_id) > n.MAX_NAME_LENGTH or not call_id.isprintable():
        return None
    span_context = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(0))
    return CarriedCall(outcome, call_id, span_context)


def carrying(call: CarriedCall, context: Context | None = None) -> Context:
    return otel_context.set_value(_KEY, call, context)


def carried(context: Context | None = None) -> CarriedCall | None:
    """The call the (current) context carries from another process, if any."""
    value = otel_context.get_value(_KEY, context)
    return value if isinstance(value, CarriedCall) else None


def carried_record(call_id: str | None) -> CallRecord | None:
    """The current context's carried call as a registry record, when it is this call."""
    call = carried()
    if call is None or not call_id or call_key(call_id) != call.call_id:
        return None
    return CallRecord(call.outcome, None, "", n.TOOL_TYPE_FUNCTION, call.span_context)
