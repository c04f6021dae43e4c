"""One tool-call block: its record while open, and its end (registry, metrics, span).

The end is three steps, each guarded alone: neither the registry nor the metrics depend on the
exporter path that ``span.end()`` runs (a synchronous processor, a raising one).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from . import names as n
from . import process
from .document import complete
from .errors import guarded, report
from .metrics import CallEnd
from .registry import CallRecord
from .telemetry import Telemetry

# Finish/stop reasons, matched on lower-cased text, so a name the table does not list still lands in
# the right class (TELEMETRY.md section 6: "token limits of any name", "refusal of any name").
_TRUNCATING = ("length", "max_tokens", "max_output_tokens", "context_window", "token_limit")
_FILTERING = (
    "filter",
    "safety",
    "recitation",
    "blocklist",
    "prohibited",
    "guardrail",
    "refusal",
    "spii",
    "armor",
)
_ERRORING = frozenset({"error", "timeout", "failed"})


# Finish reasons are few ("stop", "tool_calls", "end_turn"...): each is classified once. Bounded,
# as a reason is provider output: past the bound, reasons are classified each time.
_CLASSIFIED: dict[str, str | None] = process.CLASSIFIED
_CLASSIFIED_MAX = 256


def classify(reason: str | None) -> str | None:
    """The abort reason a finish/stop reason means, or None when it completes what it settles."""
    if not reason:
        return None
    try:
        return _CLASSIFIED[reason]
    except (KeyError, TypeError):
        pass
    found = _classify(reason)
    if len(_CLASSIFIED) < _CLASSIFIED_MAX and isinstance(reason, str):
        _CLASSIFIED[reason] = found
    return found


def _classify(reason: str) -> str | None:
    low = reason.lower()
    if "malformed" in low:
        return n.MALFORMED
    if low in _ERRORING:
        return n.STREAM_ERROR
    if any(word in low for word in _TRUNCATING):
        return n.TRUNCATED
    if any(word in low for word in _FILTERING):
        return n.FILTERED
    return None


def error_type_of(exc: BaseException) -> str:
    """``openai.APIConnectionError`` rather than ``openai._exceptions.APIConnectionError``."""
    cls = type(exc)
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    public = []
    for part in module.split("."):
        if part.startswith("_"):
            break
        public.append(part)
    return ".".join([*public, cls.__qualname__]) if public else cls.__qualname__


def start_span(tracer: trace.Tracer, name: str, **options: Any) -> Span:
    """A span processor raising in ``on_start`` loses the span, not the call's outcome or metrics."""
    try:
        return tracer.start_span(name, **options)
    except Exception as exc:
        report("start_span", exc)
        return trace.INVALID_SPAN


def utf8_len(text: str) -> int:
    # str.isascii() is O(1) in CPython; only non-ASCII fragments pay for an encode.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass(slots=True)
class Opening:
    """A tool-call block as its start event names it, the name already cut and an empty id None
    (made per block: not frozen, whose every field would be set through object.__setattr__)."""

    key: Hashable
    name: str
    call_id: str | None
    index: int | None
    tool_type: str
    choice: int
    # It arrived whole, its arguments parsed (Gemini parts).
    whole: bool
    # Its arguments are not a JSON object's text (OpenAI custom tool input, Gemini partial_args
    # values): the unterminated check does not apply.
    free_form: bool = False
    # Its server may still take it back after its block ends (revocation).
    revocable: bool = False


