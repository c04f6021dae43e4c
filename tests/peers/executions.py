"""One process of the official-instrumentation lanes: a framework's agent loop (its model streams
from the fake provider through the openai SDK, its tools run) with the package and the official
OpenTelemetry GenAI instrumentations (``opentelemetry-instrumentation-genai-*``) instrumented as
``opentelemetry-instrument`` does it: each ``opentelemetry_instrumentor`` entry point loaded and its
instrumentor's ``instrument()`` called with no arguments, in the order the mode says.

    python tests/peers/executions.py FRAMEWORK MODE    # prints one JSON line

FRAMEWORK: langchain, llama-index, openai-agents, smolagents, agno (beside OpenInference's agno
instrumentation, ``openinference-instrumentation-agno``, loaded the same way). MODE: peer (theirs
alone), ours (the package alone), ours-first, peer-first; auto: run under
``opentelemetry-instrument``, which instrumented everything before this module ran (its span
processor is added to the provider it set).
``OTEL_TOOLCALLS_STRICT=true`` in the environment: strict mode.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing.openai_chat import ToolCall, events_for, script_for, tool_call_script

EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader()
WHOLE = ToolCall(name="get_weather", id="call_weather_1", arguments='{"location": "Zürich"}')
# The token limit ends the stream inside the string value: each framework still parses a call out
# of it and runs the tool (unless strict).
PARTIAL = ToolCall(name="get_weather", id="call_weather_2", arguments='{"location": "Zürich, Sch')
FINAL = ToolCall(name="final_answer", id="call_final_1", arguments='{"answer": "Sunny."}')
# Whole arguments, then the token limit: agno answers cut JSON with a decoding error and never runs
# it, so its truncated call is this one (run unless strict).
WHOLE_CUT = ToolCall(name="get_weather", id="call_weather_2", arguments='{"location": "Zürich"}')

# framework -> the official instrumentations opentelemetry-instrument loads beside it (entry point
# names): the framework's and the openai SDK's, which its model streams through.
THEIRS = {
    "langchain": ["langchain", "openai"],
    "llama-index": ["llama_index", "openai"],
    "openai-agents": ["openai_agents", "openai"],
    "smolagents": ["smolagents", "openai"],
    "agno": ["agno"],
}
OURS = "toolcalls"

# What each tool body saw: its argument, and the span current while it ran.
RAN: list[tuple[Any, int]] = []


def get_weather(location: str) -> str:
    """Current weather for a location."""
    RAN.append((location, trace.get_current_span().get_span_context().span_id))
    return "sunny"


def _instrument(names: list[str]) -> None:
    """As opentelemetry-instrument's distro does: load each entry point, instrument() it."""
    found = {ep.name: ep for ep in entry_points(group="opentelemetry_instrumentor")}
    for name in names:
        found[name].load()().instrument()


def set_up(framework: str, mode: str) -> None:
    if mode == "auto":
        trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(EXPORTER))  # type: ignore[attr-defined]
        return
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    if framework == "openai-agents":
        from agents import set_trace_processors

        # The SDK's own exporter (to OpenAI's backend) off; the official instrumentation adds its
        # processor, through which the agent's spans become OpenTelemetry spans.
        set_trace_processors([])
    theirs = THEIRS[framework]
    order = {"peer": theirs, "ours": [OURS], "ours-first": [OURS, *theirs], "peer-first": [*theirs, OURS]}
    _instrument(order[mode])


def _answer(framework: str) -> Any:
    if framework == "smolagents":  # a ToolCallingAgent answers through its final_answer tool
        return tool_call_script([FINAL])
    return script_for(events_for([], text="Sunny.", finish_reason="stop"))


def _turn(fake: FakeProvider, framework: str, reply: str) -> None:
    if reply == "whole":
        fake.enqueue(tool_call_script([WHOLE]), _answer(framework))
    elif reply == "whole-cut":
        fake.enqueue(tool_call_script([WHOLE_CUT], finish_reason="length"), _answer(framework))
    else:
        fake.enqueue(tool_call_script([PARTIAL], finish_reason="length"), _answer(framework))


# -- each framework's agent loop, as its documentation shows it ----------------------------------


def _langchain(fake: FakeProvider, asynchronous: bool) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    model = ChatOpenAI(
        model="gpt-4o-mini", streaming=True, base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0
    )
    # Tool errors reach the caller (a strict refusal among them), on every langgraph release.
    agent = create_react_agent(model, ToolNode([tool(get_weather)], handle_tool_errors=False))
    question = {"messages": [("user", "Weather in Zürich?")]}
    if asynchronous:
        return asyncio.run(agent.ainvoke(question))["messages"][-1].content
    return agent.invoke(question)["messages"][-1].content


def _llama_index(fake: FakeProvider, asynchronous: bool) -> Any:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI

    llm = OpenAI(model="gpt-4o-mini", api_base=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(get_weather)], llm=llm, streaming=True)

    async def run() -> Any:
        handler = agent.run(user_msg="Weather in Zürich?")
        async for _ in handler.stream_events():
            pass
        return str(await handler)

    return asyncio.run(run())


