"""The agent: streams the calls of ``agent_calls`` from the fake provider, then hands each to the
tool service (``TOOL_SERVICE_URL``) with httpx inside ``tool_call_context(call_id)``; the httpx
instrumentation injects the global propagator's headers. Then requests no call's context covers,
one for a call never streamed, and the hand-made headers. Run as
``opentelemetry-instrument python http_agent.py``; prints ``RESULT {json}`` last.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
from agent_calls import BAD_HEADERS, CALLS, NEVER_STREAMED, WELL_FORMED, stream_calls
from opentelemetry import trace

from otel_toolcalls import tool_call_context
from otel_toolcalls.testing import FakeProvider


def send(
    client: httpx.Client, call_id: str | None, headers: list[tuple[str, str]] | None = None
) -> dict[str, Any]:
    response = client.post("/tools/get_weather", json={"call_id": call_id}, headers=headers)
    return {"call_id": call_id, "status": response.status_code, **response.json()}


def main() -> None:
    results: dict[str, Any] = {}
    tracer = trace.get_tracer("remote-agent")
    with (
        FakeProvider() as fake,
        httpx.Client(base_url=os.environ["TOOL_SERVICE_URL"], timeout=30) as client,
        tracer.start_as_current_span("agent turn"),
    ):
        stream_calls(fake)
        for call in CALLS:
            assert call.id is not None
            with tool_call_context(call.id):
                results[call.id] = send(client, call.id)
        # A service that takes the id from the request's call, not from the body.
        with tool_call_context(CALLS[1].id):
            results["adopted"] = send(client, None)
        # The first call again, outside its context: nothing says which call this is.
        results["outside"] = send(client, CALLS[0].id or "")
        with tool_call_context(NEVER_STREAMED):
            results["never_streamed"] = send(client, NEVER_STREAMED)
        for label, (call_id, values) in {**BAD_HEADERS, "well_formed": WELL_FORMED}.items():
            results[label] = send(client, call_id, [("toolcall", value) for value in values])
        results["provider_headers"] = [dict(r.headers) for r in fake.requests]
    print("RESULT " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
