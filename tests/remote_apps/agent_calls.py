"""What both remote agents (HTTP, Celery) stream and send: two complete calls and one cut
mid-arguments, through the real openai SDK from the package's fake provider; and the hand-made
``toolcall`` header values a hostile or broken sender could put on a request.
"""

from __future__ import annotations

from typing import Any

import openai

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, request, tool_call_script

FIRST = ToolCall(name="get_weather", id="call_remote_1", arguments='{"city": "Zürich", "days": 3}')
SECOND = ToolCall(name="get_weather", id="call_remote_2", arguments='{"city": "Genève", "days": 5}')
CUT = ToolCall(
    name="get_weather",
    id="call_remote_cut",
    arguments='{"city": "Basel", "days": 7}',
    fragments=['{"ci', 'ty": "Ba', 'sel", "da', 'ys": 7}'],
)
CALLS = (FIRST, SECOND, CUT)
# An id this process never streamed: inside its tool_call_context nothing is injected.
NEVER_STREAMED = "call_never_streamed"

_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
_SPAN = "00f067aa0ba902b7"


def well_formed(call_id: str, outcome: str = "completed") -> str:
    return f"00-{outcome}-{_TRACE}-{_SPAN}-{call_id}"


def _claims(label: str, header: str) -> tuple[str, list[str]]:
    """A header claiming the very call it is sent for, had it been accepted."""
    call_id = f"call_forged_{label}"
    return call_id, [header.format(id=call_id)]


_LONG = "c" * 257
_HUGE = "call_" + "x" * 600
# label -> (the call id the request is for, the header values sent, each a header line). Each
# would make that call's outcome "completed" if it were accepted (as WELL_FORMED does).
BAD_HEADERS: dict[str, tuple[str, list[str]]] = {
    "garbage": _claims("garbage", "not a toolcall header {id}"),
    "empty": ("call_forged_empty", [""]),
    "oversized": (_HUGE, [well_formed(_HUGE)]),
    "id_over_256": (_LONG, [well_formed(_LONG)]),
    "unknown_outcome": _claims("unknown_outcome", f"00-finished-{_TRACE}-{_SPAN}-{{id}}"),
    "other_version": _claims("other_version", f"01-completed-{_TRACE}-{_SPAN}-{{id}}"),
    "zero_trace_id": _claims("zero_trace_id", f"00-completed-{'0' * 32}-{_SPAN}-{{id}}"),
    "zero_span_id": _claims("zero_span_id", f"00-completed-{_TRACE}-{'0' * 16}-{{id}}"),
    "uppercase_ids": _claims("uppercase_ids", f"00-completed-{_TRACE.upper()}-{_SPAN.upper()}-{{id}}"),
    "short_trace_id": _claims("short_trace_id", f"00-completed-{_TRACE[:30]}-{_SPAN}-{{id}}"),
    "control_character_id": ("call\nforged", [well_formed("call%0Aforged")]),
    "invalid_utf8_id": _claims("invalid_utf8_id", well_formed("{id}%FF%FE")),
    "duplicate": ("call_forged_duplicate", [well_formed("call_forged_duplicate")] * 2),
    "folded_duplicate": _claims("folded_duplicate", well_formed("{id}") + ", " + well_formed("{id}")),
}
# What a Celery message header can hold beyond one string: a repeated value, a value of another type.
MESSAGE_BAD_HEADERS: dict[str, tuple[str, Any]] = {
    "list_of_two": ("call_forged_list_of_two", [well_formed("call_forged_list_of_two")] * 2),
    "number": ("call_forged_number", 12345),
    "mapping": ("call_forged_mapping", {"outcome": "completed", "id": "call_forged_mapping"}),
}
# The bad headers as message headers: the one-line ones (a mapping holds a name once), and those.
MESSAGE_HEADERS: dict[str, tuple[str, Any]] = {
    **{label: (call_id, values[0]) for label, (call_id, values) in BAD_HEADERS.items() if len(values) == 1},
    **MESSAGE_BAD_HEADERS,
}
# The control: the same kind of request with one well-formed header is taken at its word (a sender
# may claim "completed" for a call the receiver would otherwise call unknown: the trust model).
WELL_FORMED = ("call_forged_well_formed", [well_formed("call_forged_well_formed")])


def stream_calls(fake: FakeProvider) -> None:
    """Both complete calls in one response; the cut one in a second, the stream failing after its
    block start and two argument fragments."""
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    fake.enqueue(tool_call_script([FIRST, SECOND]))
    for _ in client.chat.completions.create(**request()):
        pass
    fake.enqueue(tool_call_script([CUT], cut_after=3))
    try:
        for _ in client.chat.completions.create(**request()):
            pass
    except openai.APIConnectionError:
        pass  # the cut: the agent hands the call on anyway, as the user did
