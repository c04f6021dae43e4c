"""What differs between the SDK versions the version lane runs (tests/versions/run.py), asked of
the SDK itself rather than written down for one version.

- The HTTP library: httpx up to openai 2.x / anthropic 0.x / groq, httpx2 from openai 3 and
  anthropic 1. Its exception classes are the ones a cut connection raises.
- What a cut stream raises: openai 3.x and anthropic 2.17 wrap the transport's error in
  ``APIConnectionError``, earlier releases let it through. A test takes the type from an
  uninstrumented run of the same script, which is also what the contract says: the application sees
  the SDK's exception unchanged.
- The chat helper stream: ``chat.completions.stream`` from openai 1.92, ``beta.chat...`` before.
- The SDK's own tracing: anthropic from 1.14 makes its own spans; earlier releases have no such option.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from opentelemetry.instrumentation.utils import suppress_instrumentation


def http_library(sdk: ModuleType) -> ModuleType:
    """The HTTP library a Stainless SDK (openai, anthropic, groq) is built on, from the base of
    the SDK's own default client class."""
    for cls in sdk.DefaultHttpxClient.__mro__[1:]:
        if cls.__name__ == "Client":
            return importlib.import_module(cls.__module__.split(".", 1)[0])
    raise AssertionError(f"{sdk.__name__}.DefaultHttpxClient has no HTTP library Client base")


def bare_error(run: Callable[[], Any]) -> type[BaseException]:
    """The exception type ``run`` raises with the instrumentation suppressed."""
    with suppress_instrumentation():
        try:
            run()
        except Exception as exc:
            return type(exc)
    raise AssertionError("the uninstrumented run raised nothing")


def dropped_connection(sdk: ModuleType, bare: type[BaseException]) -> str:
    """The ``error.type`` of a connection dropped mid-stream on this release, from the type its
    uninstrumented run raised (``bare``): the HTTP library's ``RemoteProtocolError`` let through, or
    the SDK's ``APIConnectionError`` around it. A third kind fails: a drift to look at, not to absorb."""
    http = http_library(sdk)
    known = {
        http.RemoteProtocolError: f"{http.__name__}.RemoteProtocolError",
        sdk.APIConnectionError: f"{sdk.__name__}.APIConnectionError",
    }
    assert bare in known, f"{sdk.__name__} {sdk.__version__}: a dropped connection raises {bare!r}"
    return known[bare]


async def bare_error_async(run: Callable[[], Awaitable[Any]]) -> type[BaseException]:
    with suppress_instrumentation():
        try:
            await run()
        except Exception as exc:
            return type(exc)
    raise AssertionError("the uninstrumented run raised nothing")


def chat_helper_stream(client: Any) -> Callable[..., Any]:
    """``client.chat.completions.stream`` (openai >= 1.92), ``client.beta.chat.completions.stream`` before."""
    completions = client.chat.completions
    return completions.stream if hasattr(completions, "stream") else client.beta.chat.completions.stream


def traces_itself(client_class: type) -> bool:
    """Whether an anthropic client traces its own requests: ``open_telemetry=`` from anthropic 1.14
    (and with it ``__stream__`` on a lazy copy of the stream); before, there is nothing to turn off."""
    return "open_telemetry" in inspect.signature(client_class.__init__).parameters
