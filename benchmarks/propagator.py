"""What the ``toolcalls`` propagator costs per call: inject and extract on a dict carrier, and the
header's size, for a typical call id and a 256-character one.

    python benchmarks/propagator.py

The calls are streamed through the openai SDK from the fake provider (the registry holds them as
an application's would). Each figure is the best of 7 timeit repeats, per operation, in
microseconds; "outside a call" is what every other request of an instrumented process pays.
"""

from __future__ import annotations

import timeit

import openai
from opentelemetry.propagate import get_global_textmap
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace import TracerProvider

from otel_toolcalls import ToolCallsInstrumentor, ToolCallsPropagator, tool_call_context
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, request, tool_call_script

TYPICAL = "call_Qx81vK2mZp7LcR4tYb9NwE3s"  # OpenAI's form: call_ and 24 characters
LONG = "c" * 256
NUMBER = 20_000


def stream(*ids: str) -> None:
    calls = [ToolCall("get_weather", '{"city": "Zürich"}', id=call_id) for call_id in ids]
    with FakeProvider() as fake:
        fake.enqueue(tool_call_script(calls))
        client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
        for _ in client.chat.completions.create(**request()):
            pass


def best_us(statement: object) -> float:
    return min(timeit.repeat(statement, number=NUMBER, repeat=7)) / NUMBER * 1e6  # type: ignore[arg-type]


def main() -> None:
    tracer_provider = TracerProvider()
    ToolCallsInstrumentor().instrument(tracer_provider=tracer_provider)
    stream(TYPICAL, LONG)
    ours = ToolCallsPropagator()
    w3c = get_global_textmap()  # tracecontext,baggage: the default
    both = CompositePropagator([w3c, ours])
    for call_id, label in ((TYPICAL, "typical id"), (LONG, "256-char id")):
        carrier: dict[str, str] = {}
        with tool_call_context(call_id):
            ours.inject(carrier)
        print(f"header {label}: {len(carrier['toolcall'].encode())} bytes ({carrier['toolcall'][:60]}...)")
    rows = {}
    for call_id in (TYPICAL, LONG):
        carrier = {}
        with tool_call_context(call_id):
            ours.inject(carrier)
            rows.setdefault("inject, inside a call", []).append(best_us(lambda: ours.inject({})))
        rows.setdefault("extract, header present", []).append(best_us(lambda c=carrier: ours.extract(c)))
    rows["inject, outside a call"] = [best_us(lambda: ours.inject({}))] * 2
    rows["extract, no header"] = [best_us(lambda: ours.extract({}))] * 2
    # For scale: the default propagators with a span current, alone and with toolcalls in a call.
    with tracer_provider.get_tracer("bench").start_as_current_span("turn"):
        rows["tracecontext,baggage inject (ref.)"] = [best_us(lambda: w3c.inject({}))] * 2
        for call_id in (TYPICAL, LONG):
            with tool_call_context(call_id):
                row = rows.setdefault("...,toolcalls inject, in a call", [])
                row.append(best_us(lambda: both.inject({})))
    print(f"{'':38}{'typical id':>12}{'256-char id':>13}")
    for name, (typical, long) in rows.items():
        print(f"{name:38}{typical:10.2f}us{long:11.2f}us")


if __name__ == "__main__":
    main()
