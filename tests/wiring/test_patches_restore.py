"""Uninstrumenting puts back each wrapped attribute as it was: a staticmethod or a classmethod
stays one, called through an instance or a subclass as before the patch."""

from __future__ import annotations

from typing import Any

from otel_toolcalls._wiring.patches import Patches


def _through(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return wrapped(*args, **kwargs)


class Executor:
    @staticmethod
    def stream(agent: Any, use: Any = None) -> tuple[Any, Any]:
        return agent, use

    @classmethod
    def made_by(cls) -> str:
        return cls.__name__


class Concurrent(Executor):
    pass


def _calls() -> list[Any]:
    return [Concurrent().stream("agent", use="u"), Executor.stream("agent"), Concurrent.made_by()]


def test_unwrap_restores_staticmethod_and_classmethod() -> None:
    before = _calls()
    patches = Patches()
    for attr in ("Executor.stream", "Executor.made_by"):
        assert patches.wrap(__name__, attr, _through)
    assert _calls() == before
    patches.unwrap_all()
    assert _calls() == before == [("agent", "u"), ("agent", None), "Concurrent"]
    # A second patch of the restored attributes: the same calls again.
    patches.wrap(__name__, "Executor.stream", _through)
    assert _calls() == before
    patches.unwrap_all()
