"""What a translator may do to a stream: the one interface between the adapters' chunk readers and
the core, a Protocol that ``blocks.Blocks`` (hence ``state.StreamState``) implements. A translator
types its stream as a ``Sink`` and needs nothing else of the core but its vocabulary (``names``,
``usage``, ``calls.classify``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol

from . import names as n
from .calls import Opening


class Sink(Protocol):
    # What the response says of itself; the translator sets each from the chunk carrying it.
    response_id: str | None
    response_model: str | None
    usage: Any  # a usage.Usage, from the event carrying the final count
    pending_usage: Any  # Anthropic's message_start usage until message_delta
    # Blocks started so far (Gemini numbers its calls by it).
    tool_calls: int

    def block_started(
        self,
        key: Hashable,
        *,
        name: str,
        call_id: str | None = None,
        index: int | None = None,
        tool_type: str = n.TOOL_TYPE_FUNCTION,
        choice: int = 0,
        whole: bool = False,
        free_form: bool = False,
        revocable: bool = False,
    ) -> None:
        """A tool-call block starts; ``whole``: it arrived whole, arguments parsed (Gemini parts);
        ``free_form``: its arguments are not a JSON object's text (OpenAI custom tool input, Gemini
        partial_args values), so no cut can be seen in them; ``revocable``: its server may take it
        back after its block ended (``revocation``). The name is cut to ``names.MAX_NAME_LENGTH``;
        an empty call id is none. A new block on the key of an open one ends that one by its own
        arguments: cut, ``unterminated``; else it ends with the rest."""
        # Written once, here: the implementation (blocks.Blocks) inherits it and takes the Opening.
        self.start_block(
            Opening(
                key, name[: n.MAX_NAME_LENGTH], call_id or None, index, tool_type, choice, whole, free_form,
                revocable,
            )
        )  # fmt: skip

    def start_block(self, opening: Opening) -> None:
        """A tool-call block starts, as ``block_started`` names it."""
        ...

    def fragment(self, key: Hashable, text: str | None) -> None: ...

    def fragment_size(self, key: Hashable, nbytes: int, text: str | None = None) -> None: ...

    def block_stopped(self, key: Hashable, *, unsettled: str | None = None) -> None: ...

    def block_completed(self, key: Hashable) -> None: ...

    def block_aborted(self, key: Hashable, reason: str | None, error_type: str | None = None) -> None: ...

    def other_block_started(self) -> None: ...

    def settle(
        self, reason: str | None, *, choice: int | None = None, completes_open: bool = False
    ) -> None: ...

    def final_event(self) -> None: ...

    def error_event(self, error_type: str | None) -> None: ...

    def is_open(self, key: Hashable) -> bool: ...

    def call_id_of(self, key: Hashable) -> str | None:
        """The call id of the block open at ``key`` (None: none open, or it has no id)."""
        ...

    def open_keys(self) -> list[Hashable]: ...

    def arguments_closed(self, key: Hashable) -> bool:
        """The call open at ``key`` has arguments that end a whole document: a ``{`` closed by a
        ``}`` (outside a string, where its strings are followed), a ``[`` by a ``]``, a whole literal."""
        ...

    def follow_strings(self, key: Hashable) -> None:
        """The call open at ``key`` follows its strings from its first character, so that a ``}``
        inside one is no end for ``arguments_closed``; a call whose text has begun is left as it is."""
        ...


# A translator: reads one chunk (or event) by attribute access and calls the stream's Sink methods.
# The adapters hand one to ``Request.attach``; ``by_type`` builds one from a handler per event type.
Translator = Callable[[Sink, Any], None]


def by_type(handlers: dict[str, Translator], *, name: str, module: str) -> Translator:
    """A translator that hands each event to the handler of its ``type`` (others are ignored);
    ``name`` and ``module`` are its own, for the internal-error site it reports under."""

    def translate_event(state: Sink, event: Any) -> None:
        handler = handlers.get(event.type)
        if handler is not None:
            handler(state, event)

    translate_event.__qualname__ = translate_event.__name__ = name
    translate_event.__module__ = module
    return translate_event
