"""Process-wide state has one owner (``_core.process``): one at-fork hook, one reset for tests."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

import otel_toolcalls
from otel_toolcalls._config import Settings
from otel_toolcalls._core import names as n
from otel_toolcalls._core import process
from otel_toolcalls._core.calls import classify
from otel_toolcalls._core.errors import warn_once
from otel_toolcalls._core.owners import keep, kept
from otel_toolcalls._core.registry import CallRecord
from otel_toolcalls._core.request import Request, stash, stashed
from otel_toolcalls._core.revocation import seal_all
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.stream import bind, bound
from otel_toolcalls._core.telemetry import Telemetry, active, in_force, set_active
from otel_toolcalls._linking.spans import is_execution, record

PACKAGE = pathlib.Path(otel_toolcalls.__file__).parent


def _called_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _register_at_fork_calls() -> list[str]:
    """Where the package calls ``os.register_at_fork`` (as an attribute or a name imported bare)."""
    return [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if _called_name(node) == "register_at_fork"
    ]


def test_the_package_registers_one_at_fork_hook_in_process() -> None:
    assert _register_at_fork_calls() == ["_core/process.py"]


# A real process holds every lock the package has in another thread while it forks, with a call
# open; the child reports what it finds. An alarm ends a child that waits on a lock forever.
_FORKING = r"""
import json, os, signal, sys, threading

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolcalls._config import Settings
from otel_toolcalls._core import process
from otel_toolcalls._core.calls import classify
from otel_toolcalls._core.counts import counts_for
from otel_toolcalls._core.errors import warn_once
from otel_toolcalls._core.registry import CallRecord
from otel_toolcalls._core.revocation import revoke, seal_all
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.stream import bind, bound
from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._wiring.imports import when_imported

exporter = InMemorySpanExporter()
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
meter_provider = MeterProvider()
telemetry = Telemetry(Settings(), tracer_provider, meter_provider)
state = StreamState(telemetry, RequestInfo(provider="openai", model="m"))
state.block_started(0, name="get_weather", call_id="call_open")
state.block_started(1, name="lookup", call_id="call_held", whole=True, revocable=True)
state.block_completed(1)  # held: its span and count wait for revoke() or seal()
key = type("Response", (), {})()
bind(key, state)
process.REGISTRY.put("call_done", CallRecord("completed", None, "get_weather", "function", None))
warn_once("parent.site", "said by the parent")
classify("length")
telemetry.metrics.tool_names("get_weather")


class Broken:
    def after_fork_in_child(self):
        raise RuntimeError("a step that fails must leave the others done")


broken = Broken()
process.renew_at_fork(broken)

# The objects' own locks are private attributes: held here only to prove the child renews them.
locks = [*(getattr(process.LOCKS, name) for name in process.Locks.__slots__),
         process.REGISTRY._lock, telemetry.metrics.tool_names._lock, telemetry.metrics.toolcall_calls._lock]
held, release = threading.Event(), threading.Event()


def hold():
    for lock in locks:
        lock.acquire()
    held.set()
    release.wait()
    for lock in locks:
        lock.release()


threading.Thread(target=hold, daemon=True).start()
held.wait()
pid = os.fork()
if pid == 0:
    signal.alarm(30)
    # Each path that takes one of the locks the parent's thread holds:
    bind(type("Other", (), {})(), state)
    counts_for(MeterProvider().get_meter("m"), "x", unit="1", description="x")
    warn_once("child.site", "said by the child")
    with process.LOCKS.reported:
        pass
    when_imported(["json"], lambda: None)
    process.REGISTRY.put("call_child", CallRecord("completed", None, "t", "function", None))
    telemetry.metrics.tool_names("another_tool")
    telemetry.metrics.toolcall_calls.add(1, {"x": 1})
    state.ended()  # the parent's stream: disowned, so it ends nothing here
    held_here = len(process.HELD)
    revoked = revoke("call_held")  # takes the held lock; the parent's held call is not the child's
    seal_all()
    found = {
        "live": len(process.LIVE),
        "held": [held_here, revoked],
        "open": state.is_open(0),
        "exported": [s.name for s in exporter.get_finished_spans()],
        "bound": bound(key) is state,
        "registry": sorted(k for k in ("call_done", "call_child") if process.REGISTRY.get(k)),
        "warned": sorted(process.WARNED & {"parent.site", "child.site"}),
        "classified": process.CLASSIFIED.get("length", "missing"),
        "locks_renewed": [
            getattr(process.LOCKS, name) is not lock
            for name, lock in zip(process.Locks.__slots__, locks)
        ],
    }
    with open(sys.argv[1], "w") as f:
        json.dump(found, f)
    os._exit(0)
_, status = os.waitpid(pid, 0)
release.set()
print(status)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_finds_every_table_in_its_after_fork_state(tmp_path: pathlib.Path) -> None:
    app, out = tmp_path / "app.py", tmp_path / "child.json"
    app.write_text(_FORKING)
    done = subprocess.run([sys.executable, str(app), str(out)], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["0"], "the child hung on a lock or failed"
    found = json.loads(out.read_text())
    assert found == {
        "live": 0,  # the parent's stream was disowned...
        "held": [0, False],  # ...and its held call dropped (the parent ends and counts it)
        "open": False,
        "exported": [],  # ...so the child ended and exported none of it
        "bound": True,
        "registry": ["call_child", "call_done"],  # records kept, and the new lock takes the child's
        "warned": ["child.site", "parent.site"],
        "classified": n.TRUNCATED,
        "locks_renewed": [True] * len(process.Locks.__slots__),
    }


def test_reset_forgets_what_a_test_must_not_inherit(telemetry: Any) -> None:
    t = Telemetry(Settings(), telemetry.tracer_provider, telemetry.meter_provider)
    state = StreamState(t, RequestInfo(provider="openai", model="m"))
    state.block_started(0, name="get_weather", call_id="call_left_open")
    state.block_started(1, name="lookup", call_id="call_left_held", whole=True, revocable=True)
    state.block_completed(1)
    key, owner, span = (type("Key", (), {})() for _ in range(3))
    bind(key, state)
    stash(owner, Request(telemetry=t, provider="openai", model="m"))
    keep(owner, "value")
    record(span, "call_x")
    process.REGISTRY.put("call_x", CallRecord("completed", None, "get_weather", "function", None))
    warn_once("test.site", "once")
    process.REPORTED.add("an_adapter")
    classify("length")
    before = active()
    set_active(None)
    try:
        assert in_force() is in_force()  # built once, on the global providers
    finally:
        set_active(before)
    meters = len(process.COUNTS_BY_METER)

    process.reset()

    assert not process.LIVE and not state.is_open(0) and not process.HELD
    state.ended()
    seal_all()
    assert telemetry.tool_spans() == [], "a stream left by another test ends nothing"
    assert bound(key) is None and not stashed(owner) and kept(owner) is None
    assert not is_execution(span)
    assert process.REGISTRY.get("call_x") is None and process.REGISTRY.aborted_count == 0
    assert not process.WARNED and not process.REPORTED
    assert process.FALLBACK.value is None
    # Kept: a memo of a pure function, and counts the SDK still reports through their meters.
    assert process.CLASSIFIED["length"] == n.TRUNCATED
    assert len(process.COUNTS_BY_METER) == meters > 0
