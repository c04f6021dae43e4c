"""``otel-toolcalls chaos`` as a real process between the real SDKs and the fake provider: the
faults it injects are the aborted calls the package sees, one for one; rate 0 passes bytes
unchanged; nothing is buffered; a 10 MB body goes through in bounded memory."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
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
from otel_toolcalls.testing import bedrock as wire_bedrock
from otel_toolcalls.testing import openai_chat as wire_chat
from otel_toolcalls.testing import openai_responses as wire_responses
from otel_toolcalls.testing.scenario import timed_script


class Proxy:
    def __init__(self, upstream: str, *flags: str, env: dict[str, str] | None = None) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "otel_toolcalls", "chaos", "--listen", f"127.0.0.1:{self.port}"]
        # A file, not a pipe: a pipe nobody reads fills up and blocks the proxy's logging.
        self.log_file = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives as long as the proxy
        self.process = subprocess.Popen(
            [*command, "--upstream", upstream, *flags],
            stderr=self.log_file,
            env={**os.environ, **(env or {})},
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

    def log(self) -> str:
        self.log_file.seek(0)
        return self.log_file.read()

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        log = self.log()
        self.log_file.close()
        return log


FAULTS = ("--cut-mid-arguments", "0.4", "--truncate", "0.3", "--refragment", "--seed", "7")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def plain(upstream: FakeProvider) -> Iterator[Proxy]:
    """Every rate 0: what a stream must look like when nothing is injected."""
    proxy = Proxy(upstream.base_url)
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def faulty(upstream: FakeProvider) -> Iterator[Proxy]:
    proxy = Proxy(upstream.base_url, *FAULTS)
    yield proxy
    proxy.stop()


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


def _one_of_each(fake: FakeProvider, client: Any, claude: Any, bedrock: Any, i: int) -> None:
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
    fake.enqueue(wire_bedrock.tool_use_script([wire_bedrock.ToolUse("get_weather", args, id=f"tooluse_{i}")]))
    _drain(lambda: [None for _ in bedrock.converse_stream(modelId="m", messages=[])["stream"]])


def test_injected_faults_are_the_aborted_calls_one_for_one(
    toolcalls: Any, fake: FakeProvider, faulty: Proxy
) -> None:
    import anthropic
    import openai

    client = openai.OpenAI(base_url=f"{faulty.url}/v1", api_key="sk-test-secret", max_retries=0)
    claude = anthropic.Anthropic(base_url=faulty.url, api_key="sk-test-secret", max_retries=0)
    from otel_toolcalls.testing import bedrock as bedrock_wire

    bedrock = bedrock_wire.client(faulty.url, aws_secret_access_key="sk-test-secret")
    before = faulty.stats()
    for i in range(8):
        _one_of_each(fake, client, claude, bedrock, i)
    after = faulty.stats()
    stats = {
        "injected": after["injected"][len(before["injected"]) :],
        "tool_call_streams": after["tool_call_streams"] - before["tool_call_streams"],
    }
    stats["faults"] = dict(Counter(e["fault"] for e in stats["injected"]))
    log = faulty.log()
    expected = {
        "cut_mid_arguments": ("aborted", "stream_error"),
        "truncate": ("aborted", "truncated"),
        "refragment": ("completed", None),
    }
    injected = {e["call_id"]: e["fault"] for e in stats["injected"]}
    observed = {c.id: (c.outcome, c.reason) for c in toolcalls.calls}
    assert len(observed) == 32 and stats["tool_call_streams"] == 32
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
    lines = {line for line in log.splitlines() if line.startswith("chaos request=")}
    assert {
        f"chaos request={e['request']} call={e['call_id']} fault={e['fault']}" for e in stats["injected"]
    } <= lines
    assert "sk-test-secret" not in log


def _raw_body(url: str, path: str, **request: Any) -> tuple[bytes, int]:
    with httpx.stream("POST", url + path, timeout=10, **request) as response:
        return b"".join(response.iter_raw()), response.status_code


def test_rate_zero_passes_bytes_and_requests_unchanged(fake: FakeProvider, plain: Proxy) -> None:
    script = wire_chat.tool_call_script([wire_chat.WEATHER])
    body = json.dumps({"model": "m", "stream": True, "note": "Zürich"}).encode()
    headers = {"Authorization": "Bearer sk-test-secret", "X-Custom": "1", "Content-Type": "application/json"}
    fake.enqueue(script, script)
    direct = _raw_body(fake.base_url, "/v1/chat/completions?api-version=1", content=body, headers=headers)
    proxied = _raw_body(plain.url, "/v1/chat/completions?api-version=1", content=body, headers=headers)
    assert proxied == direct and direct[0] == b"".join(script.writes)
    first, second = fake.requests
    assert (second.method, second.path, second.body) == (first.method, first.path, first.body)
    names = ("authorization", "x-custom", "content-type", "content-length")
    assert {k: second.headers[k] for k in names} == {k: first.headers[k] for k in names}
    assert "sk-test-secret" not in plain.log()


def test_non_streamed_responses_pass_unchanged_with_faults_on(fake: FakeProvider, faulty: Proxy) -> None:
    payload = json.dumps({"id": "chatcmpl-1", "choices": [{"message": {"tool_calls": [{"id": "call_1"}]}}]})
    fake.enqueue(Script([payload.encode()], content_type="application/json"))
    before = faulty.stats()
    assert _raw_body(faulty.url, "/v1/chat/completions", content=b"{}") == (payload.encode(), 200)
    after = faulty.stats()
    assert after["injected"] == before["injected"] and after["streamed"] == before["streamed"]


def _text_stream(count: int, text: str) -> list[bytes]:
    """A streamed answer without tool calls: parsed event by event when faults are on, no draw made."""
    event = wire_chat.sse(wire_chat.chunk(wire_chat.Event(content=text)))
    return [event] * count + [
        wire_chat.sse(wire_chat.chunk(wire_chat.Event(finish_reason="stop"))),
        wire_chat.sse("[DONE]"),
    ]


@pytest.mark.parametrize("which", ["plain", "faulty"])
def test_no_buffering_the_first_event_arrives_while_the_upstream_waits(
    fake: FakeProvider, which: str, request: pytest.FixtureRequest
) -> None:
    proxy: Proxy = request.getfixturevalue(which)
    gate = threading.Event()
    writes = _text_stream(5, "Zürich")
    fake.enqueue(timed_script(writes, {1: gate}))  # the upstream sends one event, then waits
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
    assert bytes(received) == b"".join(writes)


def _big_stream(size: int) -> Script:
    one = _text_stream(1, "Zürich " * 150)[0]  # ~1 KiB of text per event, as a long answer streams
    return Script(_text_stream(size // len(one), "Zürich " * 150))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the proxy's peak RSS from /proc")
@pytest.mark.parametrize("which", ["plain", "faulty"])
def test_a_10_mb_body_goes_through_in_bounded_memory(
    fake: FakeProvider, which: str, request: pytest.FixtureRequest
) -> None:
    proxy: Proxy = request.getfixturevalue(which)
    fake.enqueue(_big_stream(256 * 1024))  # warm-up: buffers, the first connection
    assert _raw_body(proxy.url, "/v1/chat/completions", content=b"{}")[1] == 200
    before = proxy.peak_rss_kib()
    big = _big_stream(10 * 1024 * 1024)
    fake.enqueue(big)
    body, status = _raw_body(proxy.url, "/v1/chat/completions", content=b"{}")
    growth = proxy.peak_rss_kib() - before
    assert status == 200 and body == b"".join(big.writes) and len(body) > 10_000_000
    print(f"peak RSS growth for a {len(body) / 1e6:.1f} MB body: {growth} KiB")
    assert growth < 3 * 1024, f"the proxy's peak RSS grew by {growth} KiB for a 10 MB body"


def test_buffer_holds_every_stream_and_the_package_sees_it_buffered(
    toolcalls: Any, fake: FakeProvider
) -> None:
    import openai

    proxy = Proxy(fake.base_url, "--buffer", "1.0", "--buffer-hold", "0.3")
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x", max_retries=0)
    try:
        for i in range(2):
            fake.enqueue(
                wire_chat.tool_call_script(
                    [wire_chat.ToolCall("get_weather", wire_chat.WEATHER.arguments, id=f"call_b{i}")]
                )
            )
            fake.enqueue(wire_chat.raw_script([wire_chat.chunk(wire_chat.Event(content="x"))] * 10))
            for _ in client.chat.completions.create(model="m", messages=[], stream=True):
                pass
            for _ in client.chat.completions.create(model="m", messages=[], stream=True):
                pass
        stats = proxy.stats()
    finally:
        log = proxy.stop()
    assert stats["faults"] == {"buffer": 4}
    summary = next(line for line in log.splitlines() if line.startswith("chaos summary:"))
    assert json.loads(summary.split(":", 1)[1])["faults"] == {"buffer": 4}  # the summary at exit
    assert [e["call_id"] for e in stats["injected"]] == ["call_b0", "-", "call_b1", "-"]
    buffered = [s for s in toolcalls.inference_spans if s.attributes.get("toolcall.stream.buffered")]
    assert len(buffered) == 4 and all(c.outcome == "completed" for c in toolcalls.calls)


def test_an_upstream_cut_reaches_the_client_as_a_cut(
    toolcalls: Any, fake: FakeProvider, plain: Proxy
) -> None:
    import openai

    client = openai.OpenAI(base_url=f"{plain.url}/v1", api_key="x", max_retries=0)
    fake.enqueue(wire_chat.tool_call_script([wire_chat.WEATHER], cut_after=4))
    with pytest.raises(openai.APIConnectionError):
        for _ in client.chat.completions.create(model="m", messages=[], stream=True):
            pass
    assert (toolcalls.outcome(wire_chat.WEATHER.id or ""), toolcalls.reason(wire_chat.WEATHER.id or "")) == (
        "aborted",
        "stream_error",
    )


def test_a_client_leaving_early_and_an_unreachable_upstream(fake: FakeProvider, plain: Proxy) -> None:
    gate = threading.Event()
    fake.enqueue(timed_script(_text_stream(5, "x"), {1: gate}))
    with httpx.stream("POST", f"{plain.url}/v1/chat/completions", content=b"{}", timeout=20) as response:
        next(response.iter_raw())  # one event, then the client leaves while the upstream waits
    gate.set()
    fake.enqueue(Script([b"{}"], content_type="application/json"))
    assert _raw_body(plain.url, "/v1/chat/completions", content=b"{}") == (b"{}", 200)  # still serving
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    nowhere = Proxy(f"http://127.0.0.1:{closed_port}")
    try:
        body, status = _raw_body(nowhere.url, "/v1/chat/completions", content=b"{}")
    finally:
        log = nowhere.stop()
    assert status == 502 and json.loads(body)["error"]["type"] == "chaos_upstream_error"
    assert "Traceback" not in plain.log() + log


def _feed(flags: Any, writes: list[bytes], *, crlf: bool = False, framing: str = "sse") -> tuple[bytes, Any]:
    """The injector alone, in process: the upstream's writes in, what the client gets out."""
    from otel_toolcalls.testing.chaos import Chaos, Injector, Rates

    chaos = Chaos(upstream="http://upstream.invalid", rates=Rates(**flags), seed=1)
    injector = Injector(chaos, "r1", framing)
    data = b"".join(writes)
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    out = [piece for i in range(0, len(data), 7) for piece in injector.feed(data[i : i + 7])]  # 7-byte reads
    return b"".join(out + injector.finish()), (injector.ended, chaos.stats)


