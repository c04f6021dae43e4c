"""`make jaeger` (up), `make jaeger-stop` (down), `make jaeger-clean` (clean): the demo's traces in a
local Jaeger v2 that keeps them.

up: starts Jaeger (.pipeline/bin/jaeger, built by `make pipeline-bins` from its Go module) with
collector-config/jaeger.yaml, every listener on 127.0.0.1, its Badger store in .pipeline/jaeger-data,
unless a Jaeger already answers on the query port; sends the demo's turns over OTLP/HTTP, waits until
Jaeger has stored them and prints where to read them. Jaeger's UI is a git submodule that a Go
module build does not carry: its page at / is a placeholder, so read the API (/api/v3 gives OTLP
JSON with span links; Badger keeps a link's target, not its attributes: Jaeger's v1 span model that
it stores has no place for them, jaegertracing/jaeger#8078). down: stops the Jaeger that up
started (its pid file), and nothing else; its traces stay on disk for the next up. clean: down,
then the store wiped.
State, log and store are in .pipeline/ (JAEGER_DIR moves them: the test's own folder).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from examples.viewer import control

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / ".pipeline" / "bin" / "jaeger"
STATE = Path(os.environ.get("JAEGER_DIR", ROOT / ".pipeline")).resolve()
PID_FILE = STATE / "jaeger.pid"
DATA = STATE / "jaeger-data"
CONFIG = ROOT / "collector-config" / "jaeger.yaml"
QUERY_PORT = int(os.environ.get("JAEGER_QUERY_HTTP_PORT", "16686"))
OTLP_HTTP_PORT = int(os.environ.get("JAEGER_OTLP_HTTP_PORT", "4318"))
QUERY = f"http://127.0.0.1:{QUERY_PORT}"
SERVICE = "otel-toolcalls-demo"
# Named: without it Jaeger 2.12's api_v3 search answers 500 on memory storage, 100 traces on Badger.
NUM_TRACES = 1000
START_S = 60.0  # a hang guard
STORED_S = 60.0  # a hang guard


def answers() -> bool:
    try:
        with urllib.request.urlopen(f"{QUERY}/api/v3/services", timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def start() -> None:
    if answers():
        print(f"reusing the Jaeger already answering at {QUERY}")
        return
    if not BINARY.exists():
        raise SystemExit(f"{BINARY} is missing: run `make jaeger`, which builds it")
    STATE.mkdir(parents=True, exist_ok=True)
    log = STATE / "jaeger.log"
    env = dict(os.environ, JAEGER_DATA_DIR=str(DATA))
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(BINARY), f"--config={CONFIG}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    PID_FILE.write_text(json.dumps({"pid": process.pid}))
    deadline = time.monotonic() + START_S
    while not answers():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            PID_FILE.unlink(missing_ok=True)
            raise SystemExit(f"Jaeger did not start; its log: {log}")
        time.sleep(0.2)
    print(f"started Jaeger v2 at {QUERY} (pid {process.pid}, log {log}, traces kept in {DATA})")


def search_url(start_s: float, end_s: float) -> str:
    query = urllib.parse.urlencode(
        {
            "query.service_name": SERVICE,
            "query.start_time_min": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_s)),
            "query.start_time_max": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end_s)),
            "query.num_traces": str(NUM_TRACES),
        }
    )
    return f"{QUERY}/api/v3/traces?{query}"


def stored(url: str) -> set[str]:
    """Trace ids (hex) the api_v3 search at url returns; none when it finds none (404)."""
    try:
        body = control.get_json(url, timeout=10.0)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return set()
        raise
    return {
        span["traceId"]
        for resource in body["result"]["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    }


def wait_stored(url: str, trace_ids: set[str]) -> None:
    """Until Jaeger answers for every trace sent (its batch processor writes them a moment later)."""
    deadline = time.monotonic() + STORED_S
    while not trace_ids <= stored(url):
        if time.monotonic() > deadline:
            raise SystemExit(f"Jaeger did not store the demo's traces within {STORED_S:.0f} s: {url}")
        time.sleep(0.2)


def up() -> None:
    from examples.viewer.send import send  # the demo's SDKs: only `up` needs them

    start()
    sent = send(url=f"http://127.0.0.1:{OTLP_HTTP_PORT}", project=SERVICE)
    now = time.time()
    every = search_url(now - 3600, now + 3600)
    wait_stored(every, {trace_id for trace_id, _ in sent})
    print(f"\nThe demo's traces, service {SERVICE!r} (OTLP JSON, links to their targets):")
    for trace_id, title in sent:
        print(f"   {QUERY}/api/v3/traces/{trace_id}   {title}")
    print(f"\nAll of them (the last hour and the next): {every}")
    v1 = f"{QUERY}/api/traces/{sent[0][0]}"
    print(f"Jaeger v1 JSON (links as FOLLOWS_FROM references, no attributes), one trace: {v1}")
    print(f"The page at {QUERY}/ is a placeholder: the Go module build carries no UI assets.")
    print(f"Jaeger stays up; `make jaeger-stop` stops it and keeps its traces in {DATA}")
    print("for the next `make jaeger`; `make jaeger-clean` wipes them.")


def down() -> None:
    try:
        pid = int(json.loads(PID_FILE.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        print("no Jaeger started by `make jaeger` is running")
        return
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists() and str(BINARY) in cmdline.read_bytes().decode(errors="replace"):
        # Waits for the exit: Badger writes its tables and frees the store's lock on the way out.
        control.terminate(pid)
        print(f"stopped the Jaeger that `make jaeger` started (pid {pid}); its traces stay in {DATA}")
    else:
        print(f"the Jaeger `make jaeger` started (pid {pid}) is no longer running")
    PID_FILE.unlink(missing_ok=True)


def clean() -> None:
    down()
    if DATA.exists():
        shutil.rmtree(DATA)
    print(f"wiped Jaeger's stored traces ({DATA})")


COMMANDS = {"up": up, "down": down, "clean": clean}


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in COMMANDS:
        raise SystemExit(f"usage: jaeger.py {'|'.join(COMMANDS)}")
    COMMANDS[command]()


if __name__ == "__main__":
    main()
