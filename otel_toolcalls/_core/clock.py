"""The core's one clock, read through this module's attribute at each use: a test replaces
``time_ns`` to simulate when chunks arrive."""

from __future__ import annotations

import time

time_ns = time.time_ns


def now_ns() -> int:
    """The core's clock, for a request's start (read where the request is made)."""
    return time_ns()