def _events(body: bytes) -> list[Any]:
    from otel_toolcalls.testing.chaos import parse_event

    return [parse_event(raw + b"\n\n").data for raw in body.replace(b"\r\n", b"\n").split(b"\n\n") if raw]


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_the_injector_in_each_wire_format(crlf: bool) -> None:
    from otel_toolcalls.testing.chaos import fragment, pieces_of

    args = wire_chat.WEATHER.arguments
    streams = {
        "chat": wire_chat.tool_call_script([wire_chat.ToolCall("f", args, fragments=[args])]).writes,
        "responses": wire_responses.tool_call_script(
            [wire_responses.ToolCall("f", args, fragments=[args])]
        ).writes,
        "anthropic": wire_anthropic.tool_use_script(
            [wire_anthropic.ToolUse("f", args, fragments=[args])]
        ).writes,
    }
    for name, writes in streams.items():
        body, (ended, stats) = _feed({"refragment": True}, writes, crlf=crlf)
        pieces = [f for f in map(fragment, _events(body)) if f]
        assert "".join(pieces) == args and len(pieces) > 5, name  # one fragment became many
        assert ended is None and stats.faults == {"refragment": 1}
        head = pieces_of(args)[0]  # cut inside the first fragment, at its first awkward point
        body, (ended, stats) = _feed({"truncate": 1.0}, writes, crlf=crlf)
        events = _events(body)
        assert ended == "end" and "".join(f for f in map(fragment, events) if f) == head, name
        assert any(
            stop in json.dumps(events[-3:]) for stop in ('"length"', "max_tokens", "max_output_tokens")
        )
        body, (ended, _) = _feed({"cut_mid_arguments": 1.0}, writes, crlf=crlf)
        assert ended == "cut" and [f for f in map(fragment, _events(body)) if f] == [head], name
        assert _feed({}, writes, crlf=crlf)[0] == b"".join(writes).replace(b"\n", b"\r\n" if crlf else b"\n")


