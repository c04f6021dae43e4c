"""The one finalize-once stream wrapper every adapter hands its SDK's iterator to.

Reading a chunk and translating it are guarded separately: what the SDK's iterator raises is the
stream's failure and goes back to the caller untouched; what translating raises is ours, counted and
logged (``errors``) and dropped, and the chunk is yielded exactly as the SDK made it.

The sync and async generators differ only in ``for``/``async for``; what a chunk or an exception
means is decided once, below, and every decision it leads to lives in ``StreamState``.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal, TypeVar

from . import process, revocation
from .errors import report, site_of
from .sink import Translator
from .state import LIVE, StreamState

_log = logging.getLogger(__name__)

T = TypeVar("T")


def _probe(state: StreamState, count: int) -> None:
    """The early chunks' clock reads: chunk 1 for time-to-first-chunk, number ``buffered_probe``
    once more for the buffered-stream check; no other chunk reads the clock."""
    if count == 1:
        state.first_chunk()
    if count == state.buffered_probe:
        state.nth_chunk()


class _Ending:
    """How the wrapped iteration ended, told to the state once, the same for both wrappers: the
    SDK's iterator exhausted, or an exception out of it or thrown in at a ``yield``."""

    __slots__ = ("state",)

    def __init__(self, state: StreamState) -> None:
        self.state = state

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> Literal[False]:
        if exc is None:
            self.state.ended()
        else:
            ended_by(self.state, exc)
        return False  # what ended the iteration goes on to the caller untouched


# Each chunk is handled in the generator's own body, not in a shared helper: a call per chunk is
# a large part of the package's per-chunk cost. What translating raises is reported, not raised.


def wrap_sync(inner: Iterator[T], state: StreamState, translate: Translator) -> Iterator[T]:
    count, probe = 0, state.buffered_probe
    with _Ending(state):
        for chunk in inner:
            try:
                if count < probe:
                    count += 1
                    _probe(state, count)
                translate(state, chunk)
            except Exception as exc:
                report(site_of(translate), exc)
            yield chunk


async def wrap_async(inner: AsyncIterator[T], state: StreamState, translate: Translator) -> AsyncIterator[T]:
    count, probe = 0, state.buffered_probe
    with _Ending(state):
        async for chunk in inner:
            try:
                if count < probe:
                    count += 1
                    _probe(state, count)
                translate(state, chunk)
            except Exception as exc:
                report(site_of(translate), exc)
            yield chunk


def ended_by(state: StreamState, exc: BaseException) -> None:
    """What an exception out of the SDK's iterator (or the await that sends the request) means for
    the stream. ``GeneratorExit``: nobody closed it through a path the package watches (that would
    have finalized it first), so the generator is being collected."""
    if isinstance(exc, GeneratorExit):
        state.abandoned()
    elif isinstance(exc, asyncio.CancelledError):
        state.cancelled()
    else:
        state.failed(exc)


# The state of each stream, keyed on an object every view of the stream shares (the HTTP response:
# SDK helpers and copies of a stream object all hold the same one), for the close hooks.
_BOUND: weakref.WeakKeyDictionary[Any, StreamState] = process.BOUND


def bind(key: object, state: StreamState) -> None:
    try:
        with process.LOCKS.bound:
            _BOUND[key] = state
    except TypeError:
        _log.debug("otel_toolcalls: %r cannot key a stream", type(key))


def bound(key: object) -> StreamState | None:
    try:
        return _BOUND.get(key)
    except TypeError:
        return None


def traced_elsewhere(*keys: object) -> StreamState | None:
    """The state another adapter bound to one of ``keys`` (LiteLLM over the openai SDK), if any."""
    for key in keys:
        state = bound(key) if key is not None else None
        if state is not None:
            return state
    return None


def close_seen(key: object) -> None:
    """A close the package saw (``close()``, ``aclose()``, a ``with`` exit) on the stream keyed ``key``."""
    try:
        state = bound(key)
        if state is not None:
            state.closed()
    except Exception as exc:
        report("_core.stream.close_seen", exc)


def _end_live_streams() -> None:
    for state in list(LIVE.values()):
        state.abandoned()
    # No revocation can come any more: held calls are counted as they stand, completed.
    revocation.seal_all()


_exit_hook_installed = False


def install_exit_hook() -> None:
    """Registered at the first stream, so after the tracer provider's own atexit shutdown hook:
    atexit runs last-registered first, so open calls end before the provider flushes and shuts down."""
    global _exit_hook_installed
    if not _exit_hook_installed:
        _exit_hook_installed = True
        atexit.register(_end_live_streams)
