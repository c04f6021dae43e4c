"""The Claude Code CLI (what the Claude Agent SDK runs) pointed at the fake Anthropic endpoint.

``cli_env(fake, home)`` is the environment the SDK's ``ClaudeAgentOptions(env=...)`` passes to
the CLI: the fake's base URL, a dummy key, a throwaway home, nothing sent anywhere else (the
machine may reach only loopback; an address the CLI still tries is refused at once, never waited
on). ``CLIFake`` answers the requests the CLI makes of its own (older releases warm their subagent
models up with a "Warmup" prompt, and ask about each Bash command's output with a prompt starting
"Command:") with a short text, so the queued scripts answer the agent's turns only.
``message_json`` is a whole response, as the CLI's non-streaming fallback asks for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from . import anthropic as messages
from ._server import FakeProvider, ReceivedRequest, Script

# Everything but the model's requests off: telemetry, error reports, updates, feedback surveys.
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
}


def cli_env(fake: FakeProvider, home: str, *, retries: int = 0, fallback: bool = True) -> dict[str, str]:
    """``retries``: the CLI's own retries of a failed request (its default is ten, with backoff);
    ``fallback`` False: no non-streaming retry after a stream that broke."""
    env = {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "HOME": home,
        "CLAUDE_CODE_MAX_RETRIES": str(retries),
        **QUIET,
    }
    if not fallback:
        env["CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK"] = "1"
    return env


def cli_options(
    fake: FakeProvider, home: str, *, retries: int = 0, fallback: bool = True, **options: Any
) -> Any:
    """``ClaudeAgentOptions`` for the bundled CLI against ``fake``, in ``home``, writing the raw
    stream events (``include_partial_messages``); ``options``: the rest (tools, turns, hooks)."""
    from claude_agent_sdk import ClaudeAgentOptions

    env = cli_env(fake, home, retries=retries, fallback=fallback)
    return ClaudeAgentOptions(
        env=env, cwd=home, model=messages.MODEL, include_partial_messages=True, **options
    )


def _first_text(request: ReceivedRequest) -> Any:
    try:
        content = request.json()["messages"][0]["content"]
        return content if isinstance(content, str) else content[0].get("text")
    except (ValueError, LookupError, TypeError, AttributeError):
        return None


class CLIFake(FakeProvider):
    """A ``FakeProvider`` that answers the CLI's own requests itself."""

    def next_script(self, request: ReceivedRequest) -> Script:
        text = _first_text(request)
        if text == "Warmup" or (isinstance(text, str) and text.startswith("Command: ")):
            return messages.script_for(messages.events_for([messages.Text("ok")], stop_reason="end_turn"))
        return super().next_script(request)


def message_json(content: Sequence[dict[str, Any]], *, stop_reason: str = "tool_use") -> Script:
    """A whole Messages response (not streamed), e.g. ``[{"type": "tool_use", "id": ..., "name":
    ..., "input": {...}}]``."""
    body = {
        "id": "msg_fake_whole",
        "type": "message",
        "role": "assistant",
        "model": messages.MODEL,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 12},
    }
    return Script([json.dumps(body).encode("utf-8")], content_type="application/json")
