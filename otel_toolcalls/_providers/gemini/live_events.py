"""Translator for google-genai ``LiveServerMessage``s: one session's messages -> its turns' core events.

Read by attribute access only. A turn opens at its first model message (``serverContent`` with a
model turn, or ``toolCall``) and ends at ``turnComplete``. Function calls come whole, arguments
parsed: complete at their own message, no fragments (TELEMETRY.md section 6, "Whole calls").
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol

from otel_toolcalls._core import usage
from otel_toolcalls._core.session import ENDED, Ending
from otel_toolcalls._core.state import StreamState

from .chunks import reason_text
from .live_calls import Calls

# Keys of calls without an id (each its own block).
_unnamed = itertools.count()


class Live(Protocol):
    """What the translator reads of a Live session (``live.LiveSession``)."""

    calls: Calls

    @property
    def turn(self) -> StreamState | None: ...

    def open_turn(self, owner: Any) -> StreamState | None: ...

    def end_turn(self, how: Ending) -> None: ...


def translate_message(session: Live, message: Any, owner: Any) -> None:
    call = message.tool_call
    if call is not None:
        _tool_call(session, call, owner)
    cancellation = message.tool_call_cancellation
    if cancellation is not None:
        # {"toolCallCancellation": {"ids": ["fc_1"]}}
        session.calls.cancelled(cancellation.ids or ())
    metadata = message.usage_metadata
    if metadata is not None and session.turn is not None:
        # {"usageMetadata": {"promptTokenCount": 40, "responseTokenCount": 12, "totalTokenCount": 52}}
        session.turn.usage = usage.make(
            input_tokens=metadata.prompt_token_count, output_tokens=metadata.response_token_count
        )
    content = message.server_content
    if content is not None:
        _server_content(session, content, owner)


def _tool_call(session: Live, call: Any, owner: Any) -> None:
    # {"toolCall": {"functionCalls": [{"id": "fc_1", "name": "get_weather", "args": {"city": "Zürich"}}]}}
    calls = call.function_calls
    if not calls:
        return
    state = session.open_turn(owner)
    if state is None:
        return
    for function_call in calls:
        name = function_call.name
        if not name:
            continue
        call_id = function_call.id or None
        key = call_id if call_id is not None else ("unnamed", next(_unnamed))
        state.block_started(key, name=name, call_id=call_id, index=state.tool_calls, whole=True,
                            free_form=True, revocable=call_id is not None)  # fmt: skip
        state.block_completed(key)
        if call_id is not None:
            session.calls.delivered(call_id)


def _server_content(session: Live, content: Any, owner: Any) -> None:
    # {"serverContent": {"modelTurn": {"parts": [{"text": "Sunny."}]}}}
    if content.model_turn is not None:
        session.open_turn(owner)
    state = session.turn
    if state is None or not content.turn_complete:
        return
    # {"serverContent": {"turnComplete": true, "turnCompleteReason": "..."}}  (the reason: newer APIs)
    reason = getattr(content, "turn_complete_reason", None)
    state.settle(reason_text(reason) if reason is not None else "turn_complete")
    state.final_event()
    session.end_turn(ENDED)
