"""What the remote-tool tests share: each side a real process under ``opentelemetry-instrument``,
exporting over OTLP to the test's receiver (tests/helpers/otlp_receiver.py), and the spans read back.

Nothing waits a fixed time: a process's readiness is a line it prints, the spans are polled for
with a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from otlp_receiver import Receiver, attributes, running

REMOTE = Path(__file__).resolve().parents[1] / "remote_apps"
VENV_BIN = Path(sys.executable).parent
ON = "tracecontext,baggage,toolcalls"
OFF = "tracecontext,baggage"
# A hang guard, not a performance bound: the processes are done in seconds.
DEADLINE_S = 60.0
AGENT, TOOLS = "remote-agent", "remote-tools"


def env(service: str, endpoint: str, propagators: str, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    base.update(
        PATH=f"{VENV_BIN}{os.pathsep}{base.get('PATH', '')}",
        PYTHONUNBUFFERED="1",
        OTEL_SERVICE_NAME=service,
        OTEL_PROPAGATORS=propagators,
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint,
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        # Spans leave soon after they end: the test polls for them while the server keeps running.
        OTEL_BSP_SCHEDULE_DELAY="50",
    )
    base.update(extra)
    return base


def instrumented(script: str, *args: str) -> list[str]:
    return [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, str(REMOTE / script), *args]


class Process:
    """A long-running side (the tool service, the worker): its output lines read as they come."""

    def __init__(self, command: list[str], environment: dict[str, str]) -> None:
        self.popen = subprocess.Popen(
            command,
            env=environment,
            cwd=REMOTE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.output.append(line)
            self.lines.put(line)

    def wait_for_line(self, prefix: str, *, contains: str = "") -> str:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.popen.poll() is not None and self.lines.empty():
                    break
                continue
            if line.startswith(prefix) and contains in line:
                return line[len(prefix) :].strip()
        raise AssertionError(f"no {prefix!r} {contains!r} line; output:\n{''.join(self.output)}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def run(command: list[str], environment: dict[str, str]) -> str:
    """A side that runs to its end (the agent): its stdout, after checking it succeeded."""
    done = subprocess.run(
        command, env=environment, cwd=REMOTE, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def result_of(stdout: str, prefix: str = "RESULT ") -> Any:
    (line,) = [line for line in stdout.splitlines() if line.startswith(prefix)]
    return json.loads(line[len(prefix) :])


def ran(log: Path) -> list[str]:
    """The call ids whose tool body ran, in order (the side effect the tool services write)."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def spans_of(receiver: Receiver, service: str) -> list[Span]:
    return [span for resource, _, span in receiver.spans() if resource.get("service.name") == service]


def wait_for_executions(receiver: Receiver, count: int) -> None:
    """Until the tool service's ``count`` execution spans have arrived (it keeps running)."""
    deadline = time.monotonic() + DEADLINE_S
    while sum(s.name.startswith("execute_tool ") for s in spans_of(receiver, TOOLS)) < count:
        names = [s.name for _, _, s in receiver.spans()]
        assert time.monotonic() < deadline, f"spans did not arrive: {names}"
        time.sleep(0.05)


def by_call_id(spans: list[Span], prefix: str) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = {}
    for span in spans:
        if span.name.startswith(prefix):
            # The tool-call span keeps its id in toolcall.call.id, an execution in gen_ai.tool.call.id.
            key = "toolcall.call.id" if span.name.startswith("tool_call ") else "gen_ai.tool.call.id"
            out.setdefault(attributes(span.attributes).get(key, ""), []).append(span)
    return out


def span_id_hex(span: Span) -> str:
    return span.span_id.hex()


class Scenario:
    """One run of an agent and its tool service: the answers, the ids whose tool body ran, the
    spans of both sides (services AGENT and TOOLS), the service's output."""

    def __init__(
        self, results: dict[str, Any], ran: list[str], receiver: Receiver, server_output: str, cut: str
    ) -> None:
        self.results = results
        self.ran = ran
        self.server_output = server_output
        self.agent_spans = spans_of(receiver, AGENT)
        self.server_spans = {span_id_hex(s): s for s in spans_of(receiver, TOOLS)}
        calls = by_call_id(self.agent_spans, "tool_call ")
        self.tool_calls = {call_id: span for call_id, (span,) in calls.items()}
        self.refused = by_call_id(list(self.server_spans.values()), "execute_tool ").get(cut, [])

    def execution(self, label: str) -> Any:
        """The server's execution span for one request (its id came back in the answer)."""
        return self.server_spans[self.results[label]["span_id"]]

    @property
    def requests(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.results.items() if k != "provider_headers"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def redis_server(executable: str) -> Iterator[str]:
    """Debian's redis-server on a free 127.0.0.1 port, nothing persisted: its URL while it runs.
    A port taken between the probe and the bind is tried again."""
    for _ in range(5):
        port = free_port()
        command = [executable, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
        server = Process(command, {"PATH": os.environ.get("PATH", "")})
        try:
            server.wait_for_line("", contains="Ready to accept connections")
        except AssertionError:
            server.stop()
            continue
        try:
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.stop()
        return
    raise AssertionError("redis-server did not start")


def served(
    tmp: Path,
    propagators: str,
    *,
    server: list[str],
    ready: Callable[[Process], dict[str, str]],
    agent: str,
    executions: Callable[[dict[str, Any]], int],
    cut: str,
    **apps: str,
) -> Scenario:
    """One scenario: the tool side (``server``, strict mode) started and ``ready`` (what the agent
    needs of it, e.g. its URL), the agent run to its end, then the tool side's ``executions(results)``
    execution spans awaited before it stops. ``apps``: what both sides are told (a broker URL)."""
    ran_log = tmp / "ran.log"
    ran_log.touch()
    with running() as receiver:
        server_env = env(TOOLS, receiver.endpoint, propagators, OTEL_TOOLCALLS_STRICT="true",
                         TOOL_RAN_LOG=str(ran_log), **apps)  # fmt: skip
        process = Process(server, server_env)
        try:
            agent_env = env(AGENT, receiver.endpoint, propagators, **apps, **ready(process))
            results = result_of(run(instrumented(agent), agent_env))
            wait_for_executions(receiver, executions(results))
        finally:
            process.stop()
        return Scenario(results, ran(ran_log), receiver, "".join(process.output), cut)
