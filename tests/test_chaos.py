"""``otel-toolcalls chaos`` as a real process between the real SDKs and the fake provider: the
faults it injects are the aborted calls the package sees, one for one; rate 0 passes bytes
unchanged; nothing is buffered; a 10 MB body goes through in bounded memory."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otel_toolcalls.testing import FakeProvider, Script
from otel_toolcalls.testing import anthropic as wire_anthropic
from otel_toolcalls.testing import openai_chat as wire_chat
from otel_toolcalls.testing import openai_responses as wire_responses
from otel_toolcalls.testing.scenario import timed_script


class Proxy:
    def __init__(self, upstream: str, *flags: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "otel_toolcalls", "chaos", "--listen", f"127.0.0.1:{self.port}"]
        self.process = subprocess.Popen(
            [*command, "--upstream", upstream, *flags], stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 30
        while True:  # ready when it answers; a bound so a broken proxy fails the test, not hangs it
            try:
                self.stats()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the proxy did not start: {self.stop()}") from None
                time.sleep(0.05)

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/__chaos/stats", timeout=10) as response:
            return dict(json.load(response))

    def peak_rss_kib(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def fake(upstream: FakeProvider) -> Iterator[FakeProvider]:
    upstream.reset()
    yield upstream
    upstream.reset()


def _drain(run: Any) -> None:
    try:
        run()
    except Exception:  # the injected cut surfaces as the SDK's or transport's error; the span says which
        return


def _one_of_each(fake: FakeProvider, client: Any, claude: Any, i: int) -> None:
    args = wire_chat.WEATHER.arguments
    fake.enqueue(wire_chat.tool_call_script([wire_chat.ToolCall("get_weather", args, id=f"call_c{i}")]))
    _drain(lambda: [None for _ in client.chat.completions.create(model="m", messages=[], stream=True)])
    fake.enqueue(
        wire_anthropic.tool_use_script([wire_anthropic.ToolUse("get_weather", args, id=f"toolu_{i}")])
    )

    def messages() -> None:
        with claude.messages.stream(model="m", max_tokens=5, messages=[]) as stream:
            for _ in stream:
                pass

    _drain(messages)
    fake.enqueue(
        wire_responses.tool_call_script([wire_responses.ToolCall("get_weather", args, call_id=f"call_r{i}")])
    )
    _drain(lambda: [None for _ in client.responses.create(model="m", input="x", stream=True)])


def test_injected_faults_are_the_aborted_calls_one_for_one(toolcalls: Any, fake: FakeProvider) -> None:
    flags = ("--cut-mid-arguments", "0.4", "--truncate", "0.3", "--refragment", "--seed", "7")
    import anthropic
    import openai

    proxy = Proxy(fake.base_url, *flags)
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test-secret", max_retries=0)
    claude = anthropic.Anthropic(base_url=proxy.url, api_key="sk-test-secret", max_retries=0)
    try:
        for i in range(8):
            _one_of_each(fake, client, claude, i)
        stats = proxy.stats()
    finally:
        log = proxy.stop()
    expected = {
        "cut_mid_arguments": ("aborted", "stream_error"),
        "truncate": ("aborted", "truncated"),
        "refragment": ("completed", None),
    }
    injected = {e["call_id"]: e["fault"] for e in stats["injected"]}
    observed = {c.id: (c.outcome, c.reason) for c in toolcalls.calls}
    assert len(observed) == 24 and stats["tool_call_streams"] == 24
    assert {call: expected[fault] for call, fault in injected.items()} == {
        call: seen for call, seen in observed.items() if call in injected
    }
    assert {call for call, seen in observed.items() if seen[0] == "aborted"} == {
        call for call, fault in injected.items() if fault != "refragment"
    }
    by_reason = Counter(seen[1] for seen in observed.values() if seen[0] == "aborted")
    print("\n| fault injected | count | observed (outcome, reason) | count |\n|---|---|---|---|")
    for fault, (outcome, reason) in expected.items():
        seen_count = sum(1 for seen in observed.values() if seen == (outcome, reason))
        print(f"| {fault} | {stats['faults'].get(fault, 0)} | {outcome}, {reason} | {seen_count} |")
    assert by_reason == {
        "stream_error": stats["faults"]["cut_mid_arguments"],
        "truncated": stats["faults"]["truncate"],
    }
    assert min(by_reason.values()) > 0 and stats["faults"].get("refragment", 0) > 0
    refragmented = [c for c in toolcalls.calls if injected.get(c.id or "") == "refragment"]
    assert all(c.deltas > len(wire_chat.WEATHER.pieces()) for c in refragmented)  # smaller fragments
    lines = [line for line in log.splitlines() if line.startswith("chaos request=")]
    assert len(lines) == sum(stats["faults"].values())
    assert "sk-test-secret" not in log


def _raw_body(url: str, path: str, **request: Any) -> tuple[bytes, int]:
    with httpx.stream("POST", url + path, timeout=10, **request) as response:
        return b"".join(response.iter_raw()), response.status_code


def test_rate_zero_passes_bytes_and_requests_unchanged(fake: FakeProvider) -> None:
    script = wire_chat.tool_call_script([wire_chat.WEATHER])
    body = json.dumps({"model": "m", "stream": True, "note": "Zürich"}).encode()
    headers = {"Authorization": "Bearer sk-test-secret", "X-Custom": "1", "Content-Type": "application/json"}
    fake.enqueue(script, script)
    direct = _raw_body(fake.base_url, "/v1/chat/completions?api-version=1", content=body, headers=headers)
    proxy = Proxy(fake.base_url)
    try:
        proxied = _raw_body(proxy.url, "/v1/chat/completions?api-version=1", content=body, headers=headers)
    finally:
        proxy.stop()
    assert proxied == direct and direct[0] == b"".join(script.writes)
    first, second = fake.requests
    assert (second.method, second.path, second.body) == (first.method, first.path, first.body)
    assert {
        k: second.headers[k] for k in ("authorization", "x-custom", "content-type", "content-length")
    } == {k: first.headers[k] for k in ("authorization", "x-custom", "content-type", "content-length")}


def test_non_streamed_responses_pass_unchanged_with_faults_on(fake: FakeProvider) -> None:
    payload = json.dumps({"id": "chatcmpl-1", "choices": [{"message": {"tool_calls": [{"id": "call_1"}]}}]})
    fake.enqueue(Script([payload.encode()], content_type="application/json"))
    proxy = Proxy(fake.base_url, "--cut-mid-arguments", "1.0")
    try:
        assert _raw_body(proxy.url, "/v1/chat/completions", content=b"{}") == (payload.encode(), 200)
        stats = proxy.stats()
    finally:
        proxy.stop()
    assert stats["faults"] == {} and stats["streamed"] == 0


@pytest.mark.parametrize("flags", [(), ("--refragment", "--truncate", "0.5")], ids=["rate-0", "faults-on"])
def test_no_buffering_the_first_event_arrives_while_the_upstream_waits(
    fake: FakeProvider, flags: Any
) -> None:
    gate = threading.Event()
    events = wire_chat.events_for([wire_chat.WEATHER])
    writes = [b"".join(wire_chat.script_for(events[:1], done=False).writes)]
    writes += wire_chat.script_for(events[1:]).writes
    fake.enqueue(timed_script(writes, {1: gate}))  # the upstream sends one event, then waits
    proxy = Proxy(fake.base_url, *flags)
    try:
        with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", content=b"{}", timeout=20) as response:
            received = bytearray()
            chunks = response.iter_raw()
            while not received.endswith(b"\n\n"):
                received += next(chunks)  # a buffering proxy never gets here: the read times out
            assert bytes(received) == writes[0] and not gate.is_set()
            gate.set()
            for chunk in chunks:
                received += chunk
    finally:
        gate.set()
        proxy.stop()
    assert b"[DONE]" in received


def _big_stream(size: int) -> Script:
    piece = "Zürich " * 150  # ~1 KiB of text per event, as a long answer streams
    event = wire_chat.chunk(wire_chat.Event(content=piece))
    one = wire_chat.sse(event)
    return Script([one] * (size // len(one)) + [wire_chat.sse("[DONE]")])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the proxy's peak RSS from /proc")
@pytest.mark.parametrize("flags", [(), ("--refragment", "--truncate", "0.5")], ids=["rate-0", "faults-on"])
def test_a_10_mb_body_goes_through_in_bounded_memory(fake: FakeProvider, flags: Any) -> None:
    proxy = Proxy(fake.base_url, *flags)
    try:
        fake.enqueue(_big_stream(256 * 1024))  # warm-up: imports, buffers, the first connection
        assert _raw_body(proxy.url, "/v1/chat/completions", content=b"{}")[1] == 200
        before = proxy.peak_rss_kib()
        big = _big_stream(10 * 1024 * 1024)
        fake.enqueue(big)
        body, status = _raw_body(proxy.url, "/v1/chat/completions", content=b"{}")
        growth = proxy.peak_rss_kib() - before
    finally:
        proxy.stop()
    assert status == 200 and len(body) == sum(map(len, big.writes)) > 10_000_000
    print(f"peak RSS growth for a {len(body) / 1e6:.1f} MB body: {growth} KiB")
    assert growth < 3 * 1024, f"the proxy's peak RSS grew by {growth} KiB for a 10 MB body"
