"""The table of adapters is the one list: every module in it is an adapter (``Adapter``), and every
adapter module of the package is in it (a module with ``REQUIRES`` left out would never run)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import otel_toolcalls
from otel_toolcalls._wiring.adapters import ADAPTERS, adapter_names, load
from otel_toolcalls._wiring.patches import Requires

ROOT = Path(otel_toolcalls.__file__).parent


def test_every_entry_is_an_adapter() -> None:
    for name in adapter_names():
        adapter = load(name)
        assert isinstance(adapter.REQUIRES, Requires), name
        assert list(inspect.signature(adapter.instrument).parameters) == ["telemetry"], name
        assert list(inspect.signature(adapter.uninstrument).parameters) == [], name
        assert adapter is importlib.import_module(ADAPTERS[name])


def _declares_requires(path: Path) -> bool:
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "REQUIRES" for t in targets):
            return True
    return False


def test_every_adapter_module_is_in_the_table() -> None:
    declared = set()
    for layer in ("_providers", "_frameworks"):
        for path in (ROOT / layer).rglob("*.py"):
            if _declares_requires(path):
                parts = path.relative_to(ROOT.parent).with_suffix("").parts
                declared.add(".".join(parts))
    assert declared == set(ADAPTERS.values())
    # 24 + smolagents + agent_framework + agno + claude_agent_sdk + haystack + dspy
    # + agents_realtime + agents_responses_ws + lm15 + dspy_lm15 + bedrock_bidi + strands_bidi
    assert len(declared) == 36
