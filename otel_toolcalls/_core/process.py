"""Process-wide state: every table that outlives one ``instrument()`` call, its one at-fork hook and
its one reset for tests.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from otel_toolcalls._config import Settings

from .registry import CallRegistry

_log = logging.getLogger(__name__)


class Forkable(Protocol):
    """An object holding a lock of its own, told when it finds itself in a forked child."""

    def after_fork_in_child(self) -> None: ...


# -- the tables, by owner ---------------------------------------------------------------------------
# Each says what a forked child does with it and whether reset() empties it. A table is emptied in
# place, never replaced, so its users bind it into a module-level name once (no indirection per
# chunk); locks are read from LOCKS at each use instead. Typed Any: the values' classes live in
# modules that import this one, which re-annotate the table where they bind it.

# state: streams still open (StreamState by id), ended as abandoned at interpreter exit; they also
# keep each open stream's state alive for the collection watch. Fork: disowned and dropped (the
# parent ends them). Reset: the same, so no test's leftover stream ends into another test.
LIVE: dict[int, Any] = {}

# stream: the state of each stream, keyed on an object every view of the stream shares, for the
# close hooks. Fork: kept (their states are disowned, so a close in the child ends nothing). Reset: emptied.
BOUND: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

# request: requests whose stream is built after the SDK's call returned, keyed on the HTTP response;
# per-stream values an adapter keeps for an SDK object it cannot wrap. Fork: kept. Reset: emptied.
STASHED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
KEPT: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

# _linking.spans: execution spans the package made (-> their call id) or annotated. Fork: kept.
# Reset: emptied (weak on spans, which die with their test: emptying only makes that certain).
EXECUTIONS: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
ANNOTATED: weakref.WeakSet[Any] = weakref.WeakSet()

# One memory of calls, so that execute_tool finds calls whichever instrument() saw them. Fork: its
# records stay (facts about calls, true in the child too), its lock is new. Reset: emptied.
REGISTRY = CallRegistry(Settings.registry_size)

# revocation: revocable calls ended completed whose span and count wait for their fate (call id ->
# what ends them). Fork: dropped (the parent ends them; ended here too, their spans would be exported
# twice). Reset: dropped, so no test's held call ends into another test.
HELD: dict[str, Any] = {}

# errors: sites already warned about; _wiring.instrumentor: adapters whose missing targets were
# reported. Fork: kept (said once for code the child shares, in the common case to the same log).
# Reset: emptied, so a test sees its own first warning.
WARNED: set[str] = set()
REPORTED: set[str] = set()

# calls: finish reason -> abort reason, a bounded memo of a pure function. Neither fork nor reset:
# no entry can be wrong in another process or test.
CLASSIFIED: dict[str, str | None] = {}

# counts: each meter's counts, by instrument name. Fork: kept, as the counts go on in the child.
# Reset: never: keyed weakly on meters, so a test sees only its own meters' counts, and forgetting
# them under a live meter would lose the counts the SDK still reports through the first callback.
COUNTS_BY_METER: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()

# _wiring.imports: the waits for SDKs not imported yet, their top-level packages (-> how many waits)
# and those packages' modules executing now (package -> how many). Neither: they are the
# instrumentor's, which cancels its waits at uninstrument().
IMPORT_WAITS: list[Any] = []
IMPORT_FAMILIES: dict[str, int] = {}
IMPORT_RUNNING: dict[str, int] = {}


class Slot:
    """One process-wide value, None while unset."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: Any = None


# telemetry: the Telemetry execute_tool builds on the global providers when nothing is instrumented.
# Fork: kept. Reset: forgotten, as it holds the settings the environment had in the test that first
# needed it. (The instrumentor's own, telemetry.active(), stays there: instrument() and
# uninstrument() alone set and clear it, and a reset under a live instrumentation must not.)
FALLBACK = Slot()

# Objects with a lock of their own (each meter's counts, each telemetry's tool-name limiter),
# weakly: they live as long as their instrumentation does. Fork: each told. Reset: never.
_FORKABLE: weakref.WeakSet[Forkable] = weakref.WeakSet()


def renew_at_fork(forkable: Forkable) -> None:
    """``forkable.after_fork_in_child()`` runs in every child forked while ``forkable`` lives."""
    _FORKABLE.add(forkable)


class Locks:
    """The module-wide locks. Read at each use (``with LOCKS.bound:``): a forked child replaces
    them, as a thread of the parent may have held one at the fork, and that thread does not exist
    in the child to release it."""

    __slots__ = ("bound", "held", "imports", "meters", "reported", "warned")

    def __init__(self) -> None:
        self.renew()

    def renew(self) -> None:
        self.bound = threading.Lock()  # BOUND
        self.held = threading.Lock()  # HELD
        self.meters = threading.Lock()  # COUNTS_BY_METER
        self.warned = threading.Lock()  # WARNED
        self.reported = threading.Lock()  # REPORTED
        self.imports = threading.Lock()  # the IMPORT_ tables


LOCKS = Locks()


# -- the fork hook and the reset ---------------------------------------------------------------------


def _disown_streams() -> None:
    """The streams open at the fork are the parent's, which ends, exports and counts them. Ended
    here too (collected, or at the child's exit), the same span ids would be exported twice and
    phantom aborts counted."""
    for state in list(LIVE.values()):
        state.disown()
    LIVE.clear()
    HELD.clear()


def _after_fork_steps() -> list[Callable[[], None]]:
    # Locks first, so that no later step (nor a future one) can wait on a lock a parent thread held.
    return [
        LOCKS.renew,
        REGISTRY.after_fork_in_child,
        *(forkable.after_fork_in_child for forkable in list(_FORKABLE)),
        _disown_streams,
    ]


def after_fork_in_child() -> None:
    """The package's one at-fork hook. Each step alone: one failing must not leave the rest undone."""
    for step in _after_fork_steps():
        try:
            step()
        except Exception:
            _log.debug("otel_toolcalls: an after-fork step failed", exc_info=True)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=after_fork_in_child)


def reset() -> None:
    """For tests: forgets what one test must not inherit from another (see each table above).
    Call it with no stream in use by another thread."""
    _disown_streams()
    for table in (BOUND, STASHED, KEPT, EXECUTIONS, ANNOTATED, WARNED, REPORTED):
        table.clear()
    REGISTRY.clear()
    FALLBACK.value = None
