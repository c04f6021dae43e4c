"""The event-stream encoder, checked against botocore's own decoder."""

from __future__ import annotations

import json
import struct
from binascii import crc32

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_toolcalls.testing import bedrock, eventstream


def decode(*writes: bytes) -> list[object]:
    buffer = EventStreamBuffer()
    messages = []
    for data in writes:
        buffer.add_data(data)
        messages.extend(buffer)
    return messages


def test_event_round_trips_with_headers_and_payload() -> None:
    frame = eventstream.event("contentBlockDelta", {"delta": {"toolUse": {"input": '{"a": "ü'}}})
    (message,) = decode(frame)
    assert message.headers == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(message.payload) == {"delta": {"toolUse": {"input": '{"a": "ü'}}}
    assert "ü".encode() in message.payload  # raw UTF-8, as AWS writes it
    assert message.prelude.total_length == len(frame)
    assert message.crc == struct.unpack("!I", frame[-4:])[0]
    assert message.to_response_dict()["status_code"] == 200


def test_prelude_lengths_and_crcs() -> None:
    frame = eventstream.encode_message({":message-type": "event"}, b"{}")
    total, headers_length, prelude_crc = struct.unpack("!III", frame[:12])
    assert total == len(frame)
    assert headers_length == len(frame) - 12 - 2 - 4
    assert prelude_crc == crc32(frame[:8]) & 0xFFFFFFFF
    assert struct.unpack("!I", frame[-4:])[0] == crc32(frame[:-4]) & 0xFFFFFFFF


def test_every_header_type_round_trips() -> None:
    headers: dict[str, eventstream.HeaderValue] = {
        "s": "välue",
        "t": True,
        "f": False,
        "i": -7,
        "l": 2**40,
        "b": b"\x00\xff",
    }
    (message,) = decode(eventstream.encode_message(headers, b""))
    assert message.headers == headers
    assert message.payload == b""


def test_exception_and_error_frames_are_errors_to_botocore() -> None:
    exception, error = decode(
        bedrock.exception_frame("throttlingException", "slow down"), eventstream.error("E1", "m")
    )
    assert exception.headers[":exception-type"] == "throttlingException"
    assert exception.headers[":message-type"] == "exception"
    assert json.loads(exception.payload) == {"message": "slow down"}
    assert exception.to_response_dict()["status_code"] == 400
    assert error.headers == {":error-code": "E1", ":error-message": "m", ":message-type": "error"}
    assert error.to_response_dict()["status_code"] == 400


def test_a_corrupted_byte_fails_the_message_crc() -> None:
    frame = bytearray(eventstream.event("messageStop", {"stopReason": "tool_use"}))
    frame[-6] ^= 0x01
    with pytest.raises(ChecksumMismatch):
        decode(bytes(frame))


def test_frames_split_across_writes_decode_whole() -> None:
    frames = bedrock.frames_for([bedrock.WEATHER, bedrock.TIME])
    writes = bedrock.split_frames(frames)
    assert len(writes) == 2 * len(frames)
    assert [m.payload for m in decode(*writes)] == [m.payload for m in decode(*frames)]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_cut_points_decode_to_the_same_messages(data: st.DataObject) -> None:
    frames = bedrock.frames_for([bedrock.WEATHER])
    total = sum(map(len, frames))
    points = data.draw(st.lists(st.integers(1, total - 1), max_size=30))
    writes = bedrock.rechunk(frames, points)
    assert b"".join(writes) == b"".join(frames)
    decoded = decode(*writes)
    assert [m.headers[":event-type"] for m in decoded] == [m.headers[":event-type"] for m in decode(*frames)]
    assert [m.payload for m in decoded] == [m.payload for m in decode(*frames)]
