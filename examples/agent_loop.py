"""An agent loop done right, on OpenAI and Anthropic, exporting OTLP to the collector.

Each turn streams the model's answer and accumulates the tool-call fragments (concatenation only).
A call is executed through ``execute_tool`` only once its stream completed; strict mode refuses the
rest. A turn whose stream broke is rolled back, not persisted, and the request is retried: the next
request never carries a partial call (``toolcall.replayed_aborted`` stays at zero).

    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 python examples/agent_loop.py

Without that variable the spans go to the console. The model is the package's fake provider (no
API key): the first answer of each provider is cut mid-arguments, the retry completes.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anthropic
import openai
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from otel_toolcalls import IncompleteToolCallError, ToolCallsInstrumentor, execute_tool, tool_call_outcome
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import anthropic as fake_anthropic
from otel_toolcalls.testing import openai_chat as fake_openai

TOOLS = {"get_weather": lambda location, **_: f"sunny in {location}"}
ARGS = '{"location": "Zürich", "unit": "celsius"}'


def setup() -> None:
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "agent-loop-example")})
    tracer_provider = TracerProvider(resource=resource)
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        reader = PeriodicExportingMetricReader(OTLPMetricExporter())
    else:
        tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        reader = PeriodicExportingMetricReader(ConsoleMetricExporter(), export_interval_millis=60_000)
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))
    ToolCallsInstrumentor().instrument(strict=True)


def run_tool(call_id: str, name: str, arguments: str) -> str:
    """Parse once, validate, execute: only for a call the stream completed."""
    with execute_tool(call_id, name=name):
        return str(TOOLS[name](**json.loads(arguments)))


def openai_turn(client: openai.OpenAI, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """One streamed turn; the messages to append, or None when the turn must be rolled back."""
    calls: dict[int, dict[str, str]] = {}
    try:
        with client.chat.completions.create(
            model=fake_openai.MODEL, messages=messages, stream=True
        ) as stream:
            for chunk in stream:
                for choice in chunk.choices:
                    for tc in choice.delta.tool_calls or []:
                        call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = tc.id or call["id"]
                        call["name"] = (tc.function and tc.function.name) or call["name"]
                        call["arguments"] += (tc.function and tc.function.arguments) or ""
    except openai.APIConnectionError:
        return None  # the stream broke: nothing of this turn is kept
    if any(tool_call_outcome(c["id"]) != "completed" for c in calls.values()):
        return None
    assistant = {
        "role": "assistant",
        "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()
        ],
    }
    results = [
        {"role": "tool", "tool_call_id": c["id"], "content": run_tool(c["id"], c["name"], c["arguments"])}
        for c in calls.values()
    ]
    return [assistant, *results]


def anthropic_turn(
    client: anthropic.Anthropic, messages: list[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    try:
        with client.messages.stream(model=fake_anthropic.MODEL, max_tokens=256, messages=messages) as stream:
            message = stream.get_final_message()
    except (anthropic.APIConnectionError, anthropic.APIStatusError):
        return None
    if message.stop_reason == "max_tokens":
        return None
    results = []
    for block in message.content:
        if block.type == "tool_use":
            try:
                content = run_tool(block.id, block.name, json.dumps(block.input))
            except IncompleteToolCallError:
                return None
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": content})
    assistant = {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
    return [assistant, {"role": "user", "content": results}]


def agent(turn: Any, client: Any, attempts: int = 3) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Zürich?"}]
    for attempt in range(1, attempts + 1):
        added = turn(client, messages)
        if added is not None:
            messages.extend(added)
            print(f"turn completed on attempt {attempt}: {len(added)} messages kept")
            return messages
        print(f"attempt {attempt}: the stream broke mid-call; turn rolled back, retrying")
    raise RuntimeError("no complete turn")


def main() -> None:
    setup()
    with FakeProvider() as fake:
        call = fake_openai.ToolCall(name="get_weather", id="call_1", arguments=ARGS)
        fake.enqueue(
            fake_openai.tool_call_script([call], cut_after=4),  # cut mid-arguments
            fake_openai.tool_call_script(
                [fake_openai.ToolCall(name="get_weather", id="call_2", arguments=ARGS)]
            ),
        )
        agent(openai_turn, openai.OpenAI(base_url=f"{fake.base_url}/v1", api_key="x", max_retries=0))

        tool = fake_anthropic.ToolUse(name="get_weather", id="toolu_1", arguments=ARGS)
        fake.enqueue(
            fake_anthropic.tool_use_script([tool], stop_reason="max_tokens"),  # truncated by the limit
            fake_anthropic.tool_use_script(
                [fake_anthropic.ToolUse(name="get_weather", id="toolu_2", arguments=ARGS)]
            ),
        )
        agent(anthropic_turn, anthropic.Anthropic(base_url=fake.base_url, api_key="x", max_retries=0))
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.shutdown()


if __name__ == "__main__":
    main()
