"""Agent loops to test with the plugin: a careless one of each kind, and one done right.

The careless loops do what breaks in production when a stream dies mid-call: they keep whatever
arrived, repair the partial JSON, execute the tool, persist the partial assistant turn and send it
back. The careful loops accept a turn only when the provider said it was complete (OpenAI
``finish_reason`` ``tool_calls`` / ``stop``, Anthropic ``stop_reason`` ``tool_use`` / ``end_turn``,
no exception), roll back otherwise and retry the request. ``tests/tooling/test_pytest_plugin.py`` runs
both under the plugin; ``examples/test_agent_loops.py`` is what a user's own test file looks like.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import Any

import anthropic
import openai

from otel_toolcalls import execute_tool

MODEL = "gpt-4o-mini"
CLAUDE = "claude-sonnet-4-6"
TOOLS: dict[str, Any] = {"get_weather": lambda city="?", **_: f"sunny in {city}"}
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CLAUDE_TOOLS = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}]


def _transport_errors() -> tuple[type[Exception], ...]:
    # Recent SDK releases moved from httpx to its successor httpx2; a dropped body raises the
    # transport error of whichever one the SDK uses.
    found = []
    for name in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except ImportError:
            continue
    return tuple(found)


STREAM_ERRORS = (openai.APIError, anthropic.APIError, *_transport_errors())


@dataclass
class Call:
    id: str
    name: str
    arguments: str


def lenient_json(text: str) -> dict[str, Any]:
    """The careless repair: close what is open and hope (partial-JSON repair libraries do this)."""
    for suffix in ("", '"}', "}", '"]}'):
        try:
            value = json.loads(text + suffix)
            return value if isinstance(value, dict) else {}
        except ValueError:
            continue
    return {}


def run(call: Call) -> str:
    with execute_tool(call.id, name=call.name):
        return str(TOOLS[call.name](**lenient_json(call.arguments)))


# OpenAI Chat Completions.


def openai_turn(
    client: openai.OpenAI, messages: list[Any]
) -> tuple[list[Call], str | None, Exception | None]:
    """One streamed turn: the calls as accumulated, the finish reason, the error that ended it."""
    calls: dict[int, Call] = {}
    finish: str | None = None
    try:
        stream = client.chat.completions.create(
            model=MODEL, messages=messages, tools=OPENAI_TOOLS, stream=True
        )
        with stream:
            for chunk in stream:
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    for tc in choice.delta.tool_calls or []:
                        call = calls.setdefault(tc.index, Call("", "", ""))
                        call.id = tc.id or call.id
                        call.name = (tc.function and tc.function.name) or call.name
                        call.arguments += (tc.function and tc.function.arguments) or ""
    except STREAM_ERRORS as error:
        return list(calls.values()), finish, error
    return list(calls.values()), finish, None


def _openai_keep(messages: list[Any], calls: list[Call]) -> None:
    messages.append(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls
            ],
        }
    )
    messages += [{"role": "tool", "tool_call_id": c.id, "content": run(c)} for c in calls]


def careless_openai_agent(client: openai.OpenAI, prompt: str, *, max_turns: int = 4) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        calls, _finish, _error = openai_turn(client, messages)
        if not calls:
            return messages
        _openai_keep(messages, calls)  # the bug: kept and executed even when the stream broke
    return messages


def careful_openai_agent(
    client: openai.OpenAI, prompt: str, *, max_turns: int = 4, attempts: int = 3
) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        for _attempt in range(attempts):
            calls, finish, error = openai_turn(client, messages)
            if error is None and finish in ("tool_calls", "stop"):
                break  # a complete turn; anything else is rolled back and asked again
        else:
            raise RuntimeError(f"no complete turn in {attempts} attempts")
        if not calls:
            return messages
        _openai_keep(messages, calls)
    return messages


# Anthropic Messages.


def anthropic_turn(client: anthropic.Anthropic, messages: list[Any]) -> tuple[Any, Exception | None]:
    """One streamed turn: the message as accumulated (the SDK's snapshot), the error that ended it."""
    stream = client.messages.stream(
        model=CLAUDE,
        max_tokens=1024,
        messages=messages,
        tools=CLAUDE_TOOLS,  # type: ignore[arg-type]
    )
    with stream as events:
        try:
            for _ in events:
                pass
        except STREAM_ERRORS as error:
            return events.current_message_snapshot, error
        return events.get_final_message(), None


def _anthropic_keep(messages: list[Any], message: Any) -> bool:
    uses = [b for b in message.content if b.type == "tool_use"]
    if not uses:
        return False
    messages.append(
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
    )
    results = [
        {"type": "tool_result", "tool_use_id": b.id, "content": run(Call(b.id, b.name, json.dumps(b.input)))}
        for b in uses
    ]
    messages.append({"role": "user", "content": results})
    return True


def careless_anthropic_agent(client: anthropic.Anthropic, prompt: str, *, max_turns: int = 4) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        message, _error = anthropic_turn(client, messages)
        if not _anthropic_keep(messages, message):  # the bug: the partial snapshot is kept
            return messages
    return messages


def careful_anthropic_agent(
    client: anthropic.Anthropic, prompt: str, *, max_turns: int = 4, attempts: int = 3
) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        for _attempt in range(attempts):
            message, error = anthropic_turn(client, messages)
            if error is None and message.stop_reason in ("tool_use", "end_turn"):
                break
        else:
            raise RuntimeError(f"no complete turn in {attempts} attempts")
        if not _anthropic_keep(messages, message):
            return messages
    return messages
