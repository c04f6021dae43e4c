"""What the package hands back where an SDK returns a bare generator: an object of the same kind.

The package must see its ``close()`` (TELEMETRY.md section 6, "Closed or abandoned"), and nothing
else about it may change: a generator is relayed by a generator (``relay``), an async generator
stood for by a proxy (``AsyncGeneratorProxy``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import types
import weakref
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from otel_toolcalls._core.errors import guarded

_log = logging.getLogger(__name__)


def relay(
    inner: types.GeneratorType[Any, Any, Any],
    *,
    on_close: Callable[[], None],
    scope: contextlib.AbstractContextManager[Any] | None = None,
) -> Generator[Any, Any, Any]:
    """A generator that yields, receives, raises and returns what ``inner`` does; ``on_close`` runs
    when someone closes it (not when it is collected). ``scope`` is entered around each step of
    ``inner`` (a generator is never re-entered, so one object can serve every step).

    PEP 380's ``yield from``, spelled out so that a close is reported before the SDK's generator is
    closed; ``type()``, ``inspect.isgenerator`` and every other answer are the SDK's. A ``close()``
    is told from garbage collection by a weak reference to the relay itself: CPython clears a
    generator's weak references before it finalizes (closes) it, by reference count or by the cycle
    collector, so the reference is still alive only when a holder of the generator closed it."""
    me: list[weakref.ref[Any]] = []
    outer: Any = _relay(inner, on_close, scope, me)
    me.append(weakref.ref(outer))
    outer.__name__, outer.__qualname__ = inner.__name__, inner.__qualname__
    return outer


def _relay(
    inner: Generator[Any, Any, Any],
    on_close: Callable[[], None],
    scope: contextlib.AbstractContextManager[Any] | None,
    me: list[weakref.ref[Any]],
) -> Generator[Any, Any, Any]:
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        try:
            if scope is None:
                chunk = inner.send(sent) if thrown is None else inner.throw(thrown)
            else:
                with scope:
                    chunk = inner.send(sent) if thrown is None else inner.throw(thrown)
        except StopIteration as stop:
            return stop.value
        sent = thrown = None
        try:
            sent = yield chunk
        except GeneratorExit:
            if me and me[0]() is not None:
                guarded(on_close)
            inner.close()
            raise
        except BaseException as exc:  # thrown in by the consumer: the SDK's generator gets it
            thrown = exc


class Transparent:
    """A stand-in that answers as the SDK's object it holds (``_self_wrapped``): its class, its
    attributes, its repr and copies, and only the protocol methods a subclass defines (a wrapt
    ObjectProxy defines them all: ``hasattr(proxy, "__len__")`` would be true where the SDK's
    object says false). State of the package's own lives in further ``_self_`` slots."""

    __slots__ = ("__weakref__", "_self_wrapped")

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        return type(self._self_wrapped)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._self_wrapped, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._self_wrapped, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._self_wrapped, name)

    def __dir__(self) -> list[str]:
        return dir(self._self_wrapped)

    def __repr__(self) -> str:
        return repr(self._self_wrapped)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # copy and pickle treat the SDK's object as it would be treated bare (a generator is
        # refused); without this they would copy the proxy.
        return self._self_wrapped.__reduce_ex__(protocol)


class AsyncGeneratorProxy(Transparent):
    """Stands for the SDK's async generator; ``aclose()`` is seen. ``publish``: a context variable
    and the value it holds while the SDK's generator runs.

    A proxy, not a relaying async generator: asyncio's ``shutdown_asyncgens`` (at the end of
    ``asyncio.run``) calls ``aclose()`` on every live async generator it has seen, a relay and the
    SDK's in no set order, so a stream the user never closed would end ``closed`` or ``abandoned``
    by chance. The proxy is no async generator: the loop never sees it. Its class defines exactly
    the async-generator protocol, forwards every other attribute and reports the SDK's class as
    ``__class__``, so ``isinstance`` (``types.AsyncGeneratorType`` included), ``hasattr`` and
    ``inspect.isasyncgen`` answer as for the SDK's; only ``type()`` names the proxy."""

    __slots__ = ("_self_on_close", "_self_publish")

    def __init__(
        self,
        wrapped: AsyncGenerator[Any, Any],
        *,
        on_close: Callable[[], None],
        publish: tuple[contextvars.ContextVar[Any], Any] | None = None,
    ) -> None:
        object.__setattr__(self, "_self_wrapped", wrapped)
        object.__setattr__(self, "_self_on_close", on_close)
        object.__setattr__(self, "_self_publish", publish)


    def __aiter__(self) -> AsyncGeneratorProxy:
        return self

    def __anext__(self) -> Any:
        return self._run(self._self_wrapped.__anext__())

    def asend(self, value: Any) -> Any:
        return self._run(self._self_wrapped.asend(value))

    def athrow(self, *args: Any) -> Any:
        return self._run(self._self_wrapped.athrow(*args))

    async def aclose(self) -> None:
        guarded(self._self_on_close)
        await self._self_wrapped.aclose()

    def _run(self, step: Any) -> Any:
        if self._self_publish is None:
            return step
        return _published(self._self_publish, step)


async def _published(publish: tuple[contextvars.ContextVar[Any], Any], step: Any) -> Any:
    variable, value = publish
    token = variable.set(value)
    try:
        return await step
    finally:
        variable.reset(token)


def hand_back(
    returned: Any,
    *,
    on_close: Callable[[], None],
    scope: contextlib.AbstractContextManager[Any] | None = None,
    publish: tuple[contextvars.ContextVar[Any], Any] | None = None,
) -> Any:
    """``returned`` as the user gets it: relayed if a generator, proxied if an async generator, and
    as is if anything else (its close then goes unseen: ``abandoned``).

    Never a wrapt ``ObjectProxy``: it defines every dunder the wrapped has, and ``hasattr`` and the
    ``collections.abc`` checks look at the proxy's class, so frameworks that pick sync or async
    iteration by ``isinstance`` (Starlette's ``StreamingResponse``) would misread the stream."""
    kind = type(returned)
    if kind is types.GeneratorType:
        return relay(returned, on_close=on_close, scope=scope)
    if kind is types.AsyncGeneratorType:
        return AsyncGeneratorProxy(returned, on_close=on_close, publish=publish)
    _log.debug("otel_toolcalls: %r is no generator; handed back as is, its close unseen", kind)
    return returned
