"""``OTEL_PROPAGATORS=...,toolcalls`` loads the package's propagator while opentelemetry.propagate
is first imported, whichever module triggers that import: the package itself, its propagator
module, an instrumentation's utilities, or the auto-instrumentation (``opentelemetry-instrument``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

FIRST = [
    "otel_toolcalls",
    "otel_toolcalls._linking.propagator",
    "opentelemetry.instrumentation.utils",
    "opentelemetry.instrumentation.instrumentor",
    "opentelemetry.propagate",
]


@pytest.mark.parametrize("first", FIRST)
def test_the_propagator_loads_whatever_is_imported_first(first: str) -> None:
    code = (
        f"import {first}\n"
        "import otel_toolcalls\n"
        "from opentelemetry import propagate\n"
        "fields = sorted(propagate.get_global_textmap().fields)\n"
        "print(fields, otel_toolcalls.ToolCallsInstrumentor.__name__)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_PROPAGATORS"] = "tracecontext,baggage,toolcalls"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["['baggage',", "'toolcall',", "'traceparent',", "'tracestate']",
                                   "ToolCallsInstrumentor"]  # fmt: skip
