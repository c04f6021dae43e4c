"""docs/SCALE.md's spans and metric points per turn, recomputed from real turns
(tests/helpers/turn_counts.py: the real SDKs from the fake server, the package instrumenting them),
and the spans a second of its sizing table recomputed from them: a change to what the package
emits per turn fails here until the doc (and the sizing built on it) says the new figures."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from turn_counts import CALLS, PROVIDERS, TurnCounts, measure

SCALE = Path(__file__).resolve().parents[2] / "docs" / "SCALE.md"


def _section(heading: str) -> list[list[str]]:
    """The rows of the first table under ``## heading``, as lists of stripped cells."""
    text = SCALE.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    rows = [line for line in text[start : end if end > 0 else None].splitlines() if line.startswith("|")]
    assert len(rows) > 2, f"no table under '## {heading}'"
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows[2:]]


@functools.cache
def _measured() -> dict[tuple[str, int], TurnCounts]:
    return {(provider, calls): measure(provider, calls) for provider in PROVIDERS for calls in CALLS}


def _number(cell: str) -> int:
    return int(re.sub(r"[,\s]", "", cell))


def test_spans_and_points_per_turn_are_what_the_package_emits() -> None:
    documented = {
        (row[0], _number(row[1])): tuple(_number(c) for c in row[2:5])
        for row in _section("Spans and metric points per turn")
    }
    measured = {key: (r.request_spans, r.execute_spans, r.metric_points) for key, r in _measured().items()}
    assert documented == measured


def test_the_sizing_tables_spans_a_second_follow_from_the_spans_per_turn() -> None:
    per_turn = {calls: _measured()[("openai", calls)] for calls in (2, 8)}
    rows = _section("Agents, gateways and memory by rate")
    assert len(rows) == 6
    for row in rows:
        rate, calls, spans_per_s = _number(row[0]), _number(row[1]), _number(row[2])
        assert spans_per_s == rate * per_turn[calls].request_spans, row
