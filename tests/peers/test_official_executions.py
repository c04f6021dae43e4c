"""Beside the official OpenTelemetry GenAI instrumentations of a framework
(``opentelemetry-instrumentation-genai-langchain`` / ``-llama-index`` / ``-openai-agents`` /
``-smolagents``, each with ``-openai``, through which the framework's model streams), and beside
OpenInference's agno instrumentation (``openinference-instrumentation-agno``: its TOOL span is the
execution span, its LLM span the inference span, each known by its ``openinference.span.kind``): an
agent loop whose model calls a tool gets one inference span per request and one ``execute_tool``
span per execution, the official one where it makes one, with ``toolcall.outcome``, the call id and
(completed calls only) the link; the outcomes are the package's alone; strict mode refuses an
aborted call inside that span, before the body. Both instrumentation orders, through the entry
points as ``opentelemetry-instrument`` loads them, and one real ``opentelemetry-instrument python``
run.

Runs in the ``peer-otel-genai-*`` and ``peer-openinference-agno`` lanes (tests/versions/run.py),
skipped elsewhere; each combination is a process of its own (tests/peers/executions.py).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PEER = os.environ.get("OTEL_TOOLCALLS_PEER", "")
FRAMEWORKS = {
    "otel-genai-langchain": "langchain",
    "otel-genai-llama-index": "llama-index",
    "otel-genai-openai-agents": "openai-agents",
    "otel-genai-smolagents": "smolagents",
    "openinference-agno": "agno",
}
FRAMEWORK = FRAMEWORKS.get(PEER, "")

pytestmark = pytest.mark.skipif(not FRAMEWORK, reason="runs in an official-instrumentation lane")

ORDERS = ["ours-first", "peer-first"]
# The frameworks whose lane also runs the loop under a real ``opentelemetry-instrument``.
AUTO = {"agno", "langchain", "smolagents"}
# The official instrumentations that make no execute_tool span (genai-smolagents 1.2b0: an
# invoke_agent span around run(), inference spans for in-process models only): the package's alone.
NO_EXECUTION_SPANS = {"smolagents"}
INFERENCE = {"chat", "text_completion", "generate_content"}


@functools.cache
def run(mode: str, strict: bool = False) -> dict[str, Any]:
    env = {**os.environ, "OTEL_TOOLCALLS_STRICT": "true" if strict else "false"}
    cmd = [sys.executable, str(HERE / "executions.py"), FRAMEWORK, mode]
    if mode == "auto":
        # The SDK configured by the distro, nothing exported but to the driver's own processor.
        env.update(OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none")
        instrument = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
        assert instrument is not None
        cmd = [instrument, *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert done.returncode == 0, f"{FRAMEWORK} {mode} failed:\n{done.stderr[-3000:]}"
    return dict(json.loads(done.stdout.strip().splitlines()[-1])["runs"])


def _ours(span: dict[str, Any]) -> bool:
    return span["scope"] == "otel_toolcalls"


def _kind(span: dict[str, Any]) -> Any:
    return span["attributes"].get("openinference.span.kind")


def _executions(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    operation = "gen_ai.operation.name"
    return [s for s in spans if s["attributes"].get(operation) == "execute_tool" or _kind(s) == "TOOL"]


def _executions_of(tool: str, spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    named = ("gen_ai.tool.name", "tool.name")
    return [s for s in _executions(spans) if tool in (s["attributes"].get(name) for name in named)]


def _inference(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        s for s in spans if s["attributes"].get("gen_ai.operation.name") in INFERENCE or _kind(s) == "LLM"
    ]


def _outcome(span: dict[str, Any]) -> tuple[Any, ...]:
    attributes = span["attributes"]
    return (
        attributes.get("toolcall.outcome"),
        attributes.get("toolcall.abort_reason"),
        attributes.get("gen_ai.tool.call.id"),
        bool(span["links"]),
    )


def _calls(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in spans if _ours(s) and s["name"].startswith("tool_call ")]


@pytest.mark.parametrize("mode", [*ORDERS, "auto"] if FRAMEWORK in AUTO else ORDERS)
def test_one_execution_span_per_execution_theirs_annotated(mode: str) -> None:
    alone, ours = run("peer"), run("ours")
    for name, both in run(mode).items():
        theirs = _executions(alone[name]["spans"])
        executions = _executions(both["spans"])
        assert len(executions) == len(_executions(ours[name]["spans"])), name
        assert len(theirs) == (0 if FRAMEWORK in NO_EXECUTION_SPANS else len(executions)), name
        # The official span where it makes one: none of the package's beside it.
        assert not any(_ours(s) for s in executions) or not theirs, name
        assert sorted(map(_outcome, executions)) == sorted(map(_outcome, _executions(ours[name]["spans"]))), (
            name
        )
        # Linked to the tool_call span of its call, a completed call only.
        calls = {s["attributes"]["toolcall.call.id"]: s for s in _calls(both["spans"])}
        for execution in executions:
            call = calls[execution["attributes"]["gen_ai.tool.call.id"]]
            completed = call["attributes"]["toolcall.outcome"] == "completed"
            assert execution["links"] == ([call["id"]] if completed else []), name
        # The body ran inside the execution span, as without the package; the answer is theirs.
        assert [a for a, _ in both["ran"]] == [a for a, _ in alone[name]["ran"]], name
        assert all(span in {s["id"] for s in executions} for _, span in both["ran"]), name
        assert both.get("answer") == alone[name].get("answer"), name


@pytest.mark.parametrize("mode", [*ORDERS, "auto"] if FRAMEWORK in AUTO else ORDERS)
def test_one_inference_span_per_request_the_tool_calls_under_it(mode: str) -> None:
    alone = run("peer")
    for name, both in run(mode).items():
        theirs = _inference(alone[name]["spans"])
        inference = _inference(both["spans"])
        assert theirs and len(inference) == len(theirs), (name, [s["name"] for s in inference])
        assert not any(_ours(s) for s in inference), name
        ids = {s["id"] for s in inference}
        assert _calls(both["spans"]) and all(c["parent"] in ids for c in _calls(both["spans"])), name


@pytest.mark.parametrize("order", ORDERS)
def test_strict_refuses_inside_their_span_before_the_body(order: str) -> None:
    alone, both = run("peer")["truncated"], run(order, strict=True)["truncated"]
    # smolagents records a tool's error in the step (the model is asked again): not raised.
    refused = both.get("raised") or [name for error in both["step_errors"] for name in error]
    assert "IncompleteToolCallError" in refused
    assert both["ran"] == []
    # The cut call's (a smolagents run goes on to its final_answer tool).
    (execution,) = _executions_of("get_weather", both["spans"])
    # Their span where the framework made one for this call without the package.
    assert _ours(execution) == (not _executions_of("get_weather", alone["spans"]))
    assert execution["status"] == "ERROR"
    assert _outcome(execution)[:2] == ("aborted", "truncated")
    assert execution["links"] == []
