"""The package's own failures on the execution side are counted as the stream side's are.

A span processor that raises in ``on_start`` or ``on_end`` reaches the package (the SDK's
multi-span processor does not catch), under every way a tool runs: the ``execute_tool`` context
manager, its decorator, the framework adapters' runner, and a tool service running a call that
the ``toolcalls`` propagator carried. Each time the tool's body runs exactly once, the host gets
the body's own result or exception, and ``toolcall.internal_errors`` counts 1 at the step's site.
The LangChain agent's path through the runner: tests/frameworks/langchain/test_frameworks_langchain.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from internal_errors import RaisingProcessor, internal_errors
from test_execute_tool import stream_call
from test_propagator import received, sent

from otel_toolcalls import execute_tool
from otel_toolcalls._core import names as n
from otel_toolcalls._core.telemetry import active
from otel_toolcalls._linking.runner import Execution, run, run_async

# The step that meets the raise: starting the execution span, or ending it.
SITES = {"on_start": "_linking.execute.start_span", "on_end": "_linking.execute.end_span"}
CALL_ID = "call_exec_1"
RESULT = object()


class ToolBug(Exception):
    """The tool's own failure: the host's, never an internal error."""


@pytest.fixture(params=sorted(SITES))
def where(request: pytest.FixtureRequest, telemetry: Any, instrument: Any) -> str:
    # Execution spans only: a tool_call span's failure is the stream side's, counted there.
    telemetry.tracer_provider.add_span_processor(RaisingProcessor(request.param, prefix="execute_tool "))
    return str(request.param)


class Tool:
    """The tool's body: counts its runs, then returns ``RESULT`` or raises its own ``ToolBug``."""

    def __init__(self, ends: str) -> None:
        self.ends, self.runs = ends, 0
        self.bug = ToolBug("the tool's own failure")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        if self.ends == "raises":
            raise self.bug
        return RESULT

    async def run_async(self, *args: Any, **kwargs: Any) -> Any:
        return self(*args, **kwargs)

    def expected(self) -> Any:
        return self.bug if self.ends == "raises" else RESULT


def as_host(run_tool: Callable[[], Any]) -> Any:
    """What the host gets: the result, or the exception raised at it."""
    try:
        return run_tool()
    except ToolBug as exc:
        return exc


async def as_host_async(run_tool: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await run_tool()
    except ToolBug as exc:
        return exc


def _with(tool: Tool) -> Any:
    with execute_tool(CALL_ID, name="get_weather"):
        return tool()


async def _async_with(tool: Tool) -> Any:
    async with execute_tool(CALL_ID, name="get_weather"):
        return await tool.run_async()


SYNC_FORMS: dict[str, Callable[[Tool], Any]] = {
    "context manager": _with,
    "decorator": lambda tool: execute_tool(name="get_weather")(tool)(tool_call_id=CALL_ID),
    "runner": lambda tool: run(Execution(CALL_ID, "get_weather", active()), tool, (), {}),
}
ASYNC_FORMS: dict[str, Callable[[Tool], Awaitable[Any]]] = {
    "context manager": _async_with,
    "decorator": lambda tool: execute_tool(name="get_weather")(tool.run_async)(tool_call_id=CALL_ID),
    "runner": lambda tool: run_async(Execution(CALL_ID, "get_weather", active()), tool.run_async, (), {}),
}


def assert_counted_once(telemetry: Any, where: str, tool: Tool, got: Any) -> None:
    assert tool.runs == 1
    assert got is tool.expected()
    assert internal_errors(telemetry) == {(SITES[where], "RuntimeError"): 1}
    # The execution is still measured, with the tool's own error.
    (duration,) = telemetry.points(n.METRIC_EXECUTE_TOOL_DURATION)
    assert duration.count == 1
    bug_type = f"{ToolBug.__module__}.{ToolBug.__qualname__}"
    assert duration.attributes.get(n.ERROR_TYPE) == (bug_type if tool.ends == "raises" else None)


@pytest.mark.parametrize("ends", ["returns", "raises"])
@pytest.mark.parametrize("form", sorted(SYNC_FORMS))
def test_sync_execution(telemetry: Any, where: str, form: str, ends: str) -> None:
    stream_call(CALL_ID, reason=None)
    tool = Tool(ends)
    got = as_host(lambda: SYNC_FORMS[form](tool))
    assert_counted_once(telemetry, where, tool, got)


@pytest.mark.parametrize("ends", ["returns", "raises"])
@pytest.mark.parametrize("form", sorted(ASYNC_FORMS))
async def test_async_execution(telemetry: Any, where: str, form: str, ends: str) -> None:
    stream_call(CALL_ID, reason=None)
    tool = Tool(ends)
    got = await as_host_async(lambda: ASYNC_FORMS[form](tool))
    assert_counted_once(telemetry, where, tool, got)


@pytest.mark.parametrize("ends", ["returns", "raises"])
def test_a_tool_service_running_a_carried_call(telemetry: Any, where: str, ends: str) -> None:
    # This process never saw the call: the header brings it, as a server instrumentation extracts it.
    carrier, _ = sent(CALL_ID, reason=None)
    tool = Tool(ends)

    def service() -> Any:
        with received(carrier), execute_tool(name="get_weather", strict=True):
            return tool()

    got = as_host(service)
    assert_counted_once(telemetry, where, tool, got)
    if where == "on_end":  # the span still ended and was exported, linked to the carried call
        (run_span,) = [s for s in telemetry.spans() if s.name == "execute_tool get_weather"]
        assert run_span.attributes[n.TOOLCALL_OUTCOME] == "completed" and len(run_span.links) == 1


def test_an_error_reader_that_raises_is_counted_and_the_result_passed_on(
    telemetry: Any, instrument: Any
) -> None:
    # The adapter's reader of a framework's error result is the package's code: its failure is
    # counted, the tool's result still reaches the framework.
    def unreadable(result: Any) -> str:
        raise LookupError("a result shape the adapter does not know")

    tool = Tool("returns")
    got = run(Execution(CALL_ID, "get_weather", active()), tool, (), {}, unreadable)
    assert got is RESULT and tool.runs == 1
    assert internal_errors(telemetry) == {("_linking.runner.Execution.returned", "LookupError"): 1}
