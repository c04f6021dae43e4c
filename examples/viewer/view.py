"""`make view` (up) and `make view-stop` (down): the demo's traces in a local Phoenix viewer.

up: starts Phoenix on 127.0.0.1:$VIEWER_PORT (6006) unless one already answers there, sends the
demo's turns over OTLP/HTTP, prints each trace's URL, and leaves the viewer running. down: stops
the viewer that up started (its pid file), and nothing else. Both can be run again at any time.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from examples.viewer import control

# The viewer's database, log and pid file (VIEWER_DIR: the test's own, apart from `make view`'s).
STATE = Path(os.environ.get("VIEWER_DIR", control.ROOT / ".viewer"))
PID_FILE = STATE / "phoenix.pid"


def _port_taken(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((control.HOST, port)) == 0


def _recorded() -> dict[str, object] | None:
    try:
        return json.loads(PID_FILE.read_text())
    except (OSError, ValueError):
        return None


def start(*, port: int, grpc_port: int) -> str:
    """The URL of a ready viewer on port: the one running there, or one started now."""
    url = f"http://{control.HOST}:{port}"
    if (found := control.version(url)) is not None:
        print(f"reusing the Phoenix {found} viewer already running at {url}")
        return url
    if _port_taken(port):
        raise SystemExit(f"{control.HOST}:{port} is taken by something that is not Phoenix: set VIEWER_PORT")
    if not control.VIEWER_PYTHON.exists():
        raise SystemExit(f"{control.VIEWER_PYTHON} is missing: run `make view`, which installs it")
    process = control.spawn(workdir=STATE, port=port, grpc_port=grpc_port)
    PID_FILE.write_text(json.dumps({"pid": process.pid, "url": url}))
    try:
        found = control.wait_ready(url=url, process=process, log=STATE / "phoenix.log")
    except BaseException:
        control.terminate(process.pid)
        PID_FILE.unlink(missing_ok=True)
        raise
    print(f"started Phoenix {found} at {url} (pid {process.pid}, log {STATE / 'phoenix.log'})")
    return url


def up() -> None:
    # Imported here: `down` runs on any Python, without the demo's SDKs.
    from examples.viewer.send import PROJECT, send

    port = int(os.environ.get("VIEWER_PORT", "6006"))
    url = start(port=port, grpc_port=int(os.environ.get("VIEWER_GRPC_PORT", str(port + 1))))
    sent = send(url=url)
    control.wait_for_traces(url=url, project=PROJECT, trace_ids=[trace_id for trace_id, _ in sent])
    print(f"\nThe demo's traces, in project {PROJECT!r}:")
    for trace_id, title in sent:
        print(f"   {url}/redirects/traces/{trace_id}   {title}")
    print(f"\nPhoenix stays up at {url}; `make view-stop` stops it.")


def down() -> None:
    recorded = _recorded()
    if recorded is None:
        print("no viewer started by `make view` is running")
        return
    process_id = int(str(recorded["pid"]))
    if control.is_ours(process_id):
        control.terminate(process_id)
        print(f"stopped the Phoenix viewer at {recorded['url']} (pid {process_id})")
    else:
        print(f"the viewer `make view` started (pid {process_id}) is no longer running")
    PID_FILE.unlink(missing_ok=True)


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in ("up", "down"):
        raise SystemExit("usage: view.py up|down")
    if command == "up":
        up()
    else:
        down()


if __name__ == "__main__":
    main()
