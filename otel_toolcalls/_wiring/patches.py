"""What an adapter needs of its SDK (``Requires``), and the wrapt patches it made (``Patches``), so
that ``uninstrument()`` undoes exactly those."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from packaging.version import InvalidVersion, Version
from wrapt import FunctionWrapper, wrap_function_wrapper

from otel_toolcalls._core.errors import report

_T = TypeVar("_T")

_log = logging.getLogger(__name__)

# (module, "Class.method" or "function")
Target = tuple[str, str]


@dataclass(frozen=True)
class Earlier:
    """The choke points of the releases before ``until`` (an SDK that moved its tool execution):
    those releases hook these targets instead of the newest design's."""

    until: str
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class Tested:
    """A distribution's tested range, declared by one adapter: ``make tables`` writes pyproject.toml's
    floors, ``package._instruments_any``, ``tested_versions.py`` and docs/SUPPORT.md's table from it."""

    dist: str
    # The floor as pyproject.toml spells it; run by a version or framework lane.
    oldest: str
    # What the main suite or the newest lane runs.
    newest: str


@dataclass(frozen=True)
class Extra:
    """pyproject.toml's extra for an adapter: ``installs`` are declared distributions (written at
    their oldest) or whole requirements; empty: the adapter's ``sdk``."""

    name: str
    installs: tuple[str, ...] = ()
    # False: kept out of the main venv (the ``test`` extra), a lane of its own runs it.
    main_venv: bool = True


@dataclass(frozen=True)
class Requires:
    """One adapter's needs, as data. The instrumentor waits for the modules of ``targets`` and warns
    (once) about any target it cannot find; ``otel-toolcalls doctor`` reports them."""

    # The distribution, as pip names it: its version is reported and checked against _wiring.tested_versions.
    sdk: str
    # Every attribute the adapter wraps on the newest design.
    targets: tuple[Target, ...]
    # gen_ai.provider.name of the adapter's spans, where it is one name.
    provider: str | None = None
    # Surfaces that older releases of the SDK do not have (openai's Realtime API came in 1.58, the
    # Responses WebSocket in 2.22), as (module, an attribute only a release with the surface has):
    # where that attribute is absent, the module's targets are not in this version, not missing (no
    # warning). A release with the surface that lacks a target has it missing, as anywhere.
    surfaces: tuple[tuple[str, str], ...] = ()
    # The older designs' targets, each for the releases before its ``until``: one declaration per
    # design; the installed version picks one (``installed_targets``), so a target gone from it is missing.
    earlier: tuple[Earlier, ...] = ()
    # The ranges this adapter answers for (one adapter per distribution declares it; the others of
    # that distribution name none). ``make tables`` writes every copy from these.
    tested: tuple[Tested, ...] = ()
    # The first release with this adapter's surface where it is younger than its distribution's oldest.
    since: str = ""
    extra: Extra | None = None

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules the adapter waits for: those that define any design's targets."""
        designs = [self.targets, *(each.targets for each in self.earlier)]
        return tuple(dict.fromkeys(module for targets in designs for module, _ in targets))

    def installed_targets(self) -> tuple[Target, ...]:
        """The targets of the installed release's design (the newest where the version is unknown)."""
        try:
            installed = Version(self.version() or "")
        except InvalidVersion:
            return self.targets
        for each in sorted(self.earlier, key=lambda design: Version(design.until)):
            if installed < Version(each.until):
                return each.targets
        return self.targets

    def version(self) -> str | None:
        try:
            return importlib.metadata.version(self.sdk)
        except importlib.metadata.PackageNotFoundError:
            return None

    def missing(self) -> list[str]:
        """The targets this environment lacks, as ``module.attr``. Imports the target modules: only
        for an SDK the application has imported (or for ``doctor``)."""
        absent = set(self.absent_modules())
        return [
            f"{module}.{attr}"
            for module, attr in self.installed_targets()
            if module not in absent and resolve(module, attr) is None
        ]

    def absent_modules(self) -> list[str]:
        """The modules of the surfaces this release of the SDK does not have: surfaces it predates."""
        return [module for module, marker in self.surfaces if resolve(module, marker) is None]


def resolve(module: str, attr: str) -> Any:
    """``module.attr`` (``attr`` as ``"Class.method"``), or None when the SDK lacks it."""
    try:
        owner: Any = importlib.import_module(module)
        for part in attr.split("."):
            owner = getattr(owner, part)
    except Exception:
        _log.debug("otel_toolcalls: %s.%s not found", module, attr, exc_info=True)
        return None
    return owner


def _restore(owner: Any, name: str) -> None:
    """Puts back what ``wrap_function_wrapper`` wrapped: the raw attribute, not ``getattr``'s, whose
    binding would turn a class's staticmethod into a plain function (then bound to the instance)
    and a classmethod into a method bound to ``owner``."""
    wrapper = inspect.getattr_static(owner, name, None)
    if isinstance(wrapper, FunctionWrapper):
        setattr(owner, name, wrapper.__wrapped__)


class Patches:
    def __init__(self) -> None:
        self._made: list[tuple[str, str]] = []

    def wrap(self, module: str, attr: str, wrapper: Callable[..., Any]) -> bool:
        """Wraps ``module.attr`` (``attr`` as ``"Class.method"``); False when the SDK lacks it (the
        instrumentor warns about it once, from the adapter's ``Requires``)."""
        try:
            wrap_function_wrapper(module, attr, wrapper)
        except (ImportError, AttributeError):
            _log.debug("otel_toolcalls: %s.%s not found; not patched", module, attr)
            return False
        self._made.append((module, attr))
        return True

    def wrap_all(self, requires: Requires, wrapper: Callable[..., Any]) -> bool:
        """Wraps every target of the installed release's design with ``wrapper`` (the adapters
        whose targets are one choke point, or its twins); True when any was wrapped."""
        for module, attr in requires.installed_targets():
            self.wrap(module, attr, wrapper)
        return bool(self)

    def unwrap_all(self) -> None:
        while self._made:
            module, attr = self._made.pop()
            owner_path, _, method = attr.rpartition(".")
            try:
                owner: Any = importlib.import_module(module)
                for part in owner_path.split(".") if owner_path else ():
                    owner = getattr(owner, part)
                _restore(owner, method)
            except Exception as exc:
                report("_wiring.patches.Patches.unwrap_all", exc)

    def __bool__(self) -> bool:
        return bool(self._made)


def traced_instead(site: str, returned: _T, trace: Callable[..., _T], *args: Any) -> _T:
    """What the package hands back in place of what the SDK ``returned``: ``trace(returned, *args)``,
    or ``returned`` itself when instrumentation is suppressed or tracing it fails (reported)."""
    if not is_instrumentation_enabled():
        return returned
    try:
        return trace(returned, *args)
    except Exception as exc:
        report(site, exc)
        return returned
