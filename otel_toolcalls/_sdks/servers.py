"""The server of a request's URL (``server.address`` / ``server.port``), for the adapters."""

from __future__ import annotations

import functools
import logging
from typing import Any
from urllib.parse import urlsplit

__all__ = ["server_of"]

_log = logging.getLogger(__name__)

_DEFAULT_PORTS = {"https": 443, "http": 80}


def server_of(url: Any) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` of a URL (a string or an httpx URL): the host name
    alone, and the scheme's default port when none is given. Nothing else of the URL is kept (some
    SDKs put keys in the query string)."""
    if url is None:
        return None, None
    return _server_of_text(str(url))


# A client's base URL is the same for each of its requests; parsing it costs more than the rest of
# the request hook's own work. Bounded: one entry per distinct base URL, few in any process.
@functools.lru_cache(maxsize=64)
def _server_of_text(text: str) -> tuple[str | None, int | None]:
    if "//" not in text:
        return None, None
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.hostname or None, port or _DEFAULT_PORTS.get(parts.scheme)
