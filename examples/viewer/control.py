"""Starts, finds and stops the local Phoenix trace viewer (`make view`, `make view-stop`, the test).

Standard library only: it runs under the main venv's Python, and starts Phoenix from .venv-viewer
(examples/viewer/serve.py, loopback only). A viewer it starts is recorded in a pid file; stop() ends
only that process, never one it did not start.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VIEWER_PYTHON = ROOT / ".venv-viewer" / "bin" / "python"
SERVE = ROOT / "examples" / "viewer" / "serve.py"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Viewer:
    url: str
    pid: int | None  # None: a viewer this module did not start


def get_json(url: str, *, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def version(url: str) -> str | None:
    """Phoenix's version when a Phoenix server answers at url, else None."""
    try:
        with urllib.request.urlopen(f"{url}/arize_phoenix_version", timeout=2.0) as response:
            text = response.read().decode("utf-8", "replace").strip()
        with urllib.request.urlopen(f"{url}/healthz", timeout=2.0) as response:
            healthy = response.status == 200
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return text if healthy and text[:1].isdigit() else None


def _environment(*, workdir: Path, port: int, grpc_port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PHOENIX_WORKING_DIR=str(workdir),
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        # The migrations' SQL is logged at INFO otherwise, hundreds of lines.
        PHOENIX_LOG_MIGRATIONS="false",
    )
    return env


def spawn(*, workdir: Path, port: int, grpc_port: int) -> subprocess.Popen[bytes]:
    """Starts Phoenix in a session of its own, its output in workdir/phoenix.log."""
    workdir.mkdir(parents=True, exist_ok=True)
    with open(workdir / "phoenix.log", "ab") as log:
        return subprocess.Popen(
            [str(VIEWER_PYTHON), str(SERVE)],
            env=_environment(workdir=workdir, port=port, grpc_port=grpc_port),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
        )


def wait_ready(*, url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 120.0) -> str:
    """Polls until Phoenix answers at url; fails at once if the process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := version(url)) is not None:
            return found
        if process.poll() is not None:
            raise RuntimeError(f"Phoenix exited ({process.returncode}) before it was ready:\n{_tail(log)}")
        time.sleep(0.25)
    raise TimeoutError(f"Phoenix was not ready at {url} after {timeout:.0f} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def terminate(process_id: int, *, timeout: float = 30.0) -> None:
    """SIGTERM to the viewer's process group, SIGKILL if it has not exited by the deadline."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process_id, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not _alive(process_id):
                return
            time.sleep(0.1)


def _alive(process_id: int) -> bool:
    try:
        # Reap it if it is our child; a zombie still answers kill(pid, 0).
        if os.waitpid(process_id, os.WNOHANG)[0] == process_id:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(process_id, 0)
    except ProcessLookupError:
        return False
    return _state(process_id) != "Z"


def _state(process_id: int) -> str:
    try:
        stat = Path(f"/proc/{process_id}/stat").read_text()
    except OSError:
        return "Z"
    return stat.rpartition(")")[2].split()[0]


def is_ours(process_id: int) -> bool:
    """Whether the process is a viewer serve.py started (a pid can be reused by anything)."""
    try:
        command = Path(f"/proc/{process_id}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return str(SERVE).encode() in command


def traces_present(*, url: str, project: str, trace_ids: list[str]) -> bool:
    """Whether Phoenix has stored every one of the traces (ingestion is asynchronous)."""
    query = urllib.parse.urlencode({"trace_id": trace_ids, "parent_id": "null", "limit": 1000}, doseq=True)
    try:
        spans = get_json(f"{url}/v1/projects/{urllib.parse.quote(project)}/spans?{query}")["data"]
    except urllib.error.HTTPError as error:
        if error.code == 404:  # the project exists once its first span is stored
            return False
        raise
    return {s["context"]["trace_id"] for s in spans} >= set(trace_ids)


def wait_for_traces(*, url: str, project: str, trace_ids: list[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not traces_present(url=url, project=project, trace_ids=trace_ids):
        if time.monotonic() > deadline:
            raise TimeoutError(f"Phoenix at {url} did not store the traces within {timeout:.0f} s")
        time.sleep(0.25)
