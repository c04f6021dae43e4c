"""Spans read back from a subprocess's ConsoleSpanExporter output."""

from __future__ import annotations

import json
from typing import Any


def console_spans(stdout: str) -> list[dict[str, Any]]:
    """The ConsoleSpanExporter prints one JSON object per span; other output is skipped."""
    decoder, spans, i = json.JSONDecoder(), [], 0
    while (start := stdout.find("{", i)) != -1:
        try:
            obj, i = decoder.raw_decode(stdout, start)
        except json.JSONDecodeError:
            i = start + 1
            continue
        if isinstance(obj, dict) and "name" in obj and "attributes" in obj:
            spans.append(obj)
    return spans
