"""`make jaeger` (up) and `make jaeger-stop` (down): the demo's traces in a local Jaeger v2.

up: starts Jaeger (.pipeline/bin/jaeger, built by `make pipeline-bins` from its Go module) with
collector-config/jaeger.yaml, every listener on 127.0.0.1, unless a Jaeger already answers on the
query port; sends the demo's turns over OTLP/HTTP and prints where to read each trace. Jaeger's UI
is a git submodule that a Go module build does not carry: its page at / is a placeholder, so read
the API (/api/v3 gives OTLP JSON with span links and their attributes). down: stops the Jaeger that
up started (its pid file), and nothing else. State and log are in .pipeline/.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / ".pipeline"
PID_FILE = STATE / "jaeger.pid"
BINARY = STATE / "bin" / "jaeger"
CONFIG = ROOT / "collector-config" / "jaeger.yaml"
QUERY_PORT = int(os.environ.get("JAEGER_QUERY_HTTP_PORT", "16686"))
OTLP_HTTP_PORT = int(os.environ.get("JAEGER_OTLP_HTTP_PORT", "4318"))
QUERY = f"http://127.0.0.1:{QUERY_PORT}"
SERVICE = "otel-toolcalls-demo"
START_S = 60.0  # a hang guard


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
    log = STATE / "jaeger.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(BINARY), f"--config={CONFIG}"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    PID_FILE.write_text(json.dumps({"pid": process.pid}))
    deadline = time.monotonic() + START_S
    while not answers():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            PID_FILE.unlink(missing_ok=True)
            raise SystemExit(f"Jaeger did not start; its log: {log}")
        time.sleep(0.2)
    print(f"started Jaeger v2 at {QUERY} (pid {process.pid}, log {log})")


def up() -> None:
    from examples.viewer.send import send  # the demo's SDKs: only `up` needs them

    start()
    sent = send(url=f"http://127.0.0.1:{OTLP_HTTP_PORT}", project=SERVICE)
    now = time.time()
    window = (
        f"query.start_time_min={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now - 3600))}"
        f"&query.start_time_max={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now + 3600))}"
    )
    print(f"\nThe demo's traces, service {SERVICE!r} (OTLP JSON, links with their attributes):")
    for trace_id, title in sent:
        print(f"   {QUERY}/api/v3/traces/{trace_id}   {title}")
    print(f"\nAll of them: {QUERY}/api/v3/traces?query.service_name={SERVICE}&{window}")
    print(f"Jaeger v1 JSON (links as FOLLOWS_FROM references, no attributes): {QUERY}/api/traces/<id>")
    print(f"The page at {QUERY}/ is a placeholder: the Go module build carries no UI assets.")
    print("Jaeger stays up; `make jaeger-stop` stops it (memory storage: its traces go with it).")


def down() -> None:
    try:
        pid = int(json.loads(PID_FILE.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        print("no Jaeger started by `make jaeger` is running")
        return
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists() and str(BINARY) in cmdline.read_bytes().decode(errors="replace"):
        os.kill(pid, signal.SIGTERM)
        print(f"stopped the Jaeger that `make jaeger` started (pid {pid})")
    else:
        print(f"the Jaeger `make jaeger` started (pid {pid}) is no longer running")
    PID_FILE.unlink(missing_ok=True)


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in ("up", "down"):
        raise SystemExit("usage: jaeger.py up|down")
    up() if command == "up" else down()


if __name__ == "__main__":
    main()
