"""The streams every variant reads, served by the package's fake provider in a process of its own
(so the server does not compete with the measured client for the GIL): one port per workload."""

from __future__ import annotations

from typing import Any

from otel_toolcalls.testing import FakeProvider, Script
from otel_toolcalls.testing import _server as fake_server
from otel_toolcalls.testing import anthropic as anthropic_wire
from otel_toolcalls.testing import openai_chat as openai_wire

FRAGMENT_BYTES = 4096
TURN_TEXT = "Let me check both for you."
# Calls per turn in the turn table: 0 (text only: the per-stream cost alone), 1, 2 (the agent turn
# of the earlier runs), 8 (where the per-call cost shows).
TURN_CALLS = (0, 1, 2, 8)
_TURN_ARGUMENTS = (
    ("get_weather", '{"city": "Zürich", "days": 3}'),
    ("get_time", '{"timezone": "Europe/Zurich", "offset": 120}'),
)


def turn_calls(workload: str) -> int:
    """``turn<N>``: text, then N parallel tool calls."""
    return int(workload.removeprefix("turn"))


def _turn_call(i: int) -> tuple[str, str, str]:
    # The first two are the agent turn of the earlier runs (openai_chat.PARALLEL); then alternating.
    name, arguments = _TURN_ARGUMENTS[i % 2]
    return name, arguments, f"par_{i + 1}"


def fragments_of(count: int) -> list[str]:
    # Short fragments, as models emit them (a token or two each).
    pieces = ['{"query": "', *[f"w{i % 97} " for i in range(max(0, count - 2))], '"}']
    return pieces[:count]


def blob_of(nbytes: int) -> list[str]:
    body = "x" * max(0, nbytes - 12)
    text = '{"blob": "' + body + '"}'
    return [text[i : i + FRAGMENT_BYTES] for i in range(0, len(text), FRAGMENT_BYTES)]


def openai_script(workload: str) -> Script:
    if workload.startswith("turn"):
        # Text first, then the parallel tool calls, cut at awkward places (mid-string, mid-number).
        count = turn_calls(workload)
        calls = [
            openai_wire.ToolCall(name=name, id=f"call_{tail}", arguments=arguments)
            for name, arguments, tail in map(_turn_call, range(count))
        ]
        reason = "tool_calls" if count else "stop"
        return openai_wire.tool_call_script(calls, text=TURN_TEXT, finish_reason=reason)
    pieces = _pieces(workload)
    call = openai_wire.ToolCall(name="search", id="call_bench", arguments="", fragments=pieces)
    return openai_wire.script_for(openai_wire.events_for([call]), split_characters=False)


def anthropic_script(workload: str) -> Script:
    if workload.startswith("turn"):
        count = turn_calls(workload)
        blocks: list[Any] = [anthropic_wire.Text(TURN_TEXT)]
        blocks += [
            anthropic_wire.ToolUse(name, arguments, id=f"toolu_{tail}")
            for name, arguments, tail in map(_turn_call, range(count))
        ]
        return anthropic_wire.tool_use_script(blocks, stop_reason="tool_use" if count else "end_turn")
    pieces = _pieces(workload)
    use = anthropic_wire.ToolUse(name="search", arguments="", id="toolu_bench", fragments=pieces)
    return anthropic_wire.script_for(anthropic_wire.events_for([use]), split_characters=False)


def _pieces(workload: str) -> list[str]:
    if workload.startswith("len"):
        return fragments_of(int(workload[3:]))
    if workload.startswith("concurrent"):
        return fragments_of(20)
    if workload.startswith("mem"):
        return blob_of(int(workload[3:].removesuffix("MB")) * 1024 * 1024)
    raise ValueError(workload)


def serve(workloads: list[str], ready: Any, stop: Any) -> None:
    # 1,000 streams connect at once: the socketserver default backlog of 5 would drop SYNs.
    fake_server._Server.request_queue_size = 4096
    providers = []
    urls: dict[str, dict[str, str]] = {"openai": {}, "anthropic": {}}
    for provider, build in (("openai", openai_script), ("anthropic", anthropic_script)):
        for workload in workloads:
            fake = FakeProvider(default=build(workload)).start()
            providers.append(fake)
            urls[provider][workload] = fake.base_url
    ready.send(urls)
    stop.recv()
    for fake in providers:
        fake.stop()
