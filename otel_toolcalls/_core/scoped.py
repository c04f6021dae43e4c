"""A context variable set for the length of a ``with`` block, then restored."""

from __future__ import annotations

import contextvars
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")


class Scoped(Generic[_T]):
    """``with Scoped(variable, value):`` sets ``variable`` to ``value`` and restores the value it
    replaced on leaving. A class, not a generator-based context manager: it runs on every request."""

    __slots__ = ("token", "value", "variable")

    def __init__(self, variable: contextvars.ContextVar[_T], value: _T) -> None:
        self.variable = variable
        self.value = value
        self.token: contextvars.Token[_T] | None = None

    def __enter__(self) -> _T:
        self.token = self.variable.set(self.value)
        return self.value

    def __exit__(self, *exc_info: Any) -> None:
        if self.token is not None:
            self.variable.reset(self.token)
            self.token = None
