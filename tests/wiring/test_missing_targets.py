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
from lanes import FRAMEWORK_VENVS, FRAMEWORKS_HERE, installed, requirement_pins, requires, targets_here

from otel_toolcalls._wiring.adapters import adapter_names
from otel_toolcalls._wiring.patches import Patches

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
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=HERE, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# adapter -> the targets a release removed: in the main venv a provider SDK's; in a framework venv
# (tests/helpers/lanes.py) each of its frameworks' (the first target, or the last: a later one gone).
BEFORE = {a: [targets_here(a)[0]] for a in FRAMEWORKS_HERE} or {
    "mistral": [("mistralai.client.chat", "Chat.stream_async")]
}
AFTER = {a: [targets_here(a)[-1]] for a in FRAMEWORKS_HERE} or {
    "groq": [("groq._streaming", "Stream.__stream__"), ("groq._streaming", "AsyncStream.close")]
}
DELETE = """
import importlib
def delete(module, attr):
    *path, name = attr.split(".")
    owner = importlib.import_module(module)
    for part in path:
        owner = getattr(owner, part)
    delattr(owner, name)
"""


def _expected(victims: dict[str, list[tuple[str, str]]]) -> list[str]:
    """The one WARNING per adapter, naming its removed targets in the order it declares them."""
    out = []
    for adapter, gone in victims.items():
        req = requires(adapter)
        missing = [f"{module}.{attr}" for module, attr in req.installed_targets() if (module, attr) in gone]
        out.append(
            f"otel_toolcalls: {req.sdk} {importlib.metadata.version(req.sdk)} lacks {', '.join(missing)}: "
            f"the {adapter} adapter cannot trace what goes through {'it' if len(missing) == 1 else 'them'} "
            "(see `otel-toolcalls doctor`)"
        )
    return sorted(out)


@pytest.mark.parametrize("victims", [BEFORE], ids=["-".join(BEFORE)])
def test_sdk_imported_first_with_a_target_gone_warns_once_across_instruments(victims: Any) -> None:
    warnings = _warnings(
        DELETE
        + textwrap.dedent(f"""
        for module, attr in {[target for gone in victims.values() for target in gone]!r}:
            delete(module, attr)
        instrumentor = ToolCallsInstrumentor()
        instrumentor.instrument()
        instrumentor.uninstrument()
        instrumentor.instrument()
        instrumentor.uninstrument()
        """)
    )
    assert sorted(warnings) == _expected(victims)


@pytest.mark.parametrize("victims", [AFTER], ids=["-".join(AFTER)])
def test_sdk_imported_after_instrument_with_targets_gone_warns_once(victims: Any) -> None:
    # A wait registered before instrument()'s runs first: it removes targets of a real SDK as the
    # application's import completes, before the adapter is applied.
    warnings = _warnings(
        DELETE
        + textwrap.dedent(f"""
        from otel_toolcalls._wiring import imports as _imports
        victims = {list(victims.values())!r}
        for gone in victims:
            _imports.when_imported([m for m, _ in gone], lambda gone=gone: [delete(*t) for t in gone])
        instrumentor = ToolCallsInstrumentor()
        instrumentor.instrument()
        for gone in victims:
            for module, _ in gone:
                importlib.import_module(module)  # the application's import
        instrumentor.uninstrument()
        instrumentor.instrument()
        """)
    )
    assert sorted(warnings) == _expected(victims)


def _patch_sets(instrumentor: Any) -> dict[str, set[tuple[str, str]]]:
    made: dict[str, set[tuple[str, str]]] = {}
    for name, adapter in instrumentor.instrumented_adapters().items():
        for value in vars(adapter).values():
            patches = getattr(value, "_patches", value)
            if isinstance(patches, Patches):
                made.setdefault(name, set()).update(patches._made)
    return made


def test_every_adapter_patches_exactly_its_declared_targets(instrument: Any) -> None:
    declared = {}
    for name in [a for a in adapter_names() if installed(a)]:
        req = requires(name)
        absent = set(req.absent_modules())  # surfaces this release predates: nothing to patch
        here = {(module, attr) for module, attr in req.installed_targets() if module not in absent}
        for module, _ in here:  # this release's design: the others' modules may not exist
            importlib.import_module(module)
        if here:
            declared[name] = here
        assert req.missing() == [], name
    made = _patch_sets(instrument())
    assert made == declared


# Every adapter installed here; the frameworks installed elsewhere, by their venv's requirements.
DECLARED = [a for a in adapter_names() if installed(a) or a in FRAMEWORK_VENVS]


@pytest.mark.parametrize(
    "name", DECLARED, ids=[a if installed(a) else f"{a}-in-{FRAMEWORK_VENVS[a][0][0]}" for a in DECLARED]
)
def test_every_declaration_names_its_distribution(name: str) -> None:
    req = requires(name)
    assert req.targets and all(module and attr for module, attr in req.targets)
    if installed(name):
        assert req.version() == importlib.metadata.version(req.sdk)
    else:
        # Not here: the venvs that run it install that distribution by that name.
        assert FRAMEWORK_VENVS[name], name
        assert all(req.sdk in requirement_pins(path) for _, path in FRAMEWORK_VENVS[name])