def _openai_agents(fake: FakeProvider, asynchronous: bool) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    model = OpenAIChatCompletionsModel("gpt-4o-mini", client)
    agent = Agent(name="weather", model=model, tools=[function_tool(get_weather)])

    async def run() -> Any:
        result = Runner.run_streamed(agent, "Weather in Zürich?")
        async for _ in result.stream_events():
            pass
        return result.final_output

    return asyncio.run(run())


# The errors smolagents recorded in the run's steps (a tool's error is the model's, not the caller's).
STEP_ERRORS: list[list[str]] = []


def _smolagents(fake: FakeProvider, asynchronous: bool) -> Any:
    from smolagents import OpenAIServerModel, Tool, ToolCallingAgent
    from smolagents.monitoring import LogLevel

    class Weather(Tool):
        name = "get_weather"
        description = "Current weather for a location."
        inputs = {"location": {"type": "string", "description": "The place to look up."}}
        output_type = "string"

        def forward(self, location: str) -> str:
            return get_weather(location)

    model = OpenAIServerModel(
        model_id="gpt-4o-mini",
        api_base=fake.base_url + "/v1",
        api_key="sk-fake",
        client_kwargs={"max_retries": 0},
    )
    agent = ToolCallingAgent(
        tools=[Weather()], model=model, stream_outputs=True, max_steps=3, verbosity_level=LogLevel.OFF
    )
    try:
        return agent.run("Weather in Zürich?")
    finally:
        steps = agent.memory.steps
        STEP_ERRORS.extend(_raised(s.error) for s in steps if getattr(s, "error", None) is not None)


def _agno(fake: FakeProvider, asynchronous: bool) -> Any:
    os.environ.setdefault("AGNO_TELEMETRY", "false")  # agno's own usage reports: no network here
    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    model = OpenAIChat(id="gpt-4o-mini", base_url=fake.base_url + "/v1", api_key="sk-fake", max_retries=0)
    agent = Agent(model=model, tools=[get_weather], telemetry=False)
    question = "Weather in Zürich?"

    async def events() -> list[Any]:
        return [e async for e in agent.arun(question, stream=True, stream_events=True)]

    seen = (
        asyncio.run(events()) if asynchronous else list(agent.run(question, stream=True, stream_events=True))
    )
    # agno hands a failed tool's error to the model, not the caller: the refusal read from its text.
    for event in seen:
        tool = getattr(event, "tool", None)
        if type(event).__name__ == "ToolCallCompletedEvent" and getattr(tool, "tool_call_error", False):
            refused = "refusing to execute tool call" in str(tool.result)
            STEP_ERRORS.append(["IncompleteToolCallError" if refused else "tool_error"])
    return "".join(str(e.content) for e in seen if type(e).__name__ == "RunContentEvent" and e.content)


LOOPS: dict[str, Callable[[FakeProvider, bool], Any]] = {
    "langchain": _langchain,
    "llama-index": _llama_index,
    "openai-agents": _openai_agents,
    "smolagents": _smolagents,
    "agno": _agno,
}
# name -> (the model's first reply, async); every framework's loop runs async inside (llama-index,
# openai-agents): only LangChain has both.
RUNS = {
    "langchain": {"whole": ("whole", False), "whole-async": ("whole", True), "truncated": ("partial", False)},
    "llama-index": {"whole": ("whole", True), "truncated": ("partial", True)},
    "openai-agents": {"whole": ("whole", True), "truncated": ("partial", True)},
    "smolagents": {"whole": ("whole", False), "truncated": ("partial", False)},
    "agno": {"whole": ("whole", False), "whole-async": ("whole", True), "truncated": ("whole-cut", False),
             "truncated-async": ("whole-cut", True)},
}


def span_record(span: Any) -> dict[str, Any]:
    return {
        "name": span.name,
        "kind": span.kind.name,
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
        "id": span.context.span_id,
        "parent": span.parent.span_id if span.parent is not None else None,
        "status": span.status.status_code.name,
        "attributes": {k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()},
        "links": [link.context.span_id for link in span.links],
    }


def _raised(exc: BaseException) -> list[str]:
    """The exception and its causes, by type name (frameworks wrap a tool's exception)."""
    names = []
    seen: BaseException | None = exc
    while seen is not None and len(names) < 5:
        names.append(type(seen).__name__)
        seen = seen.__cause__ or seen.__context__
    return names


def main(framework: str, mode: str) -> None:
    set_up(framework, mode)
    out = {}
    with FakeProvider() as fake:
        for name, (reply, asynchronous) in RUNS[framework].items():
            _turn(fake, framework, reply)
            EXPORTER.clear()
            RAN.clear()
            STEP_ERRORS.clear()
            try:
                result: Any = {"answer": LOOPS[framework](fake, asynchronous)}
            except Exception as exc:
                result = {"raised": _raised(exc)}
            fake.reset()
            spans = [span_record(s) for s in EXPORTER.get_finished_spans()]
            out[name] = {**result, "ran": RAN[:], "step_errors": STEP_ERRORS[:], "spans": spans}
    # A leading newline: a framework may leave its own output unterminated on stdout.
    strict = os.environ.get("OTEL_TOOLCALLS_STRICT", "")
    print("\n" + json.dumps({"runs": out, "strict": strict}, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:3])
