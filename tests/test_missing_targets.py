"""An SDK release that moves a patched private: one WARNING per adapter (SDK, version, target), once
per process, whether the SDK was imported before instrument() or after; and every adapter's
``REQUIRES.targets`` is exactly what it patches, so that the warning and ``doctor`` tell the truth."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from installed import installed_adapter_names as adapter_names

from otel_toolcalls._adapters._patches import Patches

HERE = Path(__file__).resolve().parent

COLLECT = """
import json, logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record)
logging.getLogger("otel_toolcalls").addHandler(Keep())
logging.getLogger("otel_toolcalls").setLevel(logging.DEBUG)
from otel_toolcalls import ToolCallsInstrumentor
"""
REPORT = """
print(json.dumps([r.getMessage() for r in records if r.levelno >= logging.WARNING]))
"""


def _warnings(body: str) -> list[str]:
    script = COLLECT + textwrap.dedent(body) + REPORT
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=HERE, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_sdk_imported_first_with_a_target_gone_warns_once_across_instruments() -> None:
    warnings = _warnings(
        """
        import mistralai.client.chat
        del mistralai.client.chat.Chat.stream_async
        instrumentor = ToolCallsInstrumentor()
        instrumentor.instrument()
        instrumentor.uninstrument()
        instrumentor.instrument()
        instrumentor.uninstrument()
        """
    )
    version = importlib.metadata.version("mistralai")
    assert warnings == [
        f"otel_toolcalls: mistralai {version} lacks mistralai.client.chat.Chat.stream_async: the mistral "
        "adapter cannot trace what goes through it (see `otel-toolcalls doctor`)"
    ]


def test_sdk_imported_after_instrument_with_targets_gone_warns_once() -> None:
    # A wait registered before instrument()'s runs first: it removes two targets of a real SDK
    # class as the application's import completes, before the adapter is applied.
    warnings = _warnings(
        """
        from otel_toolcalls import _imports
        def break_it():
            stream = sys.modules["groq._streaming"]
            del stream.Stream.__stream__
            del stream.AsyncStream.close
        _imports.when_imported(["groq._streaming"], break_it)
        instrumentor = ToolCallsInstrumentor()
        instrumentor.instrument()
        from groq import Groq
        instrumentor.uninstrument()
        instrumentor.instrument()
        """
    )
    version = importlib.metadata.version("groq")
    (warning,) = warnings
    assert warning.startswith(f"otel_toolcalls: groq {version} lacks ")
    assert "groq._streaming.Stream.__stream__, groq._streaming.AsyncStream.close:" in warning
    assert "the groq adapter" in warning


def _patch_sets(instrumentor: Any) -> dict[str, set[tuple[str, str]]]:
    made: dict[str, set[tuple[str, str]]] = {}
    for adapter in instrumentor._instrumented:
        name = adapter.__name__.rpartition(".")[2]
        for value in vars(adapter).values():
            patches = getattr(value, "_patches", value)
            if isinstance(patches, Patches):
                made.setdefault(name, set()).update(patches._made)
    return made


def test_every_adapter_patches_exactly_its_declared_targets(instrument: Any) -> None:
    declared = {}
    for name in adapter_names():
        requires = importlib.import_module(f"otel_toolcalls._adapters.{name}").REQUIRES
        for module in requires.modules:
            importlib.import_module(module)
        declared[name] = set(requires.targets)
        assert requires.missing() == [], name
    made = _patch_sets(instrument())
    assert made == declared


@pytest.mark.parametrize("name", adapter_names())
def test_every_declaration_names_its_distribution(name: str) -> None:
    requires = importlib.import_module(f"otel_toolcalls._adapters.{name}").REQUIRES
    assert requires.version() == importlib.metadata.version(requires.sdk)
    assert requires.targets and all(module and attr for module, attr in requires.targets)
