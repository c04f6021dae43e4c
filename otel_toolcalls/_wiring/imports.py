"""Waiting for an SDK: run a callback once the application has imported a module an adapter patches,
and the import of its package has finished.
"""

from __future__ import annotations

import importlib.abc
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from wrapt import ObjectProxy

from otel_toolcalls._core import process

_log = logging.getLogger(__name__)

# The tables are process's (under process.LOCKS.imports, a new lock in a forked child).
# Top-level package name -> the number of waits interested in it.
_families: dict[str, int] = process.IMPORT_FAMILIES
# Family -> how many of its modules' code is executing now (nested imports count each).
_running: dict[str, int] = process.IMPORT_RUNNING
_waits: list[Wait] = process.IMPORT_WAITS
_finder: _Finder | None = None
_local = threading.local()


def _family(name: str) -> str:
    return name.partition(".")[0]


class Wait:
    """One registration; ``cancel()`` forgets it if it has not run."""

    def __init__(self, modules: tuple[str, ...], callback: Callable[[], None]) -> None:
        self.modules = modules
        self.callback = callback
        self.families = frozenset(_family(m) for m in modules)

    def ready(self) -> bool:
        # Caller holds process.LOCKS.imports. A patched module finishing is not yet safe:
        # openai._streaming finishes while openai/__init__.py still runs, and the adapter imports
        # more of the SDK, maybe a module still half-run. So no module of the family may be running.
        if any(family in _running for family in self.families):
            return False
        return any(m in sys.modules for m in self.modules)

    def cancel(self) -> None:
        with process.LOCKS.imports:
            _forget(self)


def _forget(wait: Wait) -> bool:
    # Caller holds process.LOCKS.imports.
    if wait not in _waits:
        return False
    _waits.remove(wait)
    for family in wait.families:
        _families[family] -= 1
        if not _families[family]:
            del _families[family]
    return True


def when_imported(modules: Iterable[str], callback: Callable[[], None]) -> Wait:
    """Runs ``callback`` once the first of ``modules`` is imported and its package has finished
    importing: at once if that is already so, otherwise from the import that completes it."""
    wait = Wait(tuple(modules), callback)
    with process.LOCKS.imports:
        _install()
        ready = wait.ready()
        if not ready:
            _waits.append(wait)
            for family in wait.families:
                _families[family] = _families.get(family, 0) + 1
    if ready:
        callback()
    return wait


def _install() -> None:
    global _finder
    if _finder is None or _finder not in sys.meta_path:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)


def _run_ready(family: str) -> None:
    # Only the end of a family's outermost running module can make its waits ready: the lazy
    # import of openai's 900 resource modules otherwise checked every wait after each (~0.5 s).
    with process.LOCKS.imports:
        if family in _running:
            return
        due = [wait for wait in _waits if family in wait.families and wait.ready()]
        for wait in due:
            _forget(wait)
    for wait in due:
        try:
            wait.callback()
        except Exception:
            # The callback is the instrumentor's, which logs its own failures; never fail the import.
            _log.warning("otel_toolcalls: a deferred instrumentation failed", exc_info=True)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a module of a watched family, returns the spec the other finders
    give, with a loader that reports when the module's code starts and ends.

    Not wrapt's post-import hooks on the SDK's top package: wrapt chains the loader its finder is
    given, and a namespace package (mistralai 3.x has no ``__init__.py``) is found without one, so
    a hook on ``mistralai`` never fires. The modules that define what an adapter patches always
    have a real loader (a class lives in a module): the wait is for those."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if _family(fullname) not in _families:
            return None
        busy: set[str] = _local.__dict__.setdefault("busy", set())
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec = _find_elsewhere(self, fullname, path, target)
        finally:
            busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            # A namespace package runs no code; a legacy loader is left alone.
            return None
        spec.loader = _Loader(spec.loader)
        return spec


def _find_elsewhere(finder: _Finder, fullname: str, path: Any, target: Any) -> Any:
    for other in list(sys.meta_path):
        find_spec = getattr(other, "find_spec", None)
        if other is finder or find_spec is None:
            continue
        spec = find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


class _Loader(ObjectProxy):  # type: ignore[misc]
    """The real loader, seen through a proxy (``isinstance`` and every attribute answer as the
    real one's) that reports when the module's code starts and ends. The module gets the real
    loader back (``__loader__``, ``__spec__.loader``) before its code runs."""

    def create_module(self, spec: Any) -> Any:
        create = getattr(self.__wrapped__, "create_module", None)
        # None: the default module creation, as for a loader without create_module.
        return create(spec) if create is not None else None

    def exec_module(self, module: Any) -> None:
        real = self.__wrapped__
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = real
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = real
        family = _family(module.__name__)
        with process.LOCKS.imports:
            _running[family] = _running.get(family, 0) + 1
        try:
            real.exec_module(module)
        finally:
            with process.LOCKS.imports:
                _running[family] -= 1
                if not _running[family]:
                    del _running[family]
        _run_ready(family)
