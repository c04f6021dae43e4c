"""Each provider API's wire format, seen through one small interface: a list of events for some
tool calls and an ending, which of them are argument fragments, and how the builders of
``otel_toolcalls.testing`` write them (one event per socket write, multi-byte text cut inside a
character). From that, every fault of the matrix is the same three operations: end the body in
some way, drop the connection after some fragments, or hold the body back at a gate."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from otel_toolcalls.testing import Script, awkward_split, split_mid_character, sse
from otel_toolcalls.testing import anthropic as wire_anthropic
from otel_toolcalls.testing import bedrock as wire_bedrock
from otel_toolcalls.testing import cohere as wire_cohere
from otel_toolcalls.testing import gemini as wire_gemini
from otel_toolcalls.testing import mistral as wire_mistral
from otel_toolcalls.testing import ollama as wire_ollama
from otel_toolcalls.testing import openai_chat as wire_chat
from otel_toolcalls.testing import openai_responses as wire_responses
from otel_toolcalls.testing.scenario import timed_script


@dataclass(frozen=True)
class Call:
    """A tool call in no provider's shape; each wire writes it its way."""

    name: str
    id: str
    arguments: str

    def pieces(self) -> list[str]:
        return awkward_split(self.arguments)


# Cut inside a string, between a key and its colon, mid-number, around multi-byte characters.
WEATHER = Call(
    "get_weather",
    "call_weather_1",
    '{"location": "Zürich, Schweiz", "unit": "celsius", "days": 14, "note": "naïve ☀️ check"}',
)
CLOCK = Call("get_time", "call_time_2", '{"timezone": "Europe/Zürich", "offset": -120}')

# How a body ends: the completion event, a token limit, a content filter, or no completion event.
ENDINGS = ("completed", "truncated", "filtered", "incomplete")


class Wire:
    """``events(calls, ending)``; ``is_fragment(event)``; ``encode(events, cut_after)``; the byte
    sizes of each call's fragments in order (``sizes``)."""

    content_type = "text/event-stream"
    # Calls arrive whole, arguments parsed: no fragments and no size (TELEMETRY section 6).
    whole = False
    # The SDK hands the call id over (Ollama's client keeps none: section 6, "No id").
    ids = True

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        raise NotImplementedError

    def is_fragment(self, event: Any) -> bool:
        raise NotImplementedError

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        raise NotImplementedError

    FINISH: dict[str, str | None] = {}

    def sizes(self, call: Call) -> list[int]:
        return [len(p.encode("utf-8")) for p in call.pieces()]

    def finish(self, ending: str) -> str:
        """The inference span's finish reason for a body with this ending: as received, or
        ``error`` in the place of one that never arrived (TELEMETRY section 2)."""
        return self.FINISH.get(ending) or "error"

    def script(self, calls: Sequence[Call], ending: str = "completed") -> Script:
        return self.encode(self.events(calls, ending))

    def _after(self, events: Sequence[Any], fragments: int) -> int:
        """The position just after the ``fragments``-th fragment event of the body."""
        seen = 0
        for i, event in enumerate(events):
            seen += self.is_fragment(event)
            if seen == fragments:
                return i + 1
        raise AssertionError(f"the body has fewer than {fragments} fragments")

    def cut(self, calls: Sequence[Call], after: int) -> Script:
        """The connection drops after ``after`` fragments of the last call."""
        before = sum(len(self.sizes(c)) for c in calls[:-1])
        events = self.events(calls, "completed")
        return self.encode(events, cut_after=self._after(events, before + after))

    def gated(self, calls: Sequence[Call], after: int, gate: threading.Event) -> Script:
        """The whole body, but the server writes nothing after ``after`` fragments of the first call
        until ``gate`` is set: the consumer is certainly inside the call when it acts."""
        events = self.events(calls, "completed")
        full = self.encode(events)
        held = len(self.encode(events, cut_after=self._after(events, after)).writes)
        return timed_script(list(full.writes), {held: gate}, content_type=full.content_type)


class Chat(Wire):
    """OpenAI Chat Completions (openai, groq, litellm's own handler)."""

    FINISH = {
        "completed": "tool_calls",
        "truncated": "length",
        "filtered": "content_filter",
        "incomplete": None,
    }

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        tool_calls = [wire_chat.ToolCall(c.name, c.arguments, id=c.id) for c in calls]
        return wire_chat.events_for(tool_calls, finish_reason=self.FINISH[ending])

    def is_fragment(self, event: Any) -> bool:
        return event.name is None and bool(event.arguments)

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        return wire_chat.script_for(events, cut_after=cut_after)


