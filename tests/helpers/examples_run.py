"""An example of examples/ run as users run it: `opentelemetry-instrument python examples/<name>`,
spans to the console exporter, strict mode on, in this test's venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from console_spans import console_spans

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, **env: str) -> tuple[list[str], list[dict[str, Any]]]:
    """The example's output lines and the spans it exported; ``env`` adds to the fixed environment
    (a framework's own telemetry switched off, a cache folder). Raises if the example fails."""
    bin_dir = Path(sys.executable).parent
    out = subprocess.run(
        [str(bin_dir / "opentelemetry-instrument"), sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        env={
            "PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin",
            "OTEL_TRACES_EXPORTER": "console",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_TOOLCALLS_STRICT": "true",
            **env,
        },
        timeout=600,  # a hang guard, not a performance bound: importing litellm takes tens of seconds
        check=True,
    )
    return out.stdout.splitlines(), console_spans(out.stdout)
