"""One owner of the metrics: ``_core/metrics.py`` makes every instrument and records every signal.
Elsewhere the package calls its named methods (``call_ended``, ``stream_ended``...), never an
instrument, and names no metric (``names.METRIC_*``) but in the tables that map to them: usage fields,
and the metrics a peer records itself (``_linking/peer_spans.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider

import otel_toolcalls
from otel_toolcalls._core import names as n
from otel_toolcalls._core.metrics import INSTRUMENTS, Metrics

ROOT = Path(otel_toolcalls.__file__).parent
OWNER = ROOT / "_core" / "metrics.py"
# testing/ reads the metrics back (the recorder), it records none.
READERS = {ROOT / "_core" / "names.py", ROOT / "_core" / "usage.py", ROOT / "_linking" / "peer_spans.py",
           *(ROOT / "testing").rglob("*.py")}  # fmt: skip
MAKERS = {"create_counter", "create_histogram", "create_up_down_counter", "create_gauge"}


def _instrument_attributes() -> set[str]:
    made = Metrics(MeterProvider().get_meter("t"), 10)

    def instrument(value: object) -> bool:
        return hasattr(value, "add") or hasattr(value, "record")

    return {
        name
        for name, value in vars(made).items()
        if instrument(value) or (isinstance(value, dict) and all(map(instrument, value.values())))
    }


def _uses(path: Path) -> list[str]:
    attributes = _instrument_attributes()
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            if node.attr in attributes or node.attr in MAKERS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
            elif node.attr.startswith("METRIC_") and path not in READERS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
    return found


def test_only_the_owner_makes_or_touches_an_instrument() -> None:
    assert [use for path in sorted(ROOT.rglob("*.py")) if path != OWNER for use in _uses(path)] == []


def test_the_check_sees_a_record_outside_the_owner() -> None:
    # It would pass on attributes it does not know.
    assert {
        "toolcall_calls",
        "toolcall_duration",
        "execute_tool_duration",
        "tokens",
    } <= _instrument_attributes()
    assert _uses(OWNER) != []


def test_the_table_names_every_metric_once() -> None:
    assert set(INSTRUMENTS) == {getattr(n, name) for name in dir(n) if name.startswith("METRIC_")}


def test_a_toolcall_metric_is_named_as_it_is_exported() -> None:
    # METRIC_DURATION once named toolcall.duration beside two other durations: a toolcall.* metric's
    # constant and its instrument on Metrics spell the exported name.
    metrics = Metrics(MeterProvider().get_meter("test"), 8)
    toolcall = {name: getattr(n, name) for name in dir(n) if name.startswith("METRIC_TOOLCALL_")}
    assert len(toolcall) == 7
    assert [name for name, value in toolcall.items() if name != "METRIC_" + _upper(value)] == []
    assert [value for value in toolcall.values() if not hasattr(metrics, value.replace(".", "_"))] == []
    other = [getattr(n, name) for name in dir(n) if name.startswith("METRIC_") and name not in toolcall]
    assert [value for value in other if value.startswith("toolcall.")] == []


def _upper(value: str) -> str:
    return value.replace(".", "_").upper()
