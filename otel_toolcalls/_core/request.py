"""One streamed request's lifecycle, the same for every adapter.

``Request`` is made when the SDK is asked for a stream (``begin``), carries what the request knows
to the moment the SDK's iterator exists (``attach``), or records its failure before any stream
existed (``failed_before_stream``). A request in flight is the context variable ``CURRENT``.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from . import process, replay
from .clock import now_ns
from .errors import guarded
from .inference import RequestInfo
from .owners import watch
from .peers import peer_inference_span
from .scoped import Scoped
from .sink import Translator
from .state import StreamState
from .stream import bind, ended_by, install_exit_hook, wrap_async, wrap_sync
from .telemetry import Telemetry

__all__ = ["CURRENT", "Request", "current", "model_of", "stash", "stashed"]


@dataclass
class Request:
    telemetry: Telemetry
    provider: str
    model: str | None = None
    operation: str = "chat"
    server: tuple[str | None, int | None] = (None, None)
    start_ns: int = field(default_factory=now_ns)
    parent: otel_context.Context = field(default_factory=otel_context.get_current)
    replayed: replay.Replayed | None = None
    # The SDK traces its requests itself: a request failing before any stream gets no span of ours.
    sdk_traces: bool = False
    # The adapter's own route, needed again at the stream: each adapter narrows it to its own
    # frozen type (a request in flight may be another adapter's); the core never reads it.
    route: object = None
    state: StreamState | None = None
    # A peer's inference span (another instrumentation's) for this request, known while it records
    # (when the request is made): adopted even if it ends before the stream is read (Logfire's ends
    # with the SDK's call).
    peer_span: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.peer_span = peer_inference_span(self.parent)

    def sending(self) -> None:
        """The SDK sends the request now, inside every wrapper of the call that makes it: someone
        else's inference span started by a wrapper outside the adapter's is current only here."""
        if self.peer_span is None and self.state is None:
            self.peer_span = peer_inference_span(otel_context.get_current())

    def stream(self) -> StreamState:
        """The request's ``StreamState``, made at the first need."""
        return self.state if self.state is not None else self.new_state()

    def new_state(self, find_sdk_span: Callable[[], Any] | None = None) -> StreamState:
        """A ``StreamState`` for a stream of this request. The inference span adopted, if any: the
        SDK's own (``find_sdk_span``), the innermost, else another instrumentation's (``peer_span``)."""
        adopted = find_sdk_span() if find_sdk_span is not None else None
        if adopted is None:
            adopted = self.peer_span
        host, port = self.server
        info = RequestInfo(
            provider=self.provider,
            model=self.model,
            operation=self.operation,
            server_address=host,
            server_port=port,
            start_ns=self.start_ns,
            parent=self.parent,
            adopted_span=adopted,
        )
        self.state = state = StreamState(self.telemetry, info)
        if self.replayed:
            replay.record(self.telemetry, self.replayed, state.span, state.provider, self.model)
        install_exit_hook()
        return state

    def attach(
        self,
        iterator: Any,
        translate: Translator,
        *,
        key: object = None,
        owner: object = None,
        find_sdk_span: Callable[[], Any] | None = None,
        fresh: bool = True,
    ) -> Any:
        """The SDK's iterator, wrapped: ``key`` is what every view of the stream shares (the close
        hooks find the state there), ``owner`` what the user holds (its collection abandons it).
        ``fresh``: a new state for each stream of the request (a raw response parsed twice);
        otherwise the one ``stream()`` made (a request whose state exists before its stream)."""
        state = self.new_state(find_sdk_span) if fresh or self.state is None else self.state
        if key is not None:
            bind(key, state)
        if owner is not None:
            watch(owner, state)
        if hasattr(iterator, "__anext__"):
            return wrap_async(iterator, state, translate)
        return wrap_sync(iterator, state, translate)

    def failed_before_stream(self, exc: BaseException) -> None:
        """The request raised before any stream existed (refused, throttled, unreachable): the
        inference span still records it (an adopted one gets the outcome), and the
        metrics, unless the SDK traces its requests itself."""
        if self.state is not None:
            return
        if not self.telemetry.settings.inference_spans or self.sdk_traces:
            span = trace.get_current_span(self.parent)
            replay.record(self.telemetry, self.replayed, span, self.provider, self.model)
            return
        self.stream().failed(exc)

    def run(self, call: Callable[[], Any]) -> Any:
        """The SDK's call that makes the request (and, within it, the stream): ``CURRENT`` is this
        request meanwhile, and what it raises is recorded as the request's failure, then re-raised."""
        with _Running(CURRENT, self):
            return call()

    async def arun(self, awaitable: Awaitable[Any]) -> Any:
        """``run`` for an async SDK: the request is made while ``awaitable`` runs."""
        with _Running(CURRENT, self):
            return await awaitable

    async def sent(self, awaitable: Awaitable[Any]) -> Any:
        """The await that sends the request, for an SDK whose stream exists only after it: what
        it raises ends the request's stream as the async wrapper would."""
        try:
            return await awaitable
        except BaseException as exc:
            ended_by(self.stream(), exc)
            raise

    def entered(self) -> Scoped[Request | None]:
        """``CURRENT`` is this request for the SDK's call that builds its stream, or for each step
        of a generator the SDK made (one object serves every step: a generator is never
        re-entered)."""
        return Scoped(CURRENT, self)

    def closed(self) -> None:
        """A close the package saw on what the user holds (a generator it handed back): the
        request's stream, if one was made, ends closed."""
        if self.state is not None:
            self.state.closed()


class _Running(Scoped["Request | None"]):
    """``entered()`` around the SDK's call that makes the request: what it raises is recorded as
    the request's failure before any stream existed (and goes on to the caller). A class, not a
    generator-based context manager, which costs about as much as the rest of the call's work."""

    __slots__ = ()

    def __exit__(self, *exc_info: Any) -> None:
        request = self.value
        if request is not None and isinstance(exc_info[1], Exception):
            guarded(request.failed_before_stream, exc_info[1])
        super().__exit__(*exc_info)


# The request in flight, set for the SDK's own call (``entered``): the SDK builds its stream inside
# that call, in the same context, so the stream finds its request here.
CURRENT: contextvars.ContextVar[Request | None] = contextvars.ContextVar(
    "otel_toolcalls_request", default=None
)


# Requests whose stream is built after the SDK's call returned (raw responses, anthropic's lazy
# stream), keyed on the HTTP response the stream will hold. A request does not reference its key.
_STASHED: weakref.WeakKeyDictionary[Any, Request] = process.STASHED


def stash(key: object, request: Request) -> None:
    if request.state is None and key is not None:
        _STASHED[key] = request


def stashed(key: object) -> bool:
    try:
        return key is not None and key in _STASHED
    except TypeError:  # not weakly referenceable: never stashed
        return False


def current(key: object = None) -> Request | None:
    """The request in flight, or the one stashed on ``key``."""
    found = CURRENT.get()
    if found is None and key is not None:
        found = _STASHED.pop(key, None)
    return found


def model_of(value: Any) -> str | None:
    return value if isinstance(value, str) else None
