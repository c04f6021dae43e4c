"""What a test of an agent loop imports: replies, faults, the fault matrix.

    from otel_toolcalls.testing.kit import call, cut_mid_arguments, each_fault

``each_fault`` runs one test over every fault in ``ALL_FAULTS`` (parametrized as ``fault``); a fault's
``breaks`` says whether the targeted call ends aborted, ``reason`` with which abort reason.
"""

from __future__ import annotations

import pytest

from .faults import (
    ALL_FAULTS,
    BREAKING_FAULTS,
    Fault,
    buffer,
    cut_after_call,
    cut_mid_arguments,
    error_event,
    filter,
    pace,
    stall,
    truncate,
)
from .recorder import CallView, ToolCalls
from .scenario import Call, FakeLLM, Reply, Sent, call

each_fault = pytest.mark.parametrize("fault", ALL_FAULTS, ids=[f.id for f in ALL_FAULTS])
each_breaking_fault = pytest.mark.parametrize("fault", BREAKING_FAULTS, ids=[f.id for f in BREAKING_FAULTS])

__all__ = [
    "ALL_FAULTS",
    "BREAKING_FAULTS",
    "Call",
    "CallView",
    "FakeLLM",
    "Fault",
    "Reply",
    "Sent",
    "ToolCalls",
    "buffer",
    "call",
    "cut_after_call",
    "cut_mid_arguments",
    "each_breaking_fault",
    "each_fault",
    "error_event",
    "filter",
    "pace",
    "stall",
    "truncate",
]
