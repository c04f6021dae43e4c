"""Translator for Nova Sonic's output events on Bedrock's bidirectional stream
(``InvokeModelWithBidirectionalStream``, the smithy-based ``aws-sdk-bedrock-runtime``).

Each event the SDK hands over is a chunk whose ``value.bytes_`` is a JSON document
``{"event": {"<type>": {...}}}``. A tool use comes whole in one ``toolUse`` event, between its
``contentStart`` and its ``contentEnd``: the block starts at ``toolUse`` (name, id and the whole
arguments text, one fragment) and ends at its ``contentEnd``, ``completed``, or ``aborted`` /
``cancelled`` when its stop reason is ``INTERRUPTED`` (the user barged in). A turn, one inference
span, runs from the first assistant or tool content to ``END_TURN``, ``INTERRUPTED``,
``completionEnd`` or the next user content; a barge-in ends it ``cancelled``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from otel_toolcalls._core import names as n
from otel_toolcalls._core.session import CANCELLED, ENDED, Ending
from otel_toolcalls._core.state import StreamState
from otel_toolcalls._linking import settling

# The event's type, read from the document's head so audio (most events, and the largest) is
# skipped unparsed.
_HEAD = re.compile(rb'^\s*\{\s*"event"\s*:\s*\{\s*"(\w+)"')
_WANTED = frozenset((b"contentStart", b"toolUse", b"contentEnd", b"completionEnd"))
_ENDS_TURN = frozenset(("END_TURN", "INTERRUPTED"))


class Bidi(Protocol):
    # contentId -> toolUseId of the tool blocks open now.
    tools: dict[str, str]

    @property
    def turn(self) -> StreamState | None: ...

    def open_turn(self, owner: Any) -> StreamState | None: ...

    def end_turn(self, how: Ending) -> None: ...


def event_of(chunk: Any) -> tuple[str, dict[str, Any]] | None:
    """The (type, body) of a chunk the translator acts on, else None."""
    raw = getattr(getattr(chunk, "value", None), "bytes_", None)
    if not isinstance(raw, (bytes, bytearray)):
        return None
    head = _HEAD.match(raw[:64])
    if head is not None and head.group(1) not in _WANTED:
        return None
    document = json.loads(raw)
    event = document.get("event") if isinstance(document, dict) else None
    if not isinstance(event, dict) or not event:
        return None
    kind, body = next(iter(event.items()))
    return (kind, body) if isinstance(body, dict) else None


def translate_event(session: Bidi, chunk: Any, owner: Any) -> None:
    found = event_of(chunk)
    if found is None:
        return
    kind, body = found
    if kind == "toolUse":
        _tool_use(session, body, owner)
    elif kind == "contentEnd":
        _content_end(session, body)
    elif kind == "contentStart":
        # {"contentStart": {"type": "TEXT", "role": "ASSISTANT", "contentId": "c1", ...}}
        role = str(body.get("role", "")).upper()
        if role == "USER":
            session.end_turn(ENDED)
        elif role in ("ASSISTANT", "TOOL"):
            session.open_turn(owner)
    elif kind == "completionEnd":
        _end_turn(session, body.get("stopReason") or "completion_end")


def _tool_use(session: Bidi, body: dict[str, Any], owner: Any) -> None:
    # {"toolUse": {"toolName": "get_weather", "toolUseId": "t1", "contentId": "c2",
    #              "content": "{\"city\":\"Z\"}"}}
    name, call_id = body.get("toolName"), body.get("toolUseId")
    if not isinstance(name, str) or not name:
        return
    call_id = call_id if isinstance(call_id, str) and call_id else None
    key = body.get("contentId") or call_id
    if not isinstance(key, str):
        return
    state = session.open_turn(owner)
    if state is None:
        return
    if call_id is not None:
        settling.unsettled(call_id)
        session.tools[key] = call_id
    state.block_started(key, name=name, call_id=call_id, index=state.tool_calls)
    content = body.get("content")
    state.fragment(key, content if isinstance(content, str) else None)


def _content_end(session: Bidi, body: dict[str, Any]) -> None:
    # {"contentEnd": {"type": "TOOL", "contentId": "c2", "stopReason": "TOOL_USE"}}
    reason = body.get("stopReason")
    key = body.get("contentId")
    state = session.turn
    if state is not None and isinstance(key, str) and state.is_open(key):
        if reason == "INTERRUPTED":
            state.block_aborted(key, n.CANCELLED)
        else:
            state.block_completed(key)
        call_id = session.tools.pop(key, None)
        if call_id is not None:
            settling.settled(call_id)
    if reason in _ENDS_TURN:
        _end_turn(session, str(reason))


def _end_turn(session: Bidi, reason: str) -> None:
    state = session.turn
    if state is None:
        return
    if reason == "INTERRUPTED":
        # A barge-in: the user's speech cut the response, and any call still open in it.
        session.end_turn(CANCELLED)
        return
    state.settle(reason.lower())
    state.final_event()
    session.end_turn(ENDED)
