"""Two small steps every adapter needs: a guarded call, and the server of a request's URL."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

_log = logging.getLogger(__name__)

_DEFAULT_PORTS = {"https": 443, "http": 80}


def guarded(step: Callable[..., None], *args: Any) -> None:
    """Runs an instrumentation step that must never raise into the application."""
    try:
        step(*args)
    except Exception:
        _log.debug("otel_toolcalls: instrumentation step %s failed", getattr(step, "__qualname__", step),
                   exc_info=True)  # fmt: skip


def server_of(url: Any) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` of a URL (a string or an httpx URL): the host name
    alone, and the scheme's default port when none is given. Nothing else of the URL is kept (some
    SDKs put keys in the query string)."""
    if url is None:
        return None, None
    text = str(url)
    if "//" not in text:
        return None, None
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.hostname or None, port or _DEFAULT_PORTS.get(parts.scheme)
