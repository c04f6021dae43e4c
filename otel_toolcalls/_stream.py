"""The one finalize-once stream wrapper every adapter hands its SDK's iterator to.

Reading a chunk and processing it are guarded separately: what the SDK's iterator raises is the
stream's failure and goes back to the caller untouched; what processing raises is ours, counted and
logged (_internal) and dropped, and the chunk is yielded exactly as the SDK made it.

The sync and async generators differ only in ``for``/``async for`` and in cancellation; every
decision they lead to lives in ``StreamState``.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from opentelemetry.trace import SpanKind

from . import _names as n
from ._core import LIVE, StreamState
from ._internal import report, site_of

_log = logging.getLogger(__name__)

T = TypeVar("T")
Process = Callable[[StreamState, Any], None]


def _early_chunk(state: StreamState, count: int, probe: int) -> None:
    # The first chunk reads the clock for time-to-first-chunk; chunk number `probe` reads it once
    # more for the buffered-stream check. No other chunk reads it.
    if count == 1:
        state.first_chunk()
    if count == probe:
        state.nth_chunk()


def wrap_sync(inner: Iterator[T], state: StreamState, process: Process) -> Iterator[T]:
    probe = state.buffered_probe
    count = 0
    try:
        for chunk in inner:
            try:
                count += 1
                if count <= probe:
                    _early_chunk(state, count, probe)
                process(state, chunk)
            except Exception as exc:
                report(site_of(process), exc)
            yield chunk
    except GeneratorExit:
        # Nobody closed the stream through a path we watch (that would have finalized it first):
        # the generator is being collected.
        state.abandoned()
        raise
    except BaseException as exc:
        state.failed(exc)
        raise
    else:
        state.ended()


async def wrap_async(inner: AsyncIterator[T], state: StreamState, process: Process) -> AsyncIterator[T]:
    probe = state.buffered_probe
    count = 0
    try:
        async for chunk in inner:
            try:
                count += 1
                if count <= probe:
                    _early_chunk(state, count, probe)
                process(state, chunk)
            except Exception as exc:
                report(site_of(process), exc)
            yield chunk
    except BaseException as exc:
        ended_by(state, exc)
        raise
    else:
        state.ended()


def ended_by(state: StreamState, exc: BaseException) -> None:
    """What an exception out of the SDK's async iterator (or the await that sends the request)
    means for the stream: collected, cancelled, or failed."""
    if isinstance(exc, GeneratorExit):
        state.abandoned()
    elif isinstance(exc, asyncio.CancelledError):
        state.cancelled()
    else:
        state.failed(exc)


def watch(owner: object, state: StreamState) -> None:
    """Ends the stream as abandoned when ``owner`` (what the user holds) is garbage-collected."""
    try:
        finalizer = weakref.finalize(owner, state.abandoned)
    except TypeError:
        _log.debug("otel_toolcalls: %r cannot be watched for collection", type(owner))
        return
    # Interpreter exit is handled by _end_live_streams, which runs before the tracer provider's
    # shutdown; the finalizer's own atexit run could come after it.
    finalizer.atexit = False
    state.watcher = finalizer


# The state of each stream, keyed on an object every view of the stream shares (the HTTP response:
# SDK helpers and copies of a stream object all hold the same one), for the close hooks.
_BOUND: weakref.WeakKeyDictionary[Any, StreamState] = weakref.WeakKeyDictionary()
_BOUND_LOCK = threading.Lock()


def _new_bound_lock() -> None:
    # In a forked child: a thread of the parent may have held the lock at the fork.
    global _BOUND_LOCK
    _BOUND_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_bound_lock)


def bind(key: object, state: StreamState) -> None:
    try:
        with _BOUND_LOCK:
            _BOUND[key] = state
    except TypeError:
        _log.debug("otel_toolcalls: %r cannot key a stream", type(key))


def bound(key: object) -> StreamState | None:
    try:
        return _BOUND.get(key)
    except TypeError:
        return None


def close_seen(key: object) -> None:
    """A close the package saw (``close()``, ``aclose()``, a ``with`` exit) on the stream keyed ``key``."""
    try:
        state = bound(key)
        if state is not None:
            state.closed()
    except Exception:
        _log.debug("otel_toolcalls: failed to record a close", exc_info=True)


def _end_live_streams() -> None:
    for state in list(LIVE.values()):
        state.abandoned()


_exit_hook_installed = False


def install_exit_hook() -> None:
    """Registered at the first stream, so after the tracer provider's own atexit shutdown hook:
    atexit runs last-registered first, so open calls end before the provider flushes and shuts down."""
    global _exit_hook_installed
    if not _exit_hook_installed:
        _exit_hook_installed = True
        atexit.register(_end_live_streams)


def foreign_inference_span(ctx: Any) -> Any:
    """The current span when it is already this request's inference span, made by someone else."""
    from opentelemetry import trace

    span = trace.get_current_span(ctx)
    if not span.is_recording():
        return None
    if getattr(span, "kind", None) != SpanKind.CLIENT:
        return None
    attributes = getattr(span, "attributes", None) or {}
    if attributes.get(n.GEN_AI_OPERATION_NAME) in n.INFERENCE_OPERATIONS:
        return span
    return None
