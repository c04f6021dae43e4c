"""The agent: streams the calls of ``agent_calls`` from the fake provider, then enqueues each on the
Celery worker inside ``tool_call_context(call_id)``; the Celery instrumentation injects the global
propagator's headers into the message. Then tasks no call's context covers, one for a call never
streamed, and the hand-made headers. Run as ``opentelemetry-instrument python celery_agent.py``;
prints ``RESULT {json}`` last.
"""

from __future__ import annotations

import json
from typing import Any

from agent_calls import CALLS, MESSAGE_HEADERS, NEVER_STREAMED, WELL_FORMED, stream_calls
from celery_tasks import run_tool
from opentelemetry import trace

from otel_toolcalls import tool_call_context
from otel_toolcalls.testing import FakeProvider


def send(call_id: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    result = run_tool.apply_async(args=[call_id], headers=headers)
    return {"call_id": call_id, **result.get(timeout=60)}


def main() -> None:
    results: dict[str, Any] = {}
    tracer = trace.get_tracer("remote-agent")
    with FakeProvider() as fake, tracer.start_as_current_span("agent turn"):
        stream_calls(fake)
        for call in CALLS:
            assert call.id is not None
            with tool_call_context(call.id):
                results[call.id] = send(call.id)
        # The first call again, outside its context: nothing says which call this is.
        results["outside"] = send(CALLS[0].id or "")
        with tool_call_context(NEVER_STREAMED):
            results["never_streamed"] = send(NEVER_STREAMED)
        for label, (call_id, value) in MESSAGE_HEADERS.items():
            results[label] = send(call_id, {"toolcall": value})
        results["well_formed"] = send(WELL_FORMED[0], {"toolcall": WELL_FORMED[1][0]})
    print("RESULT " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