class Call:
    __slots__ = (
        "call_id",
        "checked",
        "choice",
        "content",
        "deltas",
        "index",
        "key",
        "last",
        "name",
        "opened",
        "plain",
        "quoting",
        "revocable",
        "revoked",
        "room",
        "size",
        "span",
        "start_ns",
        "stop_ns",
        "tool_type",
        "whole",
    )

    def __init__(self, opening: Opening, span: Span, start_ns: int, capture: bool) -> None:
        self.key = opening.key
        self.name = opening.name
        self.call_id = opening.call_id
        self.index = opening.index
        self.tool_type = opening.tool_type
        self.choice = opening.choice
        self.span = span
        self.start_ns = start_ns
        self.stop_ns: int | None = None
        self.deltas = 0
        self.size = 0
        # A call that arrived whole, its arguments parsed (Gemini): nothing to measure, so no size
        # (TELEMETRY.md section 6). Any other call's size is 0 until a fragment arrives.
        self.whole = opening.whole
        # All that is kept of the text, enough to see arguments that stop mid-document
        # (document.Text): its first and last non-blank characters, and where strings are followed,
        # whether it ends inside one.
        self.opened = ""
        self.last = ""
        self.quoting: int | None = None
        self.checked = not (opening.free_form or opening.whole)
        # Text that is not checked needs nothing kept: the cheap path from the first fragment.
        self.plain = not self.checked
        # Content capture keeps only the characters it will emit, not the whole argument text.
        self.content: list[str] | None = [] if capture else None
        self.room = n.MAX_ARGUMENTS_LENGTH
        self.revocable = opening.revocable
        # The reason of a revocation that came while its block was open (revocation.revoke).
        self.revoked: str | None = None

    def cut(self) -> bool:
        """Its arguments visibly stop mid-document (``document``: a ``{`` owes a ``}``, a ``[`` a
        ``]``, a literal its whole). No fragment, or blanks only, is no evidence of a cut."""
        return self.checked and self.opened != "" and not complete(self)

    def keep(self, text: str) -> None:
        """Keeps the part of ``text`` that still fits in the captured prefix (cut by characters, as
        the emitted value is)."""
        room = self.room
        if room > 0 and self.content is not None:
            piece = text[:room]
            self.content.append(piece)
            self.room = room - len(piece)


# A call to end, its abort reason (None: completed), error type and end time (None: now).
End = tuple[Call, "str | None", "str | None", "int | None"]


def end_call(
    t: Telemetry,
    labels: tuple[str, str | None],
    call: Call,
    reason: str | None,
    error_type: str | None,
    end_ns: int,
    *,
    remember: bool = True,
) -> None:
    """Remembers a call, records its metrics and ends its span; ``reason`` None is completed.
    ``labels``: the stream's provider and request model; ``remember`` False: the registry has it."""
    if reason is None and call.cut():
        # A completion event is not proof (vLLM labels a max_tokens cut "tool_calls").
        reason = n.UNTERMINATED
    if reason is None and call.revoked is not None:
        reason = call.revoked
    outcome = n.COMPLETED if reason is None else n.ABORTED
    if reason == n.STREAM_ERROR:
        error_type = error_type or n.OTHER
    elif reason is not None:
        error_type = reason
    if call.call_id and remember:
        guarded(_remember, t, call, outcome, reason)
    guarded(_record_metrics, t, labels, call, outcome, reason, error_type, end_ns)
    guarded(_end_span, call, outcome, reason, error_type, end_ns)


def _remember(t: Telemetry, call: Call, outcome: str, reason: str | None) -> None:
    assert call.call_id is not None
    record = CallRecord(outcome, reason, call.name, call.tool_type, call.span.get_span_context())
    t.registry.put(call.call_id, record)


def _end_span(call: Call, outcome: str, reason: str | None, error_type: str | None, end_ns: int) -> None:
    span = call.span
    if span.is_recording():
        # One set_attributes: the SDK takes its lock and checks the span once, not per attribute.
        attributes: dict[str, Any] = {n.TOOLCALL_ARGUMENTS_DELTAS: call.deltas}
        if call.deltas or not call.whole:
            attributes[n.TOOLCALL_ARGUMENTS_SIZE] = call.size
        attributes[n.TOOLCALL_OUTCOME] = outcome
        if reason is not None:
            attributes[n.TOOLCALL_ABORT_REASON] = reason
            attributes[n.ERROR_TYPE] = error_type or reason
        if call.content is not None:
            attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] = "".join(call.content)
        span.set_attributes(attributes)
        if reason is not None:
            span.set_status(Status(StatusCode.ERROR, n.ABORT_DESCRIPTIONS[reason]))
    span.end(end_time=end_ns)


def _record_metrics(
    t: Telemetry,
    labels: tuple[str, str | None],
    call: Call,
    outcome: str,
    reason: str | None,
    error_type: str | None,
    end_ns: int,
) -> None:
    provider, model = labels
    t.metrics.call_ended(
        CallEnd(
            provider=provider,
            model=model,
            tool_name=call.name,
            outcome=outcome,
            reason=reason,
            error_type=error_type,
            # A call that arrived whole (no fragment) has no size to measure.
            arguments_size=call.size if call.deltas or not call.whole else None,
            arguments_deltas=call.deltas,
            seconds=max(0, end_ns - call.start_ns) / 1e9,
        )
    )
