"""``OTEL_PROPAGATORS=tracecontext,baggage,toolcalls`` under ``opentelemetry-instrument``, as a user
turns the propagator on: it loads, and the instrumentor still instruments.

opentelemetry-instrument imports opentelemetry.instrumentation.instrumentor, which imports
opentelemetry.propagate, which loads the configured propagators: this package is imported while
the module its instrumentor subclasses is half made (the whole process failed to start).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
PROBE = """
import json
from opentelemetry import propagate
import otel_toolcalls
print("PROBE " + json.dumps({
    "fields": sorted(propagate.get_global_textmap().fields),
    "instrumented": otel_toolcalls.ToolCallsInstrumentor().is_instrumented_by_opentelemetry,
}))
"""


def test_opentelemetry_instrument_loads_the_propagator_and_the_instrumentor() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_PROPAGATORS="tracecontext,baggage,toolcalls",
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
    )
    done = subprocess.run(
        [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Failed to load propagator" not in done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
    probe = json.loads(line[len("PROBE ") :])
    assert probe == {"fields": ["baggage", "toolcall", "traceparent", "tracestate"], "instrumented": True}