def _frames(body: bytes) -> list[Any]:
    from otel_toolcalls.testing.chaos import frame_end, parse_frame

    rest, events = bytearray(body), []
    while (end := frame_end(rest)) > 0:
        events.append(parse_frame(bytes(rest[:end])).data)
        del rest[:end]
    assert not rest  # every byte out is part of a whole, valid-length frame
    return events


def test_the_injector_in_bedrock_event_stream_frames() -> None:
    from otel_toolcalls.testing.chaos import fragment, pieces_of

    args = wire_bedrock.WEATHER.input
    writes = wire_bedrock.tool_use_script([wire_bedrock.ToolUse("f", args, fragments=[args])]).writes
    body, (ended, stats) = _feed({"refragment": True}, writes, framing="eventstream")
    pieces = [f for f in map(fragment, _frames(body)) if f]
    assert "".join(pieces) == args and len(pieces) > 5 and stats.faults == {"refragment": 1}
    head = pieces_of(args)[0]
    body, (ended, _) = _feed({"truncate": 1.0}, writes, framing="eventstream")
    events = _frames(body)
    assert ended == "end" and [f for f in map(fragment, events) if f] == [head]
    assert events[-1] == {"messageStop": {"stopReason": "max_tokens"}}
    body, (ended, _) = _feed({"cut_mid_arguments": 1.0}, writes, framing="eventstream")
    assert ended == "cut" and [f for f in map(fragment, _frames(body)) if f] == [head]
    assert _feed({}, writes, framing="eventstream")[0] == b"".join(writes)


class _SSEHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"".join(wire_chat.tool_call_script([wire_chat.WEATHER]).writes)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # quiet: the test reads the proxy's log, not this one
        return


@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes its certificate with the openssl CLI")
def test_tls_to_the_upstream_is_verified_as_usual(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SSEHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"https://127.0.0.1:{server.server_address[1]}"
    try:
        untrusted = Proxy(upstream, "--refragment")  # the system's CAs: this certificate is refused
        try:
            assert _raw_body(untrusted.url, "/v1/chat/completions", content=b"{}")[1] == 502
        finally:
            untrusted.stop()
        trusted = Proxy(upstream, "--refragment", env={"SSL_CERT_FILE": str(cert)})
        try:
            body, status = _raw_body(trusted.url, "/v1/chat/completions", content=b"{}")
            stats = trusted.stats()
        finally:
            trusted.stop()
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200 and b"[DONE]" in body and stats["faults"] == {"refragment": 1}
