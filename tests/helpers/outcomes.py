"""What every provider's tests share: the check of a tool-call span's outcome, and the bare rerun
that shows the SDK yields and raises the same with the package as without it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from otel_toolcalls._core import names as n


def assert_outcome(span: ReadableSpan, reason: str | None, error_type: str | None = None) -> None:
    """``reason`` None: completed (no reason, no error, status UNSET); otherwise aborted with that
    reason, ``error.type`` (the reason itself unless given) and status ERROR with its description."""
    attrs = span.attributes or {}
    if reason is None:
        assert attrs[n.TOOLCALL_OUTCOME] == "completed"
        assert n.TOOLCALL_ABORT_REASON not in attrs and n.ERROR_TYPE not in attrs
        assert span.status.status_code is StatusCode.UNSET
    else:
        assert attrs[n.TOOLCALL_OUTCOME] == "aborted"
        assert attrs[n.TOOLCALL_ABORT_REASON] == reason
        assert attrs[n.ERROR_TYPE] == (error_type or reason)
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == n.ABORT_DESCRIPTIONS[reason]


def caller_saw(exc: BaseException | None) -> Any:
    """What a caller can tell of an exception: its class, message and (botocore) response."""
    return None if exc is None else (type(exc), str(exc), getattr(exc, "response", None))


@contextlib.contextmanager
def bare_rerun(instrument: Any, telemetry: Any) -> Iterator[None]:
    """Around the bare rerun of what was just traced (which made tool spans): the package is
    uninstrumented first, and the rerun must record nothing."""
    assert telemetry.tool_spans()
    instrument().uninstrument()
    before = len(telemetry.spans())
    yield
    assert len(telemetry.spans()) == before  # the bare run was really bare
