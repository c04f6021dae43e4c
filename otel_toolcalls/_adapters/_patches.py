"""The wrapt patches one adapter made, so that ``uninstrument()`` undoes exactly those."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

_log = logging.getLogger(__name__)


class Patches:
    def __init__(self) -> None:
        self._made: list[tuple[str, str]] = []

    def wrap(self, module: str, attr: str, wrapper: Callable[..., Any]) -> bool:
        """Wraps ``module.attr`` (``attr`` as ``"Class.method"``); False when the SDK lacks it."""
        try:
            wrap_function_wrapper(module, attr, wrapper)
        except (ImportError, AttributeError):
            _log.debug("otel_toolcalls: %s.%s not found; not patched", module, attr)
            return False
        self._made.append((module, attr))
        return True

    def unwrap_all(self) -> None:
        while self._made:
            module, attr = self._made.pop()
            owner_path, _, method = attr.rpartition(".")
            try:
                owner: Any = importlib.import_module(module)
                for part in owner_path.split(".") if owner_path else ():
                    owner = getattr(owner, part)
                unwrap(owner, method)
            except Exception:
                _log.debug("otel_toolcalls: could not unwrap %s.%s", module, attr, exc_info=True)

    def __bool__(self) -> bool:
        return bool(self._made)
