"""`make jaeger`, `make jaeger-stop` and `make jaeger-clean` end to end (examples/viewer/jaeger.py).

jaeger.py runs as the Makefile runs it, on free 127.0.0.1 ports, its pid file, log and Badger store
in a folder of the test's own (JAEGER_DIR): every URL `up` prints answers 200 with the traces it
names; the traces survive `down` and the next `up` span for span; `clean` wipes them. Skips only
when the binary is not built, and fails instead under CI; `make test` builds it first.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markers import missing

ROOT = Path(__file__).resolve().parents[2]
JAEGER_PY = ROOT / "examples" / "viewer" / "jaeger.py"
BINARY = ROOT / ".pipeline" / "bin" / "jaeger"
URL = re.compile(r"http://127\.0\.0\.1:\d+/\S*")
TRACE_URL = re.compile(r"/api/v3/traces/([0-9a-f]{32})$")
PORTS = (
    "JAEGER_QUERY_HTTP_PORT",
    "JAEGER_QUERY_GRPC_PORT",
    "JAEGER_OTLP_GRPC_PORT",
    "JAEGER_OTLP_HTTP_PORT",
    "JAEGER_METRICS_PORT",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def jaeger(command: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, str(JAEGER_PY), command], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    if not BINARY.exists():
        missing(str(BINARY), "make pipeline-bins")
    env = {**os.environ, "JAEGER_DIR": str(tmp_path), **{name: str(free_port()) for name in PORTS}}
    try:
        yield env
    finally:
        jaeger("down", env)


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def spans_v3(body: bytes) -> set[tuple[str, str]]:
    """(trace id, span id) of every span in an api_v3 answer (OTLP JSON)."""
    return {
        (span["traceId"], span["spanId"])
        for resource in json.loads(body)["result"]["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    }


def printed(out: str) -> dict[str, Any]:
    urls = URL.findall(out)
    per_trace = {m.group(1): url for url in urls if (m := TRACE_URL.search(url))}
    (every,) = [url for url in urls if "/api/v3/traces?" in url]
    return {"urls": urls, "per_trace": per_trace, "every": every}


def read_back(urls: dict[str, str]) -> dict[str, set[tuple[str, str]]]:
    """Each trace's spans from its printed URL (200 required)."""
    found = {}
    for trace_id, url in urls.items():
        status, body = get(url)
        assert status == 200, (url, status, body[:300])
        found[trace_id] = spans_v3(body)
    return found


def test_every_url_make_jaeger_prints_answers_200_with_its_traces(env: dict[str, str]) -> None:
    shown = printed(jaeger("up", env))
    sent = set(shown["per_trace"])
    assert len(sent) >= 2
    # Each trace's URL, "All of them", the v1 JSON of one trace and the placeholder page.
    assert len(shown["urls"]) == len(sent) + 3
    answers = {url: get(url) for url in shown["urls"]}
    assert {url: status for url, (status, _) in answers.items()} == dict.fromkeys(shown["urls"], 200)
    for trace_id, url in shown["per_trace"].items():
        spans = spans_v3(answers[url][1])
        assert spans and {t for t, _ in spans} == {trace_id}
    assert {t for t, _ in spans_v3(answers[shown["every"]][1])} == sent
    (v1,) = [url for url in shown["urls"] if "/api/traces/" in url]
    (data,) = json.loads(answers[v1][1])["data"]
    assert data["traceID"] in sent and data["spans"]


def listening(env: dict[str, str]) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", int(env["JAEGER_QUERY_HTTP_PORT"]))) == 0


def test_traces_survive_jaeger_stop_and_jaeger_clean_wipes_them(env: dict[str, str]) -> None:
    first = printed(jaeger("up", env))
    held = read_back(first["per_trace"])
    assert "stopped the Jaeger" in jaeger("down", env)
    assert not listening(env)  # down waits for Jaeger's exit
    second_out = jaeger("up", env)
    assert "started Jaeger" in second_out  # a new process, on the store the first one left
    second = printed(second_out)
    kept = read_back(first["per_trace"])
    lost = {t: held[t] - kept[t] for t in held if held[t] - kept[t]}
    assert lost == {}, f"lost across jaeger-stop / jaeger: {sum(map(len, lost.values()))} spans"
    status, body = get(second["every"])
    assert status == 200
    assert {t for t, _ in spans_v3(body)} == set(first["per_trace"]) | set(second["per_trace"])

    assert "wiped" in jaeger("clean", env)
    assert not listening(env)
    assert not (Path(env["JAEGER_DIR"]) / "jaeger-data").exists()
    third = printed(jaeger("up", env))
    gone = {url: get(url)[0] for url in first["per_trace"].values()}
    assert gone == dict.fromkeys(first["per_trace"].values(), 404)  # api_v3: no such trace
    status, body = get(third["every"])
    assert status == 200 and {t for t, _ in spans_v3(body)} == set(third["per_trace"])
