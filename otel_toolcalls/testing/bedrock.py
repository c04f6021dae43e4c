"""AWS Bedrock ConverseStream on the wire: event-stream frames, fragmented, paced, cut, truncated.

Point a real client at the fake provider (``client``: boto3's, ``aio_client``: aiobotocore's)::

    client = bedrock.client(fake.base_url)
    fake.enqueue(tool_use_script([WEATHER]))
    client.converse_stream(modelId=MODEL, messages=[...])["stream"]

InvokeModelWithResponseStream: ``script_for(anthropic_chunks(anthropic.events_for([...])))`` (Claude),
``script_for(nova_chunks([...]))`` (Amazon Nova).
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import eventstream, openai_chat
from ._fragments import pieces_of
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
        return pieces_of(self.input, self.fragments)


@dataclass
class Text:
    text: str


Block = ToolUse | Text


Event = tuple[str, dict[str, Any]]


def _start_event() -> Event:
    return ("messageStart", {"role": "assistant"})


def _block_start_event(index: int, call: ToolUse) -> Event:
    # {"contentBlockStart":{"start":{"toolUse":{"toolUseId":"t_1","name":"f"}},"contentBlockIndex":0}}
    tool_use: dict[str, Any] = {"toolUseId": call.id, "name": call.name}
    if call.type:
        tool_use["type"] = call.type
    return ("contentBlockStart", {"start": {"toolUse": tool_use}, "contentBlockIndex": index})


def _tool_delta_event(index: int, fragment: str) -> Event:
    return ("contentBlockDelta", {"delta": {"toolUse": {"input": fragment}}, "contentBlockIndex": index})


def _text_delta_event(index: int, text: str) -> Event:
    return ("contentBlockDelta", {"delta": {"text": text}, "contentBlockIndex": index})


def _block_stop_event(index: int) -> Event:
    return ("contentBlockStop", {"contentBlockIndex": index})


def _message_stop_event(stop_reason: str) -> Event:
    return ("messageStop", {"stopReason": stop_reason})


USAGE: dict[str, Any] = {"inputTokens": 12, "outputTokens": 34, "totalTokens": 46}


def _metadata_event(usage: dict[str, Any] | None = None) -> Event:
    return ("metadata", {"usage": USAGE if usage is None else usage, "metrics": {"latencyMs": 321}})


def message_start() -> bytes:
    return eventstream.event(*_start_event())


def block_start(index: int, call: ToolUse) -> bytes:
    return eventstream.event(*_block_start_event(index, call))


def tool_delta(index: int, fragment: str) -> bytes:
    return eventstream.event(*_tool_delta_event(index, fragment))


def text_delta(index: int, text: str) -> bytes:
    return eventstream.event(*_text_delta_event(index, text))


def block_stop(index: int) -> bytes:
    return eventstream.event(*_block_stop_event(index))


def message_stop(stop_reason: str) -> bytes:
    return eventstream.event(*_message_stop_event(stop_reason))


def metadata(usage: dict[str, Any] | None = None) -> bytes:
    """The last event: ConverseStream's usage (``cacheReadInputTokens`` / ``cacheWriteInputTokens``
    when prompt caching was used) and metrics."""
    return eventstream.event(*_metadata_event(usage))


def exception_frame(exception_type: str = "modelStreamErrorException", message: str = "boom") -> bytes:
    payload: dict[str, Any] = {"message": message}
    if exception_type == "modelStreamErrorException":
        payload.update(originalStatusCode=500, originalMessage=message)
    return eventstream.exception(exception_type, payload)


def converse_events(
    blocks: Sequence[Block],
    *,
    stop_reason: str | None = "tool_use",
    stop_last_block: bool = True,
    with_metadata: bool = True,
    usage: dict[str, Any] | None = None,
) -> list[Event]:
    """The Converse events for these blocks, as ``(event type, payload)``.

    ``stop_last_block=False`` leaves the last block without its ``contentBlockStop`` (a limit cut it).
    """
    events = [_start_event()]
    for index, block in enumerate(blocks):
        if isinstance(block, Text):
            # Bedrock opens text blocks with their first delta, not with a contentBlockStart.
            events.append(_text_delta_event(index, block.text))
        else:
            events.append(_block_start_event(index, block))
            events.extend(_tool_delta_event(index, piece) for piece in block.pieces())
        if stop_last_block or index < len(blocks) - 1:
            events.append(_block_stop_event(index))
    if stop_reason is not None:
        events.append(_message_stop_event(stop_reason))
        if with_metadata:
            events.append(_metadata_event(usage))
    return events


def frames_for(blocks: Sequence[Block], **options: Any) -> list[bytes]:
    """The ConverseStream frames Bedrock sends for these blocks, one frame per list entry
    (``converse_events``' options)."""
    return [eventstream.event(kind, payload) for kind, payload in converse_events(blocks, **options)]


def _client_settings(endpoint: str, config: Any, options: dict[str, Any]) -> dict[str, Any]:
    # No retries: a stream the fake cuts is seen cut, not asked for again.
    return {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "x",
        "aws_secret_access_key": "x",
        "config": config(retries={"total_max_attempts": 1}),
        **options,
    }


def client(endpoint: str, **options: Any) -> Any:
    """A real boto3 ``bedrock-runtime`` client pointed at the fake provider; boto3 is imported when
    this is called (after ``instrument()``, as ``opentelemetry-instrument`` would have it)."""
    import boto3
    from botocore.config import Config

    return boto3.client("bedrock-runtime", **_client_settings(endpoint, Config, options))


def aio_client(endpoint: str, **options: Any) -> Any:
    """aiobotocore's ``bedrock-runtime`` client context manager (``async with``), pointed at the
    fake provider, as aiobotocore's documentation opens one."""
    from aiobotocore.config import AioConfig
    from aiobotocore.session import get_session

    return get_session().create_client("bedrock-runtime", **_client_settings(endpoint, AioConfig, options))


# -- InvokeModelWithResponseStream: `chunk` events whose bytes are the model family's own JSON ---------

INVOCATION_METRICS: dict[str, Any] = {
    "inputTokenCount": 25,
    "outputTokenCount": 42,
    "invocationLatency": 321,
    "firstByteLatency": 120,
}
NOVA_MODEL = "us.amazon.nova-lite-v1:0"


def chunk(payload: dict[str, Any]) -> bytes:
    """One ``chunk`` event: ResponseStream's PayloadPart, whose ``bytes`` blob travels base64-encoded
    in the frame's JSON (botocore's model: no event payload member, so the frame is the structure)."""
    raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return eventstream.event("chunk", {"bytes": base64.b64encode(raw).decode("ascii")})


def anthropic_chunks(events: Sequence[tuple[str, dict[str, Any]]]) -> list[bytes]:
    """Anthropic Messages events (``testing.anthropic.events_for``) as Bedrock streams them for a
    Claude model: one chunk each, the invocation metrics added to the last one (``message_stop``)."""
    frames = []
    for i, (name, data) in enumerate(events):
        payload = dict(data)
        if name == "message_stop" and i == len(events) - 1:
            payload["amazon-bedrock-invocationMetrics"] = INVOCATION_METRICS
        frames.append(chunk(payload))
    return frames


def nova_chunks(blocks: Sequence[Block], **options: Any) -> list[bytes]:
    """Amazon Nova's Invoke stream: the Converse events, one ``{type: payload}`` object per chunk
    (``converse_events``' options); the metrics ride on the last one."""
    events = converse_events(blocks, **options)
    frames = []
    for i, (kind, payload) in enumerate(events):
        body: dict[str, Any] = {kind: payload}
        if i == len(events) - 1 and kind == "metadata":
            body["amazon-bedrock-invocationMetrics"] = INVOCATION_METRICS
        frames.append(chunk(body))
    return frames


OPENAI_MODEL = "openai.gpt-oss-120b-1:0"


def openai_chunks(events: Sequence[openai_chat.Event], *, model: str = OPENAI_MODEL) -> list[bytes]:
    """An OpenAI open-weight model's Invoke stream: the Chat Completions chunks
    (``testing.openai_chat.events_for``), one per chunk event; the metrics ride on the last one."""
    frames = []
    for i, event in enumerate(events):
        payload = openai_chat.chunk(event, model=model)
        if i == len(events) - 1:
            payload["amazon-bedrock-invocationMetrics"] = INVOCATION_METRICS
        frames.append(chunk(payload))
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
