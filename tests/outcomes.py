"""The one check of a tool-call span's outcome that every provider's tests share."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from otel_toolcalls import _names as n


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
