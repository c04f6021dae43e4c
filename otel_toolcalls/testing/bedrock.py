"""AWS Bedrock ConverseStream on the wire: event-stream frames, fragmented, paced, cut, truncated.

Point a real client at the fake provider::

    client = boto3.client("bedrock-runtime", endpoint_url=fake.base_url, region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="x",
                          config=Config(retries={"max_attempts": 1}))
    fake.enqueue(tool_use_script([WEATHER]))
    client.converse_stream(modelId=MODEL, messages=[...])["stream"]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import eventstream
from ._fragments import awkward_split
from ._server import Script

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"


@dataclass
class ToolUse:
    name: str
    input: str
    id: str = "tooluse_1"
    # Explicit fragments; by default the input is cut at awkward places.
    fragments: list[str] | None = None
    type: str | None = None  # "server_tool_use" for tools the provider runs

    def pieces(self) -> list[str]:
        return self.fragments if self.fragments is not None else awkward_split(self.input)


@dataclass
class Text:
    text: str


Block = ToolUse | Text


def message_start() -> bytes:
    return eventstream.event("messageStart", {"role": "assistant"})


def block_start(index: int, call: ToolUse) -> bytes:
    # {"contentBlockStart":{"start":{"toolUse":{"toolUseId":"t_1","name":"f"}},"contentBlockIndex":0}}
    tool_use: dict[str, Any] = {"toolUseId": call.id, "name": call.name}
    if call.type:
        tool_use["type"] = call.type
    return eventstream.event(
        "contentBlockStart", {"start": {"toolUse": tool_use}, "contentBlockIndex": index}
    )


def tool_delta(index: int, fragment: str) -> bytes:
    return eventstream.event(
        "contentBlockDelta", {"delta": {"toolUse": {"input": fragment}}, "contentBlockIndex": index}
    )


def text_delta(index: int, text: str) -> bytes:
    return eventstream.event("contentBlockDelta", {"delta": {"text": text}, "contentBlockIndex": index})


def block_stop(index: int) -> bytes:
    return eventstream.event("contentBlockStop", {"contentBlockIndex": index})


def message_stop(stop_reason: str) -> bytes:
    return eventstream.event("messageStop", {"stopReason": stop_reason})


USAGE: dict[str, Any] = {"inputTokens": 12, "outputTokens": 34, "totalTokens": 46}


def metadata(usage: dict[str, Any] | None = None) -> bytes:
    """The last event: ConverseStream's usage (``cacheReadInputTokens`` / ``cacheWriteInputTokens``
    when prompt caching was used) and metrics."""
    return eventstream.event(
        "metadata", {"usage": USAGE if usage is None else usage, "metrics": {"latencyMs": 321}}
    )


def exception_frame(exception_type: str = "modelStreamErrorException", message: str = "boom") -> bytes:
    payload: dict[str, Any] = {"message": message}
    if exception_type == "modelStreamErrorException":
        payload.update(originalStatusCode=500, originalMessage=message)
    return eventstream.exception(exception_type, payload)


def frames_for(
    blocks: Sequence[Block],
    *,
    stop_reason: str | None = "tool_use",
    stop_last_block: bool = True,
    with_metadata: bool = True,
    usage: dict[str, Any] | None = None,
) -> list[bytes]:
    """The frames Bedrock sends for these blocks, one after another, one frame per list entry.

    ``stop_last_block=False`` leaves the last block without its ``contentBlockStop`` (a limit cut it).
    """
    frames = [message_start()]
    for index, block in enumerate(blocks):
        if isinstance(block, Text):
            # Bedrock opens text blocks with their first delta, not with a contentBlockStart.
            frames.append(text_delta(index, block.text))
        else:
            frames.append(block_start(index, block))
            frames.extend(tool_delta(index, piece) for piece in block.pieces())
        if stop_last_block or index < len(blocks) - 1:
            frames.append(block_stop(index))
    if stop_reason is not None:
        frames.append(message_stop(stop_reason))
        if with_metadata:
            frames.append(metadata(usage))
    return frames


def rechunk(frames: Iterable[bytes], points: Iterable[int]) -> list[bytes]:
    """The frames' bytes as socket writes cut at ``points`` (offsets into the whole body)."""
    data = b"".join(frames)
    cuts = [0, *sorted({p for p in points if 0 < p < len(data)}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(cuts)]


def split_frames(frames: Sequence[bytes]) -> list[bytes]:
    """Every frame written in two halves, the cut moving through prelude, headers, payload and CRC."""
    writes: list[bytes] = []
    for i, frame in enumerate(frames):
        cut = (5, 14, len(frame) // 2, len(frame) - 2)[i % 4]
        writes.extend((frame[:cut], frame[cut:]))
    return writes


def script_for(
    frames: Sequence[bytes],
    *,
    cut_after: int | None = None,
    cut_inside: bool = False,
    split: bool = False,
    pace: float = 0.0,
    **script: Any,
) -> Script:
    """One socket write per frame (two with ``split``). ``cut_after``: the connection drops after that
    many frames; with ``cut_inside`` half of the next frame is written first."""
    kept = list(frames if cut_after is None else frames[:cut_after])
    writes = split_frames(kept) if split else kept
    if cut_after is not None and cut_inside and cut_after < len(frames):
        following = frames[cut_after]
        writes.append(following[: len(following) // 2])
    return Script(
        writes,
        content_type=eventstream.CONTENT_TYPE,
        pace=pace,
        end="cut" if cut_after is not None else "done",
        **script,
    )


def tool_use_script(
    blocks: Sequence[Block], *, stop_reason: str | None = "tool_use", **options: Any
) -> Script:
    return script_for(frames_for(blocks, stop_reason=stop_reason), **options)


WEATHER = ToolUse(
    name="get_weather",
    id="tooluse_weather_1",
    input='{"location": "Zürich, Schweiz", "unit": "celsius", "days": 14, "note": "naïve ☀️ check"}',
)
TIME = ToolUse(name="get_time", id="tooluse_time_2", input='{"timezone": "Europe/Zürich", "precision": 1000}')
