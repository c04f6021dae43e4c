"""What is kept of a call's argument text to see whether it stops mid-document: a few characters and
a bit, whatever the text's length; nothing is parsed, joined or kept beyond them.

A document that opens with ``{`` must end with ``}``, one that opens with ``[`` with ``]``; a
string must close; ``null``, ``true`` and ``false`` must be whole; a number must end with a digit
(a number has no end mark: ``12`` may be a cut ``123``, which no text can show). Text that opens
with anything else is no JSON document: complete when its last character is ``}``.

The common case (an object, its fragments on deltas that do not name the tool) costs the stream
one check per fragment and the last character; the rest goes through ``take``.
"""

from __future__ import annotations

from typing import Protocol

# JSON's whitespace: what may surround a document.
BLANKS = " \t\n\r"

# Where a followed text ends, as to strings.
OUTSIDE = 0
INSIDE = 1
# Inside a string, right after a backslash: the next character is taken as it is.
ESCAPED = 2

# The literals, by their first character: "nul" is cut, "null" is not.
_LITERALS = {"n": "null", "t": "true", "f": "false"}
_DIGITS = "0123456789"
# The longest literal: as much of a literal document's end as is kept.
_KEEP = 5


class Text(Protocol):
    """A call's kept view of its text (``calls.Call`` holds it)."""

    # The document's first non-blank character ("": none yet).
    opened: str
    # The last non-blank character (a literal's last five).
    last: str
    # The text's strings are not followed and the last character is all it needs.
    plain: bool
    # Where the text ends as to strings (OUTSIDE, INSIDE, ESCAPED), or None: not followed.
    quoting: int | None


def take(text: Text, tail: str) -> None:
    """One fragment of non-blank text, its trailing blanks cut (``tail``), for a call not plain."""
    opened = text.opened
    if not opened:
        opened = text.opened = tail.lstrip(BLANKS)[0]
        if opened == '"':
            # A string document: only its strings tell "abc\"" (cut) from "abc\\"" (complete).
            text.quoting = OUTSIDE
        text.plain = text.quoting is None and opened not in _LITERALS
    quoting = text.quoting
    if quoting is not None:
        # With no backslash to read past, the parity of the quotes says it all.
        if quoting != ESCAPED and "\\" not in tail:
            text.quoting = quoting ^ (tail.count('"') & 1)
        else:
            text.quoting = escaped(quoting, tail)
    if opened in _LITERALS:
        text.last = (text.last + tail)[-_KEEP:]
    else:
        text.last = tail[-1]


def follow(text: Text) -> None:
    """From the first character on, the text's strings are followed, so that a ``}`` inside one is
    not taken for the document's end. Too late once non-blank text has come: it stays as it is."""
    if not text.opened:
        text.quoting = OUTSIDE
        text.plain = False


def escaped(quoting: int, piece: str) -> int:
    """Where the text ends as to strings, ``piece`` added, read one character at a time: a piece
    with a backslash, or after one (JSON has none outside a string)."""
    for char in piece:
        if quoting == ESCAPED:
            quoting = INSIDE
        elif char == '"':
            quoting ^= 1
        elif char == "\\" and quoting == INSIDE:
            quoting = ESCAPED
    return quoting


def complete(text: Text) -> bool:
    """The text so far ends a whole document (the module's rule); no text is none."""
    opened, last = text.opened, text.last
    if not opened or text.quoting:
        return False
    if opened == "{":
        return last == "}"
    if opened == "[":
        return last == "]"
    if opened == '"':
        return last == '"'
    if opened == "-" or opened in _DIGITS:
        return last in _DIGITS
    literal = _LITERALS.get(opened)
    if literal is not None:
        return last.endswith(literal)
    return last == "}"
