"""Translator for Bedrock InvokeModelWithResponseStream chunks -> the model family's own translator.

botocore parses each frame to ``{"chunk": {"bytes": b'...'}}`` and leaves ``bytes`` as the model
family's JSON, unparsed. That envelope is decoded here, once per chunk (the one parse the package
makes: the argument fragments inside it stay the strings they are, never parsed or joined), and
read by the family's translator:

- Anthropic Claude: the Messages stream events (``{"type": "content_block_delta", ...}``), read by
  the Anthropic translator through an attribute view of the decoded dict.
- Amazon Nova: the Converse events (``{"contentBlockDelta": {...}}``: AWS documents Nova's Invoke
  API as consistent with Converse), read by the ConverseStream translator as they are.
- OpenAI's open-weight models (``openai.gpt-oss-*``): Chat Completions chunks
  (``{"object": "chat.completion.chunk", "choices": [...]}``: AWS documents their bodies as
  OpenAI's), read by the Chat Completions translator through the same attribute view.
- Other families (Llama, Mistral, Titan, Cohere...) stream no tool-call blocks the package reads;
  their last chunk carries ``amazon-bedrock-invocationMetrics``, which Bedrock adds to every
  family's last chunk: the stream reached its end.

The family is told by the chunk itself (a ``type`` key is Anthropic's, a ``choices`` key OpenAI's),
not by ``modelId``: an inference-profile ARN does not name its model.
"""

from __future__ import annotations

import json
from typing import Any

from otel_toolcalls._core.sink import Sink
from otel_toolcalls._providers.formats import anthropic_messages, chat_completions

from . import converse

_METRICS = "amazon-bedrock-invocationMetrics"
_CONVERSE = frozenset(("messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
                       "messageStop", "metadata"))  # fmt: skip


class View:
    """A decoded JSON object read by attribute, as the translators read the SDKs' models; a key
    that is absent reads None, an object a view, a list its items as views."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        return _viewed(self._data.get(name))


def _viewed(value: Any) -> Any:
    if isinstance(value, dict):
        return View(value)
    if isinstance(value, list):
        return [_viewed(item) for item in value]
    return value


def process_event(state: Sink, event: Any) -> None:
    # {"chunk":{"bytes":b'{"type":"content_block_delta","index":1,"delta":{...}}'}}; the
    # exception events raise in botocore's parse and never come here.
    chunk = event.get("chunk")
    raw = chunk.get("bytes") if chunk is not None else None
    if not raw:
        return
    payload = json.loads(raw)
    if not isinstance(payload, dict):
        return
    kind = payload.get("type")
    if kind == "content_block_delta":
        # The hot path read on the dict itself, as the Anthropic translator reads its event (no
        # view made per fragment): {"type":"content_block_delta","index":1,
        #  "delta":{"type":"input_json_delta","partial_json":"{\"lo"}}
        delta = payload.get("delta") or {}
        if delta.get("type") == "input_json_delta":
            state.fragment(payload.get("index"), delta.get("partial_json"))
    elif kind is not None:
        anthropic_messages.process_event(state, View(payload))
    elif "choices" in payload:
        # {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[...]},
        #  "finish_reason":null}]}: a choice's finish reason completes its calls, as on OpenAI.
        chat_completions.process_chunk(state, View(payload))
    elif not _CONVERSE.isdisjoint(payload):
        converse.process_event(state, payload)
    elif _METRICS in payload:
        state.final_event()
