"""Per-call cost of carrying a call over MCP _meta: inject on the client, extract on the server.

.venv/bin/python benchmarks/mcp_meta.py
"""

import timeit

from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanContext
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otel_toolcalls import ToolCallsPropagator, tool_call_context
from otel_toolcalls._core.registry import CallRecord
from otel_toolcalls._core.telemetry import REGISTRY
from otel_toolcalls._frameworks.mcp import meta as _mcp_meta

tracer = TracerProvider().get_tracer("bench")
cid = "call_" + "Qx81Zp" * 4
SPAN = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, is_remote=False)
REGISTRY.put(cid, CallRecord("completed", None, "get_weather", "function", SPAN))
N = 20000


def per_call(fn):
    best = min(timeit.repeat(fn, number=N, repeat=5))
    return best / N * 1e6


def measure(textmap):
    propagate.set_global_textmap(textmap)
    with tracer.start_as_current_span("execute_tool get_weather"), tool_call_context(cid):
        carrier = {}
        propagate.inject(carrier)
        inject = per_call(lambda: propagate.inject({}))
    meta = dict(carrier, progressToken=1)

    def extract():
        token = otel_context.attach(_mcp_meta.extracted(meta))
        otel_context.detach(token)

    return inject, per_call(extract), carrier


base = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
ours = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator(), ToolCallsPropagator()])
bi, be, _ = measure(base)
oi, oe, carrier = measure(ours)
print(f"header: {len(carrier['toolcall'])} bytes ({carrier['toolcall']})")
print(f"tracecontext,baggage:           inject {bi:.2f} us  extract(_meta) {be:.2f} us")
print(f"tracecontext,baggage,toolcalls: inject {oi:.2f} us  extract(_meta) {oe:.2f} us")
print(f"toolcalls adds: inject {oi - bi:.2f} us, extract {oe - be:.2f} us per call")
