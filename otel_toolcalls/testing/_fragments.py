"""Argument strings cut where streamed tool calls break naive code, and wire writes cut mid-character."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from typing import Any


def awkward_points(arguments: str) -> list[int]:
    """Cut points inside a string literal, between a key and its colon, mid-number, and on both sides
    of every multi-byte character."""
    points: set[int] = set()
    for match in re.finditer(r'"([^"\\]{2,})"(\s*):', arguments):
        points.add(match.end(1) + 1)  # after the key's closing quote, before the colon
    for match in re.finditer(r':\s*"([^"\\]{2,})"', arguments):
        points.add(match.start(1) + len(match.group(1)) // 2)  # inside the string literal
    for match in re.finditer(r"-?\d{2,}(\.\d+)?", arguments):
        points.add(match.start() + (match.end() - match.start()) // 2)  # mid-number
    for i, char in enumerate(arguments):
        if ord(char) > 0x7F:
            points.update((i, i + 1))
    return sorted(p for p in points if 0 < p < len(arguments))


def split_at(text: str, points: Iterable[int]) -> list[str]:
    cuts = [0, *sorted(set(points)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def awkward_split(arguments: str) -> list[str]:
    return split_at(arguments, awkward_points(arguments))


def pieces_of(arguments: str, fragments: list[str] | None) -> list[str]:
    """A call's argument fragments as sent: the given ones, else its arguments cut at awkward places."""
    return fragments if fragments is not None else awkward_split(arguments)


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; JSON keeps non-ASCII characters raw, as providers send them."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def split_mid_character(data: bytes) -> list[bytes]:
    """Two socket writes, the cut inside the first multi-byte UTF-8 character (if any)."""
    for i, byte in enumerate(data):
        if byte >= 0xC0:  # lead byte of a multi-byte sequence
            return [data[: i + 1], data[i + 1 :]]
    return [data]
