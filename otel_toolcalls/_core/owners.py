"""What the package keeps about an object the user holds (its owner: a stream object, a connection),
beside it and never in its attributes: a value an adapter keeps for it (``keep`` / ``kept``), and
its collection, which abandons its stream (``watch``)."""

from __future__ import annotations

import functools
import logging
import weakref
from typing import TYPE_CHECKING, Any

from . import process

if TYPE_CHECKING:
    from .state import StreamState

__all__ = ["keep", "kept", "watch"]

_log = logging.getLogger(__name__)

# Per-stream state an adapter keeps for an SDK object it cannot wrap (LiteLLM's stream wrapper is
# the object the user iterates): keyed weakly on it. A value must not reference its key (through a
# bound method of it, say), or the key never dies.
_KEPT: weakref.WeakKeyDictionary[Any, Any] = process.KEPT


def keep(owner: object, value: Any) -> None:
    _KEPT[owner] = value


def kept(owner: object) -> Any:
    try:
        return _KEPT.get(owner)
    except TypeError:  # unhashable: never kept
        return None


def watch(owner: object, state: StreamState) -> None:
    """Ends ``state`` as abandoned when ``owner`` (what the user holds) is garbage-collected.

    A weak reference to ``owner`` whose callback holds the state weakly, kept by the state itself:
    until the stream ends the core's table of live streams keeps the state (and so the reference);
    once it ended, nothing here keeps it (or its spans) alive for as long as the user keeps the
    stream object, and the stream's end need not detach anything. A plain weak reference rather
    than ``weakref.finalize``: a fifth of the cost per stream, and no atexit run to switch off
    (interpreter exit is stream._end_live_streams's, before the tracer provider's shutdown)."""
    try:
        state.watcher = weakref.ref(owner, functools.partial(_abandon, weakref.ref(state)))
    except TypeError:
        _log.debug("otel_toolcalls: %r cannot be watched for collection", type(owner))


def _abandon(ref: weakref.ref[StreamState], _owner: Any = None) -> None:
    state = ref()
    if state is not None:
        state.abandoned()
