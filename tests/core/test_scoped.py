"""``Scoped``: a context variable set for a ``with`` block and restored after it, whatever ended
the block; the request in flight (``Request.entered``) and ``tool_call_context`` are made of it."""

from __future__ import annotations

import contextvars

import pytest

from otel_toolcalls import tool_call_context
from otel_toolcalls._core.scoped import Scoped
from otel_toolcalls._linking.context import current_tool_call_id

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_scoped", default="outer")


def test_the_value_holds_inside_and_the_replaced_one_comes_back() -> None:
    with Scoped(_VAR, "a") as entered:
        assert (entered, _VAR.get()) == ("a", "a")
        with Scoped(_VAR, "b"):
            assert _VAR.get() == "b"
        assert _VAR.get() == "a"
    assert _VAR.get() == "outer"


def test_a_raise_inside_restores_the_value() -> None:
    with pytest.raises(RuntimeError), Scoped(_VAR, "a"):
        raise RuntimeError("the body failed")
    assert _VAR.get() == "outer"


async def test_tool_call_context_sets_the_call_id_for_sync_and_async_with() -> None:
    with tool_call_context("call_1") as call_id:
        assert (call_id, current_tool_call_id()) == ("call_1", "call_1")
    assert current_tool_call_id() is None
    async with tool_call_context("call_2") as call_id:
        assert (call_id, current_tool_call_id()) == ("call_2", "call_2")
    assert current_tool_call_id() is None
