"""MCP across processes: the agent streams the model's calls and calls the tool through the mcp
client (tests/remote_apps/mcp_agent.py); the tool runs on an mcp server in another process
(tests/remote_apps/mcp_server.py), over streamable HTTP under uvicorn or over stdio. Both are configured
as a deployment is (``OTEL_PROPAGATORS``, ``OTEL_TOOLCALLS_STRICT``) and write their spans to files
this test reads. Runs on the mcp of the environment: 2.x here, 1.25 in the ``mcp-floor`` lane.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# mcp and uvicorn serve in another process; imported here too, a missing one fails at collection.
import mcp  # noqa: F401
import pytest
import uvicorn  # noqa: F401

from otel_toolcalls.testing.openai_chat import WEATHER, tool_call_script

HERE = Path(__file__).parents[1] / "remote_apps"
PROPAGATING = "tracecontext,baggage,toolcalls"
DEADLINE = 60.0
MALFORMED = ["garbage", "unknown-outcome", "zero-trace-id", "oversized", "long-id", "number", "list",
             "object", "traceparent-number"]  # fmt: skip
ORDER = ["call_ok", "call_cut", "outside", *MALFORMED]  # the agent's calls, one after the other


def _env(propagators: str, strict: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_PROPAGATORS=propagators, OTEL_TOOLCALLS_STRICT="true" if strict else "false")
    return env


def _wait(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Run:
    results: dict[str, Any]
    agent: list[dict[str, Any]]  # the agent's spans
    server: list[dict[str, Any]]  # the server's execution spans, in the order of the calls
    ran: dict[str, dict[str, Any]]  # location -> the _meta the tool saw, for each run of the tool

    def tool_call(self, call_id: str) -> dict[str, Any]:
        (span,) = [s for s in self.agent if s["name"].startswith("tool_call ")
                   and s["attributes"].get("toolcall.call.id") == call_id]  # fmt: skip
        return span

    def served(self, label: str) -> dict[str, Any]:
        return self.server[ORDER.index(label)]


def _executions(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "execute_tool"]
    return sorted(found, key=lambda s: s["start_time"])


@pytest.fixture
def run(fake: Any, tmp_path: Path) -> Iterator[Callable[..., Run]]:
    servers: list[subprocess.Popen[str]] = []

    def start_http(argv: list[str], env: dict[str, str]) -> str:
        server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
        servers.append(server)
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], DEADLINE)
        line = server.stdout.readline() if ready else ""
        assert line.startswith("PORT "), f"the server did not start: {line!r}"
        return f"http://127.0.0.1:{int(line.split()[1])}/mcp"

    def go(*, kind: str, transport: str, server_propagators: str = PROPAGATING) -> Run:
        fake.enqueue(tool_call_script([replace(WEATHER, id="call_ok")]))
        fake.enqueue(tool_call_script([replace(WEATHER, id="call_cut")], cut_after=3))  # mid-arguments
        spans, ran, agent_spans = tmp_path / "server.jsonl", tmp_path / "ran.jsonl", tmp_path / "agent.jsonl"
        argv = [sys.executable, str(HERE / "mcp_server.py"), kind, transport, str(spans), str(ran)]
        env = _env(server_propagators, strict=True)
        # Over stdio the agent's client starts the server, as its child.
        target = start_http(argv, env) if transport == "http" else json.dumps({"argv": argv, "env": env})
        agent = subprocess.run(
            [sys.executable, str(HERE / "mcp_agent.py"), transport, target, str(agent_spans), fake.base_url],
            env=_env(PROPAGATING, strict=False), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert agent.returncode == 0, agent.stderr[-4000:]
        (results,) = [json.loads(x[8:]) for x in agent.stdout.splitlines() if x.startswith("RESULTS ")]
        # A span ends as its response goes out (mcp 1.x): wait for the last one, not a fixed time.
        server = _wait(lambda: len(e := _executions(_lines(spans))) >= len(ORDER) and e, "the server's spans")
        for process in servers:
            assert process.poll() is None, "the server died"
        return Run(results, _lines(agent_spans), server, {r["location"]: r["meta"] for r in _lines(ran)})

    yield go
    for server in servers:
        server.terminate()
        server.wait(timeout=30)


def _link(span: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(lk["context"]["trace_id"], lk["context"]["span_id"], lk["attributes"]) for lk in span["links"]]


SERVERS = [("high", "http"), ("low", "stdio"), ("high", "stdio"), ("low", "http")]


@pytest.mark.parametrize(("kind", "transport"), SERVERS)
def test_outcome_and_link_cross_to_the_server(run: Callable[..., Run], kind: str, transport: str) -> None:
    out = run(kind=kind, transport=transport)
    ok_call = out.tool_call("call_ok")
    assert ok_call["attributes"]["toolcall.outcome"] == "completed"
    served = out.served("call_ok")
    assert served["attributes"]["toolcall.outcome"] == "completed"
    # mcp 2.x's own span names no call: the carried id is added to it (mcp 1.x: the package's span).
    assert served["attributes"]["gen_ai.tool.call.id"] == "call_ok"
    assert _link(served) == [
        (ok_call["context"]["trace_id"], ok_call["context"]["span_id"],
         {"gen_ai.attribution.link_type": "CAUSED_BY_GENERATION"})
    ]  # fmt: skip
    # The server's execution is in the agent's trace: a child of the agent's MCP call.
    agent_ids = {s["context"]["span_id"]: s for s in out.agent}
    assert served["parent_id"] in agent_ids
    assert served["context"]["trace_id"] == agent_ids[served["parent_id"]]["context"]["trace_id"]
    assert out.results["call_ok"] == {"is_error": False, "text": "sunny in call_ok"}
    trace_id, span_id = ok_call["context"]["trace_id"][2:], ok_call["context"]["span_id"][2:]
    assert out.ran["call_ok"]["toolcall"] == f"00-completed-{trace_id}-{span_id}-call_ok"


@pytest.mark.parametrize(("kind", "transport"), SERVERS)
def test_strict_server_refuses_a_carried_aborted_call(
    run: Callable[..., Run], kind: str, transport: str
) -> None:
    out = run(kind=kind, transport=transport)
    assert out.tool_call("call_cut")["attributes"]["toolcall.outcome"] == "aborted"
    assert "call_cut" not in out.ran  # the tool body never ran
    refused = out.results["call_cut"]
    assert refused["is_error"] is True
    # The header carries no tool name: under mcp 2.x (the SDK's span annotated) it reads 'unknown tool'.
    assert refused["text"].startswith("refusing to execute tool call 'call_cut' (")
    served = out.served("call_cut")
    assert served["attributes"]["toolcall.outcome"] == "aborted"
    assert served["attributes"]["gen_ai.tool.call.id"] == "call_cut"
    assert served["links"] == []
    assert served["status"]["status_code"] == "ERROR"
    assert set(out.ran) == set(ORDER) - {"call_cut"}  # and every other call ran


@pytest.mark.parametrize(("kind", "transport"), SERVERS[:2])
def test_nothing_is_injected_outside_a_call_and_malformed_meta_is_harmless(
    run: Callable[..., Run], kind: str, transport: str
) -> None:
    out = run(kind=kind, transport=transport)
    assert "toolcall" not in out.ran["outside"]
    assert out.served("outside")["attributes"]["toolcall.outcome"] == "unknown"
    for label in MALFORMED:
        served = out.served(label)
        assert served["attributes"]["toolcall.outcome"] == "unknown", label
        assert served["links"] == [], label
        assert out.results[label] == {"is_error": False, "text": f"sunny in {label}"}, label
    assert "gen_ai.tool.call.id" not in json.dumps([out.served(label)["attributes"] for label in MALFORMED])


def test_without_the_propagator_the_server_behaves_as_before(run: Callable[..., Run]) -> None:
    out = run(kind="high", transport="http", server_propagators="tracecontext,baggage")
    assert out.ran["call_ok"]["toolcall"].startswith("00-completed-")  # sent, but nobody reads it
    for label in ORDER:
        served = out.served(label)
        assert served["attributes"]["toolcall.outcome"] == "unknown", label
        assert served["links"] == [], label
    assert "call_cut" in out.ran  # strict, but nothing says the call was cut: the tool runs
    assert out.results["call_cut"] == {"is_error": False, "text": "sunny in call_cut"}
