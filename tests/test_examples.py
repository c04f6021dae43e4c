"""The examples run as users run them: a subprocess, the real SDKs, the embedded fake provider."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _spans(stdout: str) -> list[dict]:
    """ConsoleSpanExporter prints one JSON document per span, back to back."""
    decoder = json.JSONDecoder()
    spans, i = [], stdout.find("{")
    while i != -1:
        doc, end = decoder.raw_decode(stdout, i)
        if isinstance(doc, dict) and "context" in doc and "name" in doc:
            spans.append(doc)
        i = stdout.find("{", end)
    return spans


def test_agent_loop_rolls_back_broken_turns_and_runs_only_completed_calls():
    env = {"PATH": "/usr/bin:/bin", "OTEL_SERVICE_NAME": "example-test"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_loop.py")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
        check=True,
    )
    assert out.stdout.count("turn rolled back") == 2
    assert out.stdout.count("turn completed on attempt 2") == 2
    spans = _spans(out.stdout)
    calls = {
        s["attributes"].get("gen_ai.tool.call.id"): s for s in spans if s["name"].startswith("tool_call ")
    }
    assert {k: v["attributes"]["toolcall.outcome"] for k, v in calls.items()} == {
        "call_1": "aborted",
        "call_2": "completed",
        "toolu_1": "aborted",
        "toolu_2": "completed",
    }
    assert calls["call_1"]["attributes"]["toolcall.abort_reason"] == "stream_error"
    assert calls["toolu_1"]["attributes"]["toolcall.abort_reason"] == "truncated"
    executions = [s for s in spans if s["name"].startswith("execute_tool ")]
    # Only the completed calls ran, each linked to its own tool-call span.
    assert sorted(s["attributes"]["gen_ai.tool.call.id"] for s in executions) == ["call_2", "toolu_2"]
    for execution in executions:
        (link,) = execution["links"]
        target = calls[execution["attributes"]["gen_ai.tool.call.id"]]
        assert link["context"]["span_id"] == target["context"]["span_id"]
        assert link["attributes"] == {"gen_ai.attribution.link_type": "CAUSED_BY_GENERATION"}
    # The loop rolled back: no request carried the aborted calls again.
    assert all("toolcall.replayed_aborted" not in s["attributes"] for s in spans)
