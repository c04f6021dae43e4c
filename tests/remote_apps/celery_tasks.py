"""The tool worker: a Celery app (Redis broker and result backend from the environment) whose task
runs the call it is sent inside ``execute_tool(call_id)``, in the context the Celery
instrumentation extracted from the message. Run as
``opentelemetry-instrument celery -A celery_tasks worker``.

The task body appends the id (a JSON string) to the file named by ``TOOL_RAN_LOG`` (the side effect
the test reads); it returns what the worker saw: the ``toolcall`` header it received,
``tool_call_outcome``, its execution span's id, ran or refused.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from celery import Celery, Task

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome

# The package's debug log shows any exception it kept from the app (the test looks for none).
logging.getLogger("otel_toolcalls").setLevel(logging.DEBUG)
app = Celery("remote_tools", broker=os.environ["CELERY_BROKER_URL"], backend=os.environ["CELERY_BROKER_URL"])


def get_weather(call_id: str) -> dict[str, int]:
    with open(os.environ["TOOL_RAN_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(call_id) + "\n")
    return {"temperature_c": 21}


@app.task(bind=True, name="tools.get_weather")
def run_tool(self: Task, call_id: str) -> dict[str, Any]:
    header = getattr(self.request, "toolcall", None)
    seen: dict[str, Any] = {"toolcall": header, "outcome": tool_call_outcome(call_id)}
    try:
        with execute_tool(call_id, name="get_weather") as span:
            seen["span_id"] = format(span.get_span_context().span_id, "016x")
            seen["result"] = get_weather(call_id)
    except IncompleteToolCallError:
        seen["refused"] = True
    return seen
