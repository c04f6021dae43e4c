"""`make view` end to end: Phoenix started, the demo's traces sent, read back, and seen in Chromium.

examples/viewer/view.py starts the real Phoenix (from .venv-viewer) on free loopback ports with a
database of its own, sends the demo's turns over OTLP/HTTP, and waits until Phoenix has stored them.
The spans are read back through Phoenix's REST API, and the aborted call's page is rendered by
Debian's headless chromium (examples/viewer/shots.py). Phoenix stores no span links (its REST span
has no field for them), so the execution is matched to its call by the shared call id and trace.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import markers
import pytest

from examples.viewer import control

ROOT = Path(__file__).resolve().parents[2]
VIEW = ROOT / "examples" / "viewer" / "view.py"
SHOTS = ROOT / "examples" / "viewer" / "shots.py"
PROJECT = "otel-toolcalls-demo"
OUTCOMES = {
    "call_ok": ("completed", None),
    "call_cut": ("aborted", "stream_error"),
    "call_len": ("aborted", "truncated"),
    "call_closed": ("aborted", "closed"),
    "toolu_ok": ("completed", None),
    "toolu_max": ("aborted", "truncated"),
}
# 127.0.0.1, ::ffff:127.0.0.1 and ::1 as /proc/net/tcp{,6} spell them.
LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def _required(ok: bool, what: str) -> None:
    if not ok:
        markers.missing(what, "make .venv-viewer/.stamp chromium")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def view(command: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, str(VIEW), command], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    _required(control.VIEWER_PYTHON.exists(), ".venv-viewer (Phoenix)")
    _required(shutil.which("chromium") is not None, "Debian's chromium")
    state = tmp_path_factory.mktemp("viewer")
    port = free_port()
    env = {
        **os.environ,
        "VIEWER_DIR": str(state),
        "VIEWER_PORT": str(port),
        "VIEWER_GRPC_PORT": str(free_port()),
    }
    try:
        printed = view("up", env)
        yield {"url": f"http://127.0.0.1:{port}", "printed": printed, "env": env, "state": state}
    finally:
        recorded = state / "phoenix.pid"
        if recorded.exists():
            control.terminate(json.loads(recorded.read_text())["pid"])


def spans(url: str, **query: Any) -> list[dict[str, Any]]:
    encoded = urllib.parse.urlencode({"limit": 1000, **query}, doseq=True)
    return control.get_json(f"{url}/v1/projects/{PROJECT}/spans?{encoded}")["data"]


def sockets(process_id: int) -> list[tuple[str, str, str]]:
    """(table, local address, remote address) of each TCP and UDP socket the process holds."""
    inodes = set()
    for fd in Path(f"/proc/{process_id}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    held = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                held.append((f"{table}:{fields[3]}", fields[1].split(":")[0], fields[2].split(":")[0]))
    return held


def _nowhere(address: str) -> bool:
    return set(address) == {"0"}


def test_view_prints_a_url_per_trace_and_phoenix_listens_on_loopback_only(viewer):
    urls = [line.split()[0] for line in viewer["printed"].splitlines() if "/redirects/traces/" in line]
    assert len(urls) == len(OUTCOMES)
    stored = {span["context"]["trace_id"] for span in spans(viewer["url"], parent_id="null")}
    assert {url.rsplit("/", 1)[1] for url in urls} <= stored
    process_id = json.loads((viewer["state"] / "phoenix.pid").read_text())["pid"]
    held = sockets(process_id)
    listening = [local for table, local, _ in held if table.startswith("tcp") and table.endswith(":0A")]
    assert len(listening) >= 2, held  # HTTP (UI, REST, OTLP/HTTP) and OTLP/gRPC
    assert all(local in LOOPBACK for local in listening), held
    # Nothing else bound or connected off loopback either (no telemetry, no downloads).
    assert all(local in LOOPBACK or _nowhere(local) for _, local, _ in held), held
    assert all(remote in LOOPBACK or _nowhere(remote) for _, _, remote in held), held


def test_phoenix_shows_llm_and_tool_spans_with_outcomes_and_errors(viewer):
    stored = spans(viewer["url"])
    calls = {
        s["attributes"]["toolcall.call.id"]: s for s in stored if s["name"] == "tool_call get_weather"
    }
    runs = {
        s["attributes"]["gen_ai.tool.call.id"]: s for s in stored if s["name"] == "execute_tool get_weather"
    }
    assert set(calls) == set(runs) == set(OUTCOMES)
    inference = [s for s in stored if s["name"] in ("chat gpt-4o-mini", "anthropic.messages.create")]
    assert len(inference) == len(OUTCOMES) and {s["span_kind"] for s in inference} == {"LLM"}
    for call_id, (outcome, reason) in OUTCOMES.items():
        call, run = calls[call_id], runs[call_id]
        # One call reads as one execution: the block is neither a tool run nor an LLM call.
        assert run["span_kind"] == "TOOL" and call["span_kind"] not in {"TOOL", "LLM"}
        assert call["attributes"]["toolcall.outcome"] == run["attributes"]["toolcall.outcome"] == outcome
        assert call["attributes"].get("toolcall.abort_reason") == reason
        assert call["status_code"] == run["status_code"] == ("ERROR" if reason else "UNSET")
        # The tool call is a child of its inference span; its execution sits in the same trace.
        assert call["parent_id"] in {s["context"]["span_id"] for s in inference}
        assert run["context"]["trace_id"] == call["context"]["trace_id"]
        if reason:
            assert run["attributes"]["error.type"] == "otel_toolcalls.IncompleteToolCallError"


def test_the_aborted_call_renders_in_headless_chromium(viewer):
    (cut,) = spans(viewer["url"], attribute="toolcall.call.id:call_cut", name="tool_call get_weather")
    span_id = cut["context"]["span_id"]
    done = subprocess.run(
        [str(control.VIEWER_PYTHON), str(SHOTS), "text", "--url", viewer["url"], "--span", span_id],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert "tool_call get_weather" in page["info"] and "execute_tool get_weather" in page["info"]
    assert "tool call aborted: the stream failed before the call completed" in page["info"]
    for text in ("toolcall.outcome", "aborted", "toolcall.abort_reason", "stream_error", "call_cut"):
        assert text in page["attributes"]
    assert page["refused"] == []  # the page asked for nothing off loopback


def test_view_again_reuses_the_viewer_and_view_stop_stops_only_it(viewer):
    again = view("up", viewer["env"])
    assert "reusing the Phoenix" in again and "started Phoenix" not in again
    assert "stopped the Phoenix viewer" in view("down", viewer["env"])
    assert control.version(viewer["url"]) is None
    assert "no viewer started by `make view` is running" in view("down", viewer["env"])


def test_view_leaves_a_port_held_by_something_else_alone(tmp_path):
    # Bound and listening before view.py runs: no race.
    with ThreadingHTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler) as other:
        threading.Thread(target=other.serve_forever, daemon=True).start()
        env = {**os.environ, "VIEWER_DIR": str(tmp_path), "VIEWER_PORT": str(other.server_address[1])}
        done = subprocess.run(
            [sys.executable, str(VIEW), "up"], env=env, capture_output=True, text=True, timeout=60
        )
        other.shutdown()
    assert done.returncode == 1
    assert "is taken by something that is not Phoenix" in done.stderr
    assert not (tmp_path / "phoenix.pid").exists()
