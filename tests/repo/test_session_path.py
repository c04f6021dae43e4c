"""Adapters end streams through one of the two paths docs/ARCHITECTURE.md names: the wrapped
iterator (``_core.stream``) or the session (``_core.session``), never by calling ``StreamState``'s
terminal events themselves. Failing here names the module, line and expression."""

from __future__ import annotations

import ast
from pathlib import Path

import otel_toolcalls

ROOT = Path(otel_toolcalls.__file__).parent
# StreamState's terminal events: each reaches its finalize once.
ENDINGS = frozenset({"ended", "failed", "closed", "cancelled", "abandoned", "finalize"})
# The adapters whose streams a session or transport hands events to: each holds them in a Session.
ON_SESSION = (
    "_frameworks/claude_agent_sdk.py",
    "_frameworks/agno.py",
    "_providers/openai/ws_connection.py",
    "_providers/openai/agents_realtime.py",
    "_providers/litellm.py",
    "_providers/gemini/streams.py",
    "_providers/gemini/live.py",
    "_providers/bedrock/bidi.py",
)


def _adapters() -> list[Path]:
    return sorted([*(ROOT / "_providers").rglob("*.py"), *(ROOT / "_frameworks").rglob("*.py")])


def _called(node: ast.Call) -> list[ast.expr]:
    """What a call calls: its function, or each branch of ``(a if c else b)()``."""
    func = node.func
    return [func.body, func.orelse] if isinstance(func, ast.IfExp) else [func]


def _ends_a_state(expr: ast.expr) -> bool:
    # A stream's state is named ``state`` in the adapters (``state``, ``turn.state``, ``_self_state``).
    if not isinstance(expr, ast.Attribute) or expr.attr not in ENDINGS:
        return False
    return ast.unparse(expr.value).rsplit(".", 1)[-1].lower().endswith("state")


def _names_an_ending(node: ast.AST) -> bool:
    """``StreamState.ended`` and the like, called or handed on."""
    if not isinstance(node, ast.Attribute):
        return False
    return node.attr in ENDINGS and ast.unparse(node.value) == "StreamState"


def offences(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if _names_an_ending(node):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Call):
            found += [f"{node.lineno}: {ast.unparse(node)}" for f in _called(node) if _ends_a_state(f)]
    return found


def test_no_adapter_ends_a_stream_state_itself() -> None:
    found = {str(p.relative_to(ROOT)): hits for p in _adapters() if (hits := offences(p.read_text()))}
    assert found == {}


def test_the_session_adapters_hold_their_streams_in_a_session() -> None:
    missing = [
        name
        for name in ON_SESSION
        if not any(
            isinstance(node, ast.ImportFrom) and node.module == "otel_toolcalls._core.session"
            for node in ast.walk(ast.parse((ROOT / name).read_text()))
        )
    ]
    assert missing == []


def test_the_check_sees_each_way_of_ending_a_state() -> None:
    # The checks above would pass on a walk that finds nothing, or a rule that matches nothing.
    assert len(_adapters()) > 40
    source = (
        "state.ended()\n"
        "traced.state.closed()\n"
        "(state.cancelled if c else state.ended)()\n"
        "how = StreamState.failed\n"
        "weakref.finalize(owner, session.end_all, ABANDONED)\n"
        "request.closed()\n"
        "hand_back(stream, on_close=state.closed)\n"
    )
    assert sorted(hit.split(":")[0] for hit in offences(source)) == ["1", "2", "3", "3", "4"]
