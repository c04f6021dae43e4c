"""The streams every variant reads, served by the package's fake provider in a process of its own
(so the server does not compete with the measured client for the GIL): one port per workload."""

from __future__ import annotations

from typing import Any

from otel_toolcalls.testing import FakeProvider, Script
from otel_toolcalls.testing import _server as fake_server
from otel_toolcalls.testing import anthropic as anthropic_wire
from otel_toolcalls.testing import openai_chat as openai_wire

FRAGMENT_BYTES = 4096


def fragments_of(count: int) -> list[str]:
    # Short fragments, as models emit them (a token or two each).
    pieces = ['{"query": "', *[f"w{i % 97} " for i in range(max(0, count - 2))], '"}']
    return pieces[:count]


def blob_of(nbytes: int) -> list[str]:
    body = "x" * max(0, nbytes - 12)
    text = '{"blob": "' + body + '"}'
    return [text[i : i + FRAGMENT_BYTES] for i in range(0, len(text), FRAGMENT_BYTES)]


def _openai(workload: str) -> Script:
    if workload == "agent":
        # Text first, then two parallel tool calls, cut at awkward places (mid-string, mid-number).
        return openai_wire.tool_call_script(openai_wire.PARALLEL, text="Let me check both for you.")
    pieces = _pieces(workload)
    call = openai_wire.ToolCall(name="search", id="call_bench", arguments="", fragments=pieces)
    return openai_wire.script_for(openai_wire.events_for([call]), split_characters=False)


def _anthropic(workload: str) -> Script:
    if workload == "agent":
        blocks: list[Any] = [
            anthropic_wire.Text("Let me check both for you."),
            anthropic_wire.ToolUse("get_weather", '{"city": "Zürich", "days": 3}', id="toolu_par_1"),
            anthropic_wire.ToolUse(
                "get_time", '{"timezone": "Europe/Zurich", "offset": 120}', id="toolu_par_2"
            ),
        ]
        return anthropic_wire.tool_use_script(blocks)
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
    for provider, build in (("openai", _openai), ("anthropic", _anthropic)):
        for workload in workloads:
            fake = FakeProvider(default=build(workload)).start()
            providers.append(fake)
            urls[provider][workload] = fake.base_url
    ready.send(urls)
    stop.recv()
    for fake in providers:
        fake.stop()
