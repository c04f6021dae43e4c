"""The pipeline's app: streamed turns through the real openai SDK from the fake provider, run under
``opentelemetry-instrument`` (the distro sets up the SDK and OTLP export; the package's
instrumentor comes in through its entry point).

Turns cycle through four kinds: two with two parallel calls that complete and are executed
("ok"); two of two requests each, whose first call completes and is executed and whose second is
cut by the server mid-arguments ("cut": aborted, stream_error) or stopped by the token limit
("length": aborted, truncated), which strict mode refuses. Each turn is a root span of its own, so a
trace is a turn. ``--rate`` turns a second for ``--turns`` turns or ``--seconds``. One JSON line a
call on stdout: trace id, call id, kind, the package's outcome and when the turn began and ended; last,
the number of turns and of spans the process ended (what it hands its exporter), for the test to
reconcile with what the pipeline counted and stored.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import openai
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, request, tool_call_script

KINDS = ("ok", "ok", "cut", "length")
WEATHER_ARGS = '{"location": "Zürich", "days": 3}'


def requests_for(kind: str, prefix: str) -> list[tuple[list[ToolCall], dict[str, Any]]]:
    """The turn's requests: each the calls its stream carries and how the stream ends."""
    weather = ToolCall(name="get_weather", id=f"{prefix}_w", arguments=WEATHER_ARGS)
    if kind == "ok":
        clock = ToolCall(name="get_time", id=f"{prefix}_t", arguments='{"timezone": "Europe/Zurich"}')
        return [([weather, clock], {})]
    second = ToolCall(name="get_weather", id=f"{prefix}_x", arguments='{"location": "Genève", "days": 5}')
    # The connection drops mid-arguments, or the token limit stops the call.
    end = {"cut_after": 3} if kind == "cut" else {"finish_reason": "length"}
    return [([weather], {}), ([second], end)]


def run_request(
    client: openai.OpenAI, fake: FakeProvider, calls: list[ToolCall], end: dict[str, Any]
) -> None:
    fake.enqueue(tool_call_script(calls, **end))
    try:
        for _ in client.chat.completions.create(**request()):
            pass
    except openai.APIConnectionError:
        pass


def turn(client: openai.OpenAI, fake: FakeProvider, *, kind: str, prefix: str) -> list[dict[str, Any]]:
    rows = []
    for calls, end in requests_for(kind, prefix):
        run_request(client, fake, calls, end)
        for call in calls:
            try:
                with execute_tool(call.id, name=call.name, strict=True):
                    executed = True
            except IncompleteToolCallError:
                executed = False
            outcome = tool_call_outcome(call.id)
            rows.append({"call_id": call.id, "kind": kind, "outcome": outcome, "executed": executed})
    return rows


class EndedSpans(SpanProcessor):
    def __init__(self) -> None:
        self.count = 0

    def on_end(self, span: ReadableSpan) -> None:
        self.count += 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="app")
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--turns", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=0.0)
    args = parser.parse_args()
    spans = EndedSpans()
    trace.get_tracer_provider().add_span_processor(spans)  # type: ignore[attr-defined]
    tracer = trace.get_tracer("otel_toolcalls.pipeline")
    start = time.monotonic()
    with FakeProvider() as fake:
        client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
        i = 0
        while (args.turns and i < args.turns) or (args.seconds and time.monotonic() - start < args.seconds):
            kind = KINDS[i % len(KINDS)]
            began_ns = time.time_ns()
            with tracer.start_as_current_span(f"turn {kind}") as root:
                rows = turn(client, fake, kind=kind, prefix=f"call_{args.name}_{i}")
            trace_id = format(root.get_span_context().trace_id, "032x")
            for row in rows:
                times = {"began_ns": began_ns, "ended_ns": time.time_ns()}
                print(json.dumps({"trace_id": trace_id, **times, **row}), flush=True)
            i += 1
            # Paced against the start, so a slow turn does not slow the rate down.
            time.sleep(max(0.0, start + i / args.rate - time.monotonic()))
    # The spans of the last turn have all ended: the root is the last.
    print(json.dumps({"done": i, "spans": spans.count}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
