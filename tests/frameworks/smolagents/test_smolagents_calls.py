"""The smolagents adapter's table of the calls an agent is executing (no smolagents needed): which
call an execution takes, and agents it cannot keep calls for (the agent loop: test_smolagents.py,
in the framework venvs)."""

from __future__ import annotations

import pytest

from otel_toolcalls._frameworks.smolagents import _Call, _Issued


class _Agent:
    pass


class _Slotted:
    __slots__ = ()  # no weak references


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]


def test_an_execution_takes_the_call_of_its_arguments_object_then_by_name() -> None:
    issued, agent, handed = _Issued(), _Agent(), {"location": "Basel"}
    issued.add(
        agent, [_Call("c1", "get_weather", {"location": "Zürich"}), _Call("c2", "get_weather", handed)]
    )
    issued.add(agent, [_Call("c3", "get_weather", {})])
    assert issued.take(agent, "get_weather", handed) == "c2"
    assert issued.take(agent, "get_weather", {}) == "c3"  # smolagents hands a new {} for empty ones
    assert issued.take(agent, "get_weather", {"location": "Bern"}) == "c1"  # none handed: by name
    assert issued.take(agent, "get_weather", handed) is None  # each call taken once
    assert issued.take(agent, "other", {}) is None


def test_dropped_calls_are_gone_and_others_stay() -> None:
    issued, agent = _Issued(), _Agent()
    mine, other = [_Call("c1", "a", {"x": 1})], [_Call("c2", "a", {"x": 2})]
    issued.add(agent, mine)
    issued.add(agent, other)
    issued.drop(agent, mine)
    assert issued.take(agent, "a", None) == "c2"
    issued.drop(agent, other)
    issued.drop(agent, other)  # twice, as a generator closed after it finished


@pytest.mark.parametrize("agent", [_Slotted(), _Unhashable()], ids=["no weakref", "unhashable"])
def test_an_agent_it_cannot_keep_is_given_no_ids_and_nothing_raises_later(agent: object) -> None:
    issued = _Issued()
    with pytest.raises(TypeError):  # _tracking logs it and runs the generator untouched
        issued.add(agent, [_Call("c1", "a", {})])
    assert issued.take(agent, "a", {}) is None
    issued.drop(agent, [])