class Mistral(Wire):
    """Mistral's chat SSE: every delta repeats the name, later ids are the string "null"."""

    FINISH = {"completed": "tool_calls", "truncated": "length", "incomplete": None}

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        tool_calls = [wire_chat.ToolCall(c.name, c.arguments, id=c.id) for c in calls]
        return wire_mistral.chunks_for(tool_calls, finish_reason=self.FINISH[ending])

    def is_fragment(self, event: Any) -> bool:
        delta = event["choices"][0]["delta"]
        return any(call["function"]["arguments"] for call in delta.get("tool_calls", ()))

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        # As wire_mistral.tool_call_script writes them.
        writes: list[bytes] = []
        for payload in events[:cut_after]:
            writes.extend(split_mid_character(sse(payload)))
        if cut_after is None:
            writes.append(sse("[DONE]"))
        return Script(writes, end="cut" if cut_after is not None else "done")


class Responses(Wire):
    """OpenAI Responses: output items, ``response.incomplete`` for limits and filters."""

    FINISH = {"completed": "completed", "truncated": "max_output_tokens", "filtered": "content_filter"}

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        status = "completed" if ending == "completed" else None  # None: the item is still open
        items = [wire_responses.ToolCall(c.name, c.arguments, call_id=c.id, status=status) for c in calls]
        if ending == "completed":
            return wire_responses.events_for(items)
        if ending == "incomplete":
            return wire_responses.events_for(items, end=None)
        why = {"truncated": "max_output_tokens", "filtered": "content_filter"}[ending]
        return wire_responses.events_for(items, end="incomplete", reason=why)

    def is_fragment(self, event: Any) -> bool:
        return bool(event["type"] == "response.function_call_arguments.delta" and event["delta"])

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        return wire_responses.script_for(events, cut_after=cut_after)


class Anthropic(Wire):
    """Anthropic Messages SSE; ``bedrock``: the same events in AWS event-stream frames
    (``AnthropicBedrock``)."""

    FINISH = {"completed": "tool_use", "truncated": "max_tokens", "filtered": "refusal", "incomplete": None}

    def __init__(self, *, bedrock: bool = False) -> None:
        self.bedrock = bedrock

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        open_last = ending == "incomplete"  # the body stops at an event boundary inside the block
        blocks = [
            wire_anthropic.ToolUse(c.name, c.arguments, id=c.id, stop=not (open_last and i == len(calls) - 1))
            for i, c in enumerate(calls)
        ]
        return wire_anthropic.events_for(blocks, stop_reason=self.FINISH[ending], final=not open_last)

    def is_fragment(self, event: Any) -> bool:
        name, data = event
        return bool(name == "content_block_delta" and data["delta"].get("partial_json"))

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        if self.bedrock:
            return wire_anthropic.bedrock_script_for(events, cut_after=cut_after)
        return wire_anthropic.script_for(events, cut_after=cut_after)


class Bedrock(Wire):
    """ConverseStream event-stream frames, kept with what each frame is."""

    content_type = "application/vnd.amazon.eventstream"
    FINISH = {
        "completed": "tool_use",
        "truncated": "max_tokens",
        "filtered": "guardrail_intervened",
        "incomplete": None,
    }

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        events: list[tuple[str, bytes]] = [("start", wire_bedrock.message_start())]
        for index, c in enumerate(calls):
            use = wire_bedrock.ToolUse(c.name, c.arguments, id=c.id)
            events.append(("block", wire_bedrock.block_start(index, use)))
            events.extend(("fragment", wire_bedrock.tool_delta(index, p)) for p in use.pieces())
            if ending != "incomplete" or index < len(calls) - 1:
                events.append(("stop", wire_bedrock.block_stop(index)))
        if self.FINISH[ending] is not None:
            events.append(("end", wire_bedrock.message_stop(self.FINISH[ending])))
            events.append(("metadata", wire_bedrock.metadata()))
        return events

    def is_fragment(self, event: Any) -> bool:
        return bool(event[0] == "fragment")

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        return wire_bedrock.script_for([frame for _, frame in events], cut_after=cut_after)


