"""The ``toolcalls`` propagator's cost per call, beside W3C tracecontext's, in one run.

    python benchmarks/propagator.py            # ~20 s; prints a table (microseconds per operation)

Each row times the operation a transport instrumentation runs per request: ``inject`` inside a
call's context (the sender), ``extract`` of the header (the receiver), and ``execute_tool``'s
lookup of the carried call; tracecontext's inject and extract on the same carrier are the yardstick.
Medians of 7 repeats of 20,000 operations each; header sizes are exact.
"""

from __future__ import annotations

import statistics
import timeit
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otel_toolcalls import ToolCallsInstrumentor, ToolCallsPropagator, tool_call_context, tool_call_outcome
from otel_toolcalls._core.state import RequestInfo, StreamState
from otel_toolcalls._core.telemetry import active
from otel_toolcalls._linking.carried import HEADER

NUMBER = 20_000
REPEATS = 7


def _stream(call_id: str) -> None:
    telemetry = active()
    assert telemetry is not None
    state = StreamState(telemetry, RequestInfo(provider="openai", model="m"))
    state.block_started(0, name="get_weather", call_id=call_id)
    state.fragment(0, "{}")
    state.settle("tool_calls", completes_open=True)
    state.final_event()
    state.ended()


def _us(function: Any) -> float:
    runs = timeit.repeat(function, number=NUMBER, repeat=REPEATS)
    return statistics.median(runs) / NUMBER * 1e6


def main() -> None:
    provider = TracerProvider()
    ToolCallsInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("bench")
    typical, longest = "call_Qx81sW0mA3bYtHc9LzPd2KfE", "call_" + "x" * 251
    for call_id in (typical, longest):
        _stream(call_id)
    ours, w3c = ToolCallsPropagator(), TraceContextTextMapPropagator()
    rows: list[tuple[str, float]] = []
    with tracer.start_as_current_span("agent turn"), tool_call_context(typical):
        carrier: dict[str, str] = {}
        ours.inject(carrier)
        w3c.inject(carrier)
        rows.append(("toolcalls inject, in a call's context", _us(lambda: ours.inject({}))))
        rows.append(("tracecontext inject", _us(lambda: w3c.inject({}))))
    rows.append(("toolcalls inject, outside any call", _us(lambda: ours.inject({}))))
    rows.append(("toolcalls extract", _us(lambda: ours.extract(carrier))))
    rows.append(("tracecontext extract", _us(lambda: w3c.extract(carrier))))
    rows.append(("toolcalls extract, no header", _us(lambda: ours.extract({}))))
    token = otel_context.attach(ours.extract(carrier))
    try:
        rows.append(("carried lookup (tool_call_outcome, unseen id)", _us(lambda: tool_call_outcome("nope"))))
    finally:
        otel_context.detach(token)
    with tool_call_context(longest):
        long_carrier: dict[str, str] = {}
        ours.inject(long_carrier)
    print(f"header: {len(carrier[HEADER])} bytes for a {len(typical)}-character id "
          f"({len(long_carrier[HEADER])} bytes for a 256-character one)")
    print(f"{'operation':<48} {'us/op':>8}")
    for name, value in rows:
        print(f"{name:<48} {value:>8.2f}")


if __name__ == "__main__":
    main()
