"""Translator for Bedrock InvokeModelWithResponseStream chunks -> the model family's own translator.

botocore parses each frame to ``{"chunk": {"bytes": b'...'}}`` and leaves ``bytes`` as the family's
JSON: decoded here, once per chunk (the one parse the package makes: argument fragments stay the
strings they are), and read by the Anthropic, Converse (Nova) or Chat Completions translator.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from otel_toolcalls._core.sink import Sink
from otel_toolcalls._providers.formats import anthropic_messages, chat_completions
from otel_toolcalls._sdks.fields import Fields

from . import converse

_log = logging.getLogger(__name__)

_METRICS = "amazon-bedrock-invocationMetrics"
_CONVERSE = frozenset(("messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
                       "messageStop", "metadata"))  # fmt: skip


def translate_event(state: Sink, event: Any) -> None:
    # {"chunk":{"bytes":b'{"type":"content_block_delta","index":1,"delta":{...}}'}}; the
    # exception events raise in botocore's parse and never come here.
    chunk = event.get("chunk")
    raw = chunk.get("bytes") if chunk is not None else None
    if not raw:
        return
    try:
        payload = json.loads(raw)
    except ValueError:  # botocore hands on any bytes: not a chunk this model family sends
        _log.debug("otel_toolcalls: a Bedrock chunk that is not JSON")
        return
    if not isinstance(payload, dict):
        return
    # The family is told by the chunk itself, not by modelId (an inference-profile ARN does not name
    # its model): a "type" key is Anthropic Claude's Messages event.
    kind = payload.get("type")
    if kind == "content_block_delta":
        # The hot path read on the dict itself, as the Anthropic translator reads its event (no
        # view made per fragment): {"type":"content_block_delta","index":1,
        #  "delta":{"type":"input_json_delta","partial_json":"{\"lo"}}
        delta = payload.get("delta") or {}
        if delta.get("type") == "input_json_delta":
            state.fragment(payload.get("index"), delta.get("partial_json"))
    elif kind is not None:
        anthropic_messages.translate_event(state, Fields(payload))
    elif "choices" in payload:
        # {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[...]},
        #  "finish_reason":null}]}: a choice's finish reason completes its calls, as on OpenAI.
        # OpenAI's open-weight models (openai.gpt-oss-*): AWS documents their bodies as OpenAI's.
        chat_completions.translate_chunk(state, Fields(payload))
    elif not _CONVERSE.isdisjoint(payload):
        # {"contentBlockDelta":{...}}: Amazon Nova, whose Invoke API AWS documents as Converse's.
        converse.translate_event(state, payload)
    elif _METRICS in payload:
        # Bedrock adds it to every family's last chunk: the end, also for families (Llama, Mistral,
        # Titan, Cohere...) that stream no tool-call blocks the package reads.
        state.final_event()