class Cohere(Wire):
    """Cohere v2 typed events, kept with what each event is."""

    FINISH = {"completed": "TOOL_CALL", "truncated": "MAX_TOKENS", "incomplete": None}

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        events: list[tuple[str, bytes]] = [
            ("start", wire_cohere.message_start()),
            ("plan", wire_cohere.tool_plan_delta("I will look that up.")),
        ]
        for index, c in enumerate(calls):
            call = wire_chat.ToolCall(c.name, c.arguments, id=c.id)
            events.append(("block", wire_cohere.tool_call_start(index, call)))
            events.extend(("fragment", wire_cohere.tool_call_delta(index, p)) for p in call.pieces())
            # A limit cuts the last call before its tool-call-end; a body without message-end too.
            if ending == "completed" or index < len(calls) - 1:
                events.append(("stop", wire_cohere.tool_call_end(index)))
        if self.FINISH[ending] is not None:
            events.append(("end", wire_cohere.message_end(self.FINISH[ending])))
        return events

    def is_fragment(self, event: Any) -> bool:
        return bool(event[0] == "fragment")

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        return wire_cohere.script_for([data for _, data in events], cut_after=cut_after)


def partials(call: Call) -> list[wire_gemini.Partial]:
    """A call's arguments as Vertex ``partialArgs``: the same JSON object, string values cut at
    awkward places, numbers whole."""
    import json

    return wire_gemini.partials_for(json.loads(call.arguments))


class GeminiVertex(Wire):
    """Vertex ``stream_function_call_arguments``: a run of parts per call."""

    FINISH = {"completed": "STOP", "truncated": "MAX_TOKENS", "filtered": "SAFETY", "incomplete": None}

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        parts: list[dict[str, Any]] = []
        for i, c in enumerate(calls):
            run = wire_gemini.streamed_call(c.name, partials(c), c.id)
            parts.extend(run if ending == "completed" or i < len(calls) - 1 else run[:-1])
        if ending == "completed":
            return wire_gemini.one_part_each(parts)
        chunks = wire_gemini.one_part_each(parts, finish_reason=None)
        if self.FINISH[ending] is not None:  # the limit or filter hit while the last call was open
            chunks.append(wire_gemini.chunk(finish_reason=self.FINISH[ending], usage=wire_gemini.USAGE))
        return chunks

    def is_fragment(self, event: Any) -> bool:
        parts = event["candidates"][0]["content"]["parts"]
        return any(p.get("functionCall", {}).get("partialArgs") for p in parts)

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        # The cut drops the connection inside the next chunk's JSON (cut_inside); the gate's
        # prefix must be whole events, so the prefix is measured without it.
        return wire_gemini.script_for(events, cut_after=cut_after, cut_inside=cut_after is not None)

    def gated(self, calls: Sequence[Call], after: int, gate: threading.Event) -> Script:
        events = self.events(calls, "completed")
        full = self.encode(events)
        prefix = wire_gemini.script_for(events, cut_after=self._after(events, after), cut_inside=False)
        return timed_script(list(full.writes), {len(prefix.writes): gate}, content_type=full.content_type)

    def sizes(self, call: Call) -> list[int]:
        return [p.size() for p in partials(call)]


class GeminiWhole(Wire):
    """The Developer API: each function call arrives whole in one part (no fragments)."""

    whole = True

    FINISH = {"completed": "STOP", "truncated": "MAX_TOKENS", "filtered": "SAFETY"}

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        import json

        parts = [wire_gemini.whole_call(c.name, json.loads(c.arguments), c.id) for c in calls]
        # The limit or filter rides on the chunk of the last call, as Gemini sends it.
        return wire_gemini.one_part_each(parts, finish_reason=self.FINISH[ending])

    def is_fragment(self, event: Any) -> bool:
        return False

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        return wire_gemini.script_for(events, cut_after=cut_after)

    def sizes(self, call: Call) -> list[int]:
        return []


class Ollama(Wire):
    """Ollama's /api/chat NDJSON: each call whole in a chunk of its own, then the done chunk."""

    content_type = wire_ollama.CONTENT_TYPE
    whole = True
    ids = False
    FINISH = {"completed": "stop"}

    def events(self, calls: Sequence[Call], ending: str) -> list[Any]:
        import json

        tool_calls = [wire_ollama.ToolCall(c.name, json.loads(c.arguments), c.id) for c in calls]
        return wire_ollama.chunks_for(tool_calls, done_reason=self.FINISH[ending])

    def is_fragment(self, event: Any) -> bool:
        return False

    def encode(self, events: Sequence[Any], cut_after: int | None = None) -> Script:
        return wire_ollama.script_for(events, cut_after=cut_after)

    def sizes(self, call: Call) -> list[int]:
        return []
