"""What a test file of an agent loop looks like with the plugin (``pip install "otel-toolcalls[testing]"``).

    pytest examples/test_agent_loops.py              # careful loops pass; careless ones xfail
    pytest examples/test_agent_loops.py --runxfail   # see the careless loops fail, naming the call

Each test queues the model's replies (the first one broken by the fault), runs the loop against
the real SDK client, then asks the telemetry what the loop did with the broken call.
"""

from __future__ import annotations

from typing import Any

import langgraph_loops
import loops
import pytest

from otel_toolcalls.testing.kit import call, cut_mid_arguments, each_fault, truncate

# The plugin is opt-in: here, or once in a conftest.py.
pytest_plugins = ["otel_toolcalls.testing.pytest_plugin"]

each_api = pytest.mark.parametrize("kind", ["openai", "anthropic"])
careless = pytest.mark.xfail(strict=True, reason="the careless loop keeps and runs the broken call")


def queue(api: Any, fault: Any) -> Any:
    broken = api.reply(tool_calls=[call("get_weather", {"city": "Zürich", "days": 14})], fault=fault)
    api.reply(tool_calls=[call("get_weather", {"city": "Zürich"})])  # the retry completes
    api.reply(text="Sunny in Zürich.")
    return broken


@careless
@each_api
def test_careless_loop_executes_a_cut_call(toolcalls: Any, fake_llm: Any, kind: str) -> None:
    queue(getattr(fake_llm, kind), cut_mid_arguments(after=3))
    getattr(loops, f"careless_{kind}_agent")(getattr(fake_llm, kind).client, "Weather in Zürich?")
    toolcalls.assert_no_aborted_call_executed()


@careless
@each_api
def test_careless_loop_sends_the_broken_turn_back(toolcalls: Any, fake_llm: Any, kind: str) -> None:
    broken = queue(getattr(fake_llm, kind), cut_mid_arguments(after=3))
    getattr(loops, f"careless_{kind}_agent")(getattr(fake_llm, kind).client, "Weather in Zürich?")
    assert broken.call_ids[0] in fake_llm.sent[1].history_call_ids  # what the loop sent back
    toolcalls.assert_no_aborted_call_replayed()


@each_api
@each_fault
def test_careful_loop(toolcalls: Any, fake_llm: Any, fault: Any, kind: str) -> None:
    broken = queue(getattr(fake_llm, kind), fault)
    getattr(loops, f"careful_{kind}_agent")(getattr(fake_llm, kind).client, "Weather in Zürich?")
    toolcalls.assert_no_aborted_call_executed()
    toolcalls.assert_no_aborted_call_replayed()
    toolcalls.assert_all_completed_calls_linked()
    first = broken.call_ids[0]
    assert not fault.breaks or all(first not in sent.history_call_ids for sent in fake_llm.sent)
    expected = ("aborted", fault.reason) if fault.breaks else ("completed", None)
    assert (toolcalls.outcome(first), toolcalls.reason(first)) == expected
    if fault.kind == "cut_mid_arguments":
        assert toolcalls.call(first).deltas == fault.after  # cut after exactly that many fragments
    if fault.kind == "buffer":
        assert any(s.attributes.get("toolcall.stream.buffered") for s in toolcalls.inference_spans)


@careless
def test_stock_langgraph_agent_executes_a_truncated_call(toolcalls: Any, fake_llm: Any) -> None:
    queue(fake_llm.openai, truncate())
    graph = langgraph_loops.agent(fake_llm.openai.base_url, careful=False)
    graph.invoke({"messages": [("user", "Weather in Zürich?")]})
    toolcalls.assert_no_aborted_call_executed()


@each_fault
def test_careful_langgraph_agent(toolcalls: Any, fake_llm: Any, fault: Any) -> None:
    queue(fake_llm.openai, fault)
    graph = langgraph_loops.agent(fake_llm.openai.base_url, careful=True)
    graph.invoke({"messages": [("user", "Weather in Zürich?")]})
    toolcalls.assert_no_aborted_call_executed()
    toolcalls.assert_no_aborted_call_replayed()
    toolcalls.assert_all_completed_calls_linked()
