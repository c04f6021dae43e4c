"""What a benchmark result was measured on: run.py and providers.py write it beside their figures."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def describe() -> dict[str, Any]:
    """The CPU, Python and commit a result was measured on (the commit says so when the package has
    uncommitted changes)."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        head = subprocess.run(
            ["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "-C", HERE, "status", "--porcelain", "--", "../otel_toolcalls"],
            capture_output=True,
            text=True,
        )
        commit = head.stdout.strip() + (
            " with uncommitted changes under otel_toolcalls/" if dirty.stdout.strip() else ""
        )
    except OSError:
        commit = ""
    return {
        "commit": commit,
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": os.getloadavg(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
