"""docs/observability.md covers Jaeger / Tempo, the alerts and the collector layouts."""

from __future__ import annotations

import re

from collector_kit import DOCS


def test_docs_cover_jaeger_tempo_alerts_and_collector_layouts() -> None:
    docs = DOCS.read_text()
    headings = re.findall(r"^#+\s+(.+?)\s*$", docs, re.M)
    assert "See it in Jaeger / Tempo" in headings
    assert "Alert on aborted calls" in headings
    assert any("gateway" in h.lower() for h in headings)
    assert "toolcall.outcome=aborted" in docs
    assert "docker compose" in docs
