"""Peers' inference spans, as each shows itself (docs/TELEMETRY.md section 6), in the main venv:
the real peers run in the peer lanes (tests/peers); here spans of the test's tracer provider take
their shape, around the real openai SDK streaming from the fake provider.

- OpenInference's LLM span: INTERNAL, ``openinference.span.kind`` ``LLM``;
- Logfire's request span: CLIENT ``chat``, ended when the SDK's call returns, before the stream is
  read, and suppressing other instrumentation meanwhile;
- a span that is neither: the package's own inference span goes under it;
- util-genai's span, current, with no attributes until its end: known by its scope, kind, name;
- a span started beside the request and never current (OpenLLMetry's Responses stream span, made
  once the SDK returned the stream): remembered at its start, adopted by that stream only;
- OpenInference's LangChain span, never current: known by the LangChain model run in progress
  (``peers.langchain_run_started``, which the package's LangChain callback handler calls), through
  the peer module's ``LangChainInstrumentor().get_span(run_id)``; here a stand-in module shows it
  (the real peer runs in the ``peer-openinference-langchain`` lane), and one whose API changed.
"""

from __future__ import annotations

import contextvars
import sys
import types
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.trace import SpanKind

from otel_toolcalls._core import names as n
from otel_toolcalls._core import peers
from otel_toolcalls.testing.openai_chat import PARALLEL, request, tool_call_script


def _client(fake: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)


def _request_wrapped(telemetry: Any, monkeypatch: pytest.MonkeyPatch, span_for: Any) -> None:
    """The client's ``request`` wrapped as a peer wraps it: its span current (and, with ``span_for``
    returning a suppressing manager, instrumentation suppressed) for the SDK's call only."""
    original = openai.OpenAI.request

    def request_in_span(self: Any, *args: Any, **kwargs: Any) -> Any:
        with span_for(telemetry.tracer_provider.get_tracer("peer")):
            return original(self, *args, **kwargs)

    monkeypatch.setattr(openai.OpenAI, "request", request_in_span)


@contextmanager
def _openinference(tracer: Any) -> Iterator[None]:
    with tracer.start_as_current_span("ChatCompletion", attributes={"openinference.span.kind": "LLM"}):
        yield


@contextmanager
def _logfire(tracer: Any) -> Iterator[None]:
    attributes = {n.GEN_AI_OPERATION_NAME: "chat"}
    span = tracer.start_as_current_span("Chat Completion", kind=SpanKind.CLIENT, attributes=attributes)
    with span, suppress_instrumentation():
        yield


@contextmanager
def _other(tracer: Any) -> Iterator[None]:
    with tracer.start_as_current_span("a step of the caller's", kind=SpanKind.CLIENT):
        yield


def _read(fake: Any) -> None:
    fake.enqueue(tool_call_script(PARALLEL))
    for _ in _client(fake).chat.completions.create(**request()):
        pass


