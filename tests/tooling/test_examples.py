"""The examples run as users run them: a subprocess, the real SDKs, the embedded fake provider."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def _run_example(name: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The example as a user runs it: its own process, a bare environment."""
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=ROOT,
        check=True,
    )


def test_agent_loop_rolls_back_broken_turns_and_runs_only_completed_calls():
    out = _run_example("agent_loop.py", OTEL_SERVICE_NAME="example-test")
    assert out.stdout.count("turn rolled back") == 2
    assert out.stdout.count("turn completed on attempt 2") == 2
    spans = _spans(out.stdout)
    calls = {
        s["attributes"].get("toolcall.call.id"): s for s in spans if s["name"].startswith("tool_call ")
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


def test_remote_tools_links_across_processes_and_refuses_the_cut_call():
    out = _run_example("remote_tools.py")
    lines = out.stdout.splitlines()
    for printed in ("call_1: completed", "call_2: completed"):
        assert f"{printed} here; service answered 200" in lines
    assert "call_3: aborted here; service answered 409" in lines  # refused before the tool ran
    agent, service = _spans(out.stdout), _spans(out.stderr)
    calls = {s["attributes"]["toolcall.call.id"]: s for s in agent if s["name"].startswith("tool_call ")}
    assert {k: v["attributes"]["toolcall.outcome"] for k, v in calls.items()} == {
        "call_1": "completed",
        "call_2": "completed",
        "call_3": "aborted",
    }
    executions = [s for s in service if s["name"].startswith("execute_tool ")]
    runs = {s["attributes"]["gen_ai.tool.call.id"]: s for s in executions}
    assert set(runs) == {"call_1", "call_2", "call_3"}
    assert {s["resource"]["attributes"]["service.name"] for s in service} == {"remote-tools-service"}
    for call_id in ("call_1", "call_2"):
        assert runs[call_id]["attributes"]["toolcall.outcome"] == "completed"
        (link,) = runs[call_id]["links"]
        context, target = link["context"], calls[call_id]["context"]
        assert (context["trace_id"], context["span_id"]) == (target["trace_id"], target["span_id"])
        assert link["attributes"] == {"gen_ai.attribution.link_type": "CAUSED_BY_GENERATION"}
        assert runs[call_id]["context"]["trace_id"] == calls[call_id]["context"]["trace_id"]
    refused = runs["call_3"]
    assert refused["attributes"]["toolcall.outcome"] == "aborted" and not refused["links"]
    assert refused["attributes"]["error.type"] == "otel_toolcalls.IncompleteToolCallError"
