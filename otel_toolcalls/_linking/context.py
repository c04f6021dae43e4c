"""The call id handed to code that has none.

A framework that executes tools itself (LangChain, pydantic-ai, openai-agents) knows the call id;
the MCP client API does not carry one. ``tool_call_context`` puts the id where the MCP adapter (or
any code) finds it; the framework adapters set it around every execution they wrap
(``runner.Execution``, through ``enter_call_id`` / ``leave_call_id``).
"""

from __future__ import annotations

import contextvars

from otel_toolcalls._core.scoped import Scoped

_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("otel_toolcalls_call_id", default=None)


class tool_call_context(Scoped["str | None"]):
    """``with tool_call_context(call_id): await session.call_tool(...)``: the streamed call being
    executed, for code whose API carries no call id (the MCP client). Sync or async ``with``."""

    __slots__ = ()

    def __init__(self, call_id: str | None) -> None:
        super().__init__(_CALL_ID, call_id)

    @property
    def call_id(self) -> str | None:
        return self.value

    async def __aenter__(self) -> str | None:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def current_tool_call_id() -> str | None:
    """The id set by ``tool_call_context`` (or by a framework adapter), if any."""
    return _CALL_ID.get()


def enter_call_id(call_id: str | None) -> contextvars.Token[str | None]:
    """Sets the call id for the code that runs next in this context (a framework's execution)."""
    return _CALL_ID.set(call_id)


def leave_call_id(token: contextvars.Token[str | None]) -> None:
    """Restores the call id ``enter_call_id`` replaced; raises ValueError in another context."""
    _CALL_ID.reset(token)


__all__ = ["current_tool_call_id", "enter_call_id", "leave_call_id", "tool_call_context"]