@pytest.mark.parametrize("peer", [_openinference, _logfire], ids=["openinference", "logfire"])
def test_the_peers_span_is_the_inference_span(
    peer: Any, instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _request_wrapped(telemetry, monkeypatch, peer)
    _read(fake)
    (theirs,) = [s for s in telemetry.spans() if s.instrumentation_scope.name == "peer"]
    assert [s.name for s in telemetry.spans() if s.instrumentation_scope.name == "otel_toolcalls"] == [
        "tool_call get_weather",
        "tool_call get_time",
    ]
    assert all(s.parent.span_id == theirs.context.span_id for s in telemetry.tool_spans())
    assert [s.attributes[n.TOOLCALL_OUTCOME] for s in telemetry.tool_spans()] == [n.COMPLETED] * 2
    assert telemetry.points(n.METRIC_INFERENCE_DURATION)  # the package's metrics as without the peer


def test_a_span_that_is_not_one_gets_the_packages_under_it(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _request_wrapped(telemetry, monkeypatch, _other)
    _read(fake)
    theirs = telemetry.one("a step")
    ours = telemetry.one("chat ")
    assert ours.parent.span_id == theirs.context.span_id
    assert all(s.parent.span_id == ours.context.span_id for s in telemetry.tool_spans())


def test_a_request_failing_under_a_peers_span_records_the_packages_metrics(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _request_wrapped(telemetry, monkeypatch, _openinference)
    with pytest.raises(openai.InternalServerError):
        _client(fake).chat.completions.create(**request())
    assert [s.name for s in telemetry.spans()] == ["ChatCompletion"]
    assert telemetry.one("ChatCompletion").attributes[n.TOOLCALL_ABORT_REASON] == n.STREAM_ERROR
    (point,) = telemetry.points(n.METRIC_INFERENCE_DURATION)
    assert point.attributes[n.ERROR_TYPE] == "openai.InternalServerError"


def test_suppressed_with_no_peers_span_the_package_stands_aside(
    instrument: Any, telemetry: Any, fake: Any
) -> None:
    fake.enqueue(tool_call_script(PARALLEL))
    with suppress_instrumentation():
        chunks = list(_client(fake).chat.completions.create(**request()))
    assert chunks
    assert telemetry.spans() == []


def _in_a_langchain_run(
    monkeypatch: pytest.MonkeyPatch, instrumentor: type, read: Callable[[], None]
) -> None:
    """``read`` inside a LangChain model run (as LangChain's callbacks tell the package), with
    ``instrumentor`` as the loaded peer module's ``LangChainInstrumentor``."""
    peer = types.ModuleType(peers.OPENINFERENCE_LANGCHAIN)
    peer.LangChainInstrumentor = instrumentor  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, peers.OPENINFERENCE_LANGCHAIN, peer)

    def in_a_run() -> None:
        peers.langchain_run_started(uuid.uuid4())
        read()
        peers.langchain_run_ended()

    contextvars.copy_context().run(in_a_run)


def test_openinferences_langchain_span_of_the_run_is_the_inference_span(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = telemetry.tracer_provider.get_tracer("peer").start_span("ChatOpenAI")  # never current

    class Instrumentor:
        is_instrumented_by_opentelemetry = True

        def get_span(self, run_id: uuid.UUID) -> Any:
            return theirs

    _in_a_langchain_run(monkeypatch, Instrumentor, lambda: _read(fake))
    theirs.end()
    assert [s.name for s in telemetry.spans() if s.instrumentation_scope.name == "otel_toolcalls"] == [
        "tool_call get_weather",
        "tool_call get_time",
    ]
    assert all(s.parent.span_id == theirs.get_span_context().span_id for s in telemetry.tool_spans())
    assert telemetry.one("ChatOpenAI").attributes[n.TOOLCALL_OUTCOME] == n.COMPLETED


def test_a_langchain_peer_whose_api_changed_leaves_the_packages_span(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Changed:  # a later release without get_span
        is_instrumented_by_opentelemetry = True

    _in_a_langchain_run(monkeypatch, Changed, lambda: _read(fake))
    ours = telemetry.one("chat ")
    assert [s.parent.span_id for s in telemetry.tool_spans()] == [ours.context.span_id] * 2


# util-genai's context helpers as its repository publishes them (util/genai/context.py, in no PyPI
# release yet: 1.3b0 has none): the inference span under this key. A stand-in module here; the
# released official instrumentations run in the peer-otel-genai* lanes.
UTIL_GENAI_KEY = "opentelemetry.genai.inference_span"


def _util_genai(monkeypatch: pytest.MonkeyPatch, with_context_module: bool) -> None:
    from opentelemetry import context as otel_context

    package = types.ModuleType(peers.UTIL_GENAI)
    monkeypatch.setitem(sys.modules, peers.UTIL_GENAI, package)
    monkeypatch.setattr(peers, "_util_genai_getter", [])
    if not with_context_module:
        monkeypatch.setitem(sys.modules, peers.UTIL_GENAI_CONTEXT, None)  # import fails: absent
        return
    module = types.ModuleType(peers.UTIL_GENAI_CONTEXT)
    module.get_current_inference_span = lambda context=None: otel_context.get_value(  # type: ignore[attr-defined]
        UTIL_GENAI_KEY, context
    )
    monkeypatch.setitem(sys.modules, peers.UTIL_GENAI_CONTEXT, module)


def _published(tracer: Any) -> Any:
    """A peer's inference span that shows no attributes the package reads (as under another tracer
    provider), published under util-genai's key, with a span of its own current under it."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    @contextmanager
    def span_for(_: Any) -> Iterator[None]:
        theirs = tracer.start_span("chat gpt-4o-mini", kind=SpanKind.CLIENT)
        ctx = otel_context.set_value(UTIL_GENAI_KEY, theirs, trace.set_span_in_context(theirs))
        token = otel_context.attach(ctx)
        try:
            with tracer.start_as_current_span("POST"):
                yield
        finally:
            otel_context.detach(token)
            theirs.end()

    return span_for


@pytest.mark.parametrize("published", [True, False], ids=["context-module", "no-context-module"])
def test_util_genais_published_inference_span_is_the_inference_span(
    published: bool, instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _util_genai(monkeypatch, published)
    _request_wrapped(telemetry, monkeypatch, _published(telemetry.tracer_provider.get_tracer("peer")))
    _read(fake)
    (theirs,) = [s for s in telemetry.spans() if s.instrumentation_scope.name == "peer" and s.name != "POST"]
    ours = [s for s in telemetry.spans() if s.instrumentation_scope.name == "otel_toolcalls"]
    if published:  # (ended with the SDK's call, before the stream is read: no toolcall.* on it)
        assert [s.name for s in ours] == ["tool_call get_weather", "tool_call get_time"]
        assert all(s.parent.span_id == theirs.context.span_id for s in telemetry.tool_spans())
    else:  # not known: the package's own under the current span, as beside any other
        (own,) = [s for s in ours if s.name.startswith("chat ")]
        assert own.parent.span_id == telemetry.one("POST").context.span_id
        assert all(s.parent.span_id == own.context.span_id for s in telemetry.tool_spans())


# The scopes of the peers whose spans these take the shape of (otel_toolcalls/_linking/peer_spans.py).
UTIL_GENAI_SCOPE = "opentelemetry.util.genai.handler"
OPENLLMETRY_SCOPE = "opentelemetry.instrumentation.openai.v1"


@contextmanager
def _util_genai_bare(tracer: Any) -> Iterator[None]:
    # (the tracer of util-genai's scope, whatever the wrapper's: see the test)
    with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT):
        yield


def test_util_genais_bare_span_is_the_inference_span(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracer = telemetry.tracer_provider.get_tracer(UTIL_GENAI_SCOPE)
    _request_wrapped(telemetry, monkeypatch, lambda _: _util_genai_bare(tracer))
    _read(fake)
    theirs = telemetry.one("chat ")
    assert theirs.instrumentation_scope.name == UTIL_GENAI_SCOPE
    # (ended with the SDK's call here, before the stream is read: no toolcall.* on it; the
    # peer-otel-openai-v2-latest lane has util-genai's own, ended with the stream)
    assert [s.name for s in telemetry.spans() if s.instrumentation_scope.name == "otel_toolcalls"] == [
        "tool_call get_weather",
        "tool_call get_time",
    ]
    assert all(s.parent.span_id == theirs.context.span_id for s in telemetry.tool_spans())


class _Beside:
    """OpenLLMetry's Responses wrapper in shape: the SDK's stream returned first, then a span of
    its own, never current, ended when the stream is exhausted."""

    def __init__(self, stream: Any, span: Any) -> None:
        self.stream, self.span = stream, span

    def __iter__(self) -> Iterator[Any]:
        yield from self.stream
        self.span.end()


def _responses_beside(telemetry: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from openai.resources.responses import Responses

    original, tracer = Responses.create, telemetry.tracer_provider.get_tracer(OPENLLMETRY_SCOPE)

    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        stream = original(self, *args, **kwargs)
        return _Beside(stream, tracer.start_span("openai.response", kind=SpanKind.CLIENT))

    monkeypatch.setattr(Responses, "create", create)


def _responses_script(*names: str) -> Any:
    from otel_toolcalls.testing.openai_responses import ToolCall
    from otel_toolcalls.testing.openai_responses import tool_call_script as responses_script

    return responses_script([ToolCall(name, "{}", call_id=f"call_{name}") for name in names])


def _create_responses(fake: Any) -> Any:
    return _client(fake).responses.create(model="gpt-4o-mini", input="weather?", stream=True)


@pytest.mark.parametrize("last_first", [False, True], ids=["in-order", "last-first"])
def test_a_span_started_beside_the_request_is_its_streams_inference_span(
    last_first: bool, instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _responses_beside(telemetry, monkeypatch)
    fake.enqueue(_responses_script("first"))
    fake.enqueue(_responses_script("second"))
    # Both made before either is read: each stream adopts the span made for it, whichever is read first.
    first, second = _create_responses(fake), _create_responses(fake)
    for stream in (second, first) if last_first else (first, second):
        for _ in stream:
            pass
    theirs = [s for s in telemetry.spans() if s.name == "openai.response"]
    assert len(theirs) == 2
    assert not [s for s in telemetry.spans() if s.name.startswith("chat")]
    for name, span in zip(("first", "second"), (first.span, second.span), strict=True):
        (call,) = [s for s in telemetry.tool_spans() if s.name == f"tool_call {name}"]
        assert call.parent.span_id == span.get_span_context().span_id, name
    assert {s.attributes[n.TOOLCALL_OUTCOME] for s in theirs} == {n.COMPLETED}


def test_a_span_started_beside_another_request_is_not_adopted(
    instrument: Any, telemetry: Any, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _responses_beside(telemetry, monkeypatch)
    fake.enqueue(_responses_script("first"))
    unread = _create_responses(fake)
    _read(fake)  # a chat stream, made and read while the Responses one waits: the package's own span
    ours = telemetry.one("chat ")
    assert all(s.parent.span_id == ours.context.span_id for s in telemetry.tool_spans())
    for _ in unread:
        pass
    (call,) = [s for s in telemetry.tool_spans() if s.name == "tool_call first"]
    assert call.parent.span_id == unread.span.get_span_context().span_id
