"""The binary AWS event-stream encoding (``application/vnd.amazon.eventstream``), encoder side.

botocore ships only a decoder (``botocore.eventstream.EventStreamBuffer``); the fake provider needs
the other half to write what Bedrock writes. One message is::

    [total length: u32][headers length: u32][prelude CRC32: u32]
    [headers: name length u8, name, value type u8, value ...]
    [payload]
    [message CRC32: u32, over every byte before it]

All integers are big-endian; a string header is type 7 with a u16 length.
"""

from __future__ import annotations

import json
import struct
from binascii import crc32
from typing import Any

PRELUDE_LENGTH = 12
CONTENT_TYPE = "application/vnd.amazon.eventstream"

HeaderValue = str | bytes | bool | int

# Header value types, as botocore.eventstream.EventStreamHeaderParser numbers them.
_TRUE, _FALSE, _INT32, _INT64, _BYTES, _STRING = 0, 1, 4, 5, 6, 7


def _header(name: str, value: HeaderValue) -> bytes:
    raw_name = name.encode("utf-8")
    head = struct.pack("!B", len(raw_name)) + raw_name
    if isinstance(value, bool):
        return head + struct.pack("!B", _TRUE if value else _FALSE)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return head + struct.pack("!Bi", _INT32, value)
        return head + struct.pack("!Bq", _INT64, value)
    kind, raw = (_BYTES, value) if isinstance(value, bytes) else (_STRING, value.encode("utf-8"))
    return head + struct.pack("!BH", kind, len(raw)) + raw


def encode_message(headers: dict[str, HeaderValue], payload: bytes) -> bytes:
    """One event-stream message with both CRCs; header order is kept."""
    raw_headers = b"".join(_header(name, value) for name, value in headers.items())
    total = PRELUDE_LENGTH + len(raw_headers) + len(payload) + 4
    lengths = struct.pack("!II", total, len(raw_headers))
    prelude = lengths + struct.pack("!I", crc32(lengths) & 0xFFFFFFFF)
    body = prelude + raw_headers + payload
    return body + struct.pack("!I", crc32(body) & 0xFFFFFFFF)


def _json(payload: Any) -> bytes:
    # Non-ASCII kept raw, as AWS sends it, so multi-byte characters can be split across writes.
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def event(event_type: str, payload: Any) -> bytes:
    """An ``event`` message: ``{":event-type": "contentBlockDelta", ...}`` with a JSON payload."""
    return encode_message(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
        _json(payload),
    )


def exception(exception_type: str, payload: Any) -> bytes:
    """An ``exception`` message (a modeled error such as ``modelStreamErrorException``)."""
    return encode_message(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        _json(payload),
    )


def error(code: str, message: str) -> bytes:
    """An ``error`` message: an unmodeled error, carried in headers only."""
    return encode_message({":error-code": code, ":error-message": message, ":message-type": "error"}, b"")
