"""google-genai against the fake provider: real SDK clients, real SSE bytes on a real socket."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials
from opentelemetry.instrumentation.utils import suppress_instrumentation

from otel_toolcalls import IncompleteToolCallError
from otel_toolcalls.testing import FakeProvider
from otel_toolcalls.testing import gemini as g

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


WEATHER_ARGS = {"city": "Zürich, Schweiz", "days": 14, "ratio": -0.25, "metric": True, "note": None}
PARTIALS = g.partials_for({"city": "Zürich, naïve ☀️ Schweiz", "days": 14, "ratio": -0.25})
PARTIALS += [g.Partial("$.metric", True), g.Partial("$.note", None), g.Partial("$.empty", "")]
SIZE = sum(p.size() for p in PARTIALS)
DELTAS = sum(1 for p in PARTIALS if p.value != "")


@pytest.fixture
def dev(fake: FakeProvider) -> genai.Client:
    # The test holds the client: a collected genai.Client closes its HTTP client.
    return genai.Client(api_key="fake-key", http_options=types.HttpOptions(base_url=fake.base_url))


@pytest.fixture
def vertex(fake: FakeProvider) -> genai.Client:
    # A token that never expires: the SDK sends it as is and asks no auth server.
    return genai.Client(
        vertexai=True,
        project="fake-project",
        location="us-central1",
        credentials=Credentials(token="fake-token"),  # type: ignore[no-untyped-call]
        http_options=types.HttpOptions(base_url=fake.base_url),
    )


def consume(stream: Any) -> list[Any]:
    return list(stream)


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def stream(client: genai.Client, **config: Any) -> Any:
    return client.models.generate_content_stream(
        model=g.MODEL, contents="weather?", config=types.GenerateContentConfig(**config) if config else None
    )


def vertex_run(partials: list[g.Partial] = PARTIALS, call_id: str | None = "fc_v1") -> list[dict[str, Any]]:
    return g.streamed_call("get_weather", partials, call_id)


# -- whole calls ---------------------------------------------------------------------------------


def test_whole_calls_complete_at_their_part_without_size(
    telemetry: Any, instrument: Any, fake: Any, dev: Any
) -> None:
    parts = [
        g.text("Let me check "),
        g.whole_call("get_weather", WEATHER_ARGS, "fc_1"),
        g.whole_call("get_time", {"tz": "Europe/Zürich"}),
    ]
    fake.enqueue(g.script_for(g.one_part_each(parts)))
    chunks = consume(stream(dev))
    assert len(chunks) == 3

    inference = telemetry.one("generate_content ")
    weather, clock = sorted(telemetry.tool_spans(), key=lambda s: attrs(s)["toolcall.index"])
    a = attrs(weather)
    assert weather.name == "tool_call get_weather"
    assert a["gen_ai.provider.name"] == "gcp.gemini"
    assert a["toolcall.request.model"] == g.MODEL
    assert a["toolcall.call.id"] == "fc_1"
    assert a["toolcall.index"] == 0
    assert a["toolcall.arguments.deltas"] == 0
    assert "toolcall.arguments.size" not in a
    assert a["toolcall.outcome"] == "completed"
    assert weather.status.is_unset
    assert weather.parent.span_id == inference.context.span_id
    b = attrs(clock)
    assert "toolcall.call.id" not in b
    assert b["toolcall.index"] == 1
    i = attrs(inference)
    assert i["gen_ai.operation.name"] == "generate_content"
    assert i["gen_ai.response.finish_reasons"] == ("STOP",)
    assert i["gen_ai.response.id"] == g.RESPONSE_ID
    assert i["toolcall.count"] == 2
    assert i["toolcall.outcome"] == "completed"
    assert i["server.address"] == "127.0.0.1"
    assert telemetry.calls_by_outcome() == {("completed", None): 2}
    assert telemetry.points("toolcall.arguments.size") == []
    assert [p.sum for p in telemetry.points("toolcall.arguments.deltas")] == [0, 0]


# -- Vertex partial_args -------------------------------------------------------------------------


def test_vertex_partial_args_are_fragments(telemetry: Any, instrument: Any, fake: Any, vertex: Any) -> None:
    fake.enqueue(g.script_for(g.one_part_each(vertex_run()), pace=0.001))
    consume(stream(vertex))
    span = telemetry.one("tool_call get_weather")
    a = attrs(span)
    assert a["gen_ai.provider.name"] == "gcp.vertex_ai"
    assert a["toolcall.call.id"] == "fc_v1"
    assert a["toolcall.arguments.deltas"] == DELTAS
    assert a["toolcall.arguments.size"] == SIZE
    assert a["toolcall.outcome"] == "completed"
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert [p.sum for p in telemetry.points("toolcall.arguments.size")] == [SIZE]
    assert fake.requests[0].path.startswith("/v1beta1/projects/fake-project/locations/us-central1/")


def test_partial_values_are_sized_as_json_text(
    telemetry: Any, instrument: Any, fake: Any, vertex: Any
) -> None:
    partials = [g.Partial("$.n", 14), g.Partial("$.x", 2.5), g.Partial("$.b", False), g.Partial("$.z", None)]
    fake.enqueue(g.script_for(g.one_part_each(vertex_run(partials))))
    consume(stream(vertex))
    a = attrs(telemetry.one("tool_call "))
    assert a["toolcall.arguments.size"] == len("14") + len("2.5") + len("false") + len("null")
    assert a["toolcall.arguments.deltas"] == 4


# MAX_TOKENS, SAFETY: test_outcomes_matrix.py::test_truncated / test_filtered[gemini_vertex].
@pytest.mark.parametrize(
    ("finish", "reason"),
    [
        ("MALFORMED_FUNCTION_CALL", "malformed"),
        ("RECITATION", "filtered"),
        ("PROHIBITED_CONTENT", "filtered"),
        ("SPII", "filtered"),
    ],
)
def test_finish_reason_aborts_the_open_call(
    telemetry: Any, instrument: Any, fake: Any, finish: str, reason: str, vertex: Any
) -> None:
    run = vertex_run()[:4]  # start and three fragments: the call is still open
    chunks = [*g.one_part_each(run, finish_reason=None), g.chunk(finish_reason=finish)]
    fake.enqueue(g.script_for(chunks))
    consume(stream(vertex))
    span = telemetry.one("tool_call ")
    a = attrs(span)
    assert a["toolcall.outcome"] == "aborted"
    assert a["toolcall.abort_reason"] == reason
    assert a["error.type"] == reason
    assert a["toolcall.arguments.deltas"] == 3
    assert not span.status.is_ok and not span.status.is_unset
    i = attrs(telemetry.one("generate_content "))
    assert i["toolcall.abort_reason"] == reason
    assert i["gen_ai.response.finish_reasons"] == (finish,)
    assert telemetry.calls_by_outcome() == {("aborted", reason): 1}


def test_malformed_without_a_call_marks_the_stream(
    telemetry: Any, instrument: Any, fake: Any, dev: Any
) -> None:
    fake.enqueue(g.script_for([g.chunk(finish_reason="MALFORMED_FUNCTION_CALL")]))
    consume(stream(dev))
    i = attrs(telemetry.one("generate_content "))
    assert (i["toolcall.outcome"], i["toolcall.abort_reason"], i["toolcall.count"]) == (
        "aborted",
        "malformed",
        0,
    )
    assert telemetry.tool_spans() == []


# -- errors: the SDK's exception reaches the caller unchanged ------------------------------------


def _run(client: genai.Client) -> tuple[list[Any], BaseException | None]:
    seen: list[Any] = []
    try:
        for c in stream(client):
            seen.append(c.model_dump())
    except Exception as exc:
        return seen, exc
    return seen, None


def test_error_event_in_the_stream(telemetry: Any, instrument: Any, fake: Any, vertex: Any) -> None:
    chunks = [*g.one_part_each(vertex_run()[:2], finish_reason=None), g.error_event()]
    fake.enqueue(g.script_for(chunks))
    seen, exc = _run(vertex)
    assert type(exc).__name__ == "ServerError" and len(seen) == 2
    a = attrs(telemetry.one("tool_call "))
    assert a["toolcall.abort_reason"] == "stream_error"
    assert a["error.type"] == "google.genai.errors.ServerError"


@pytest.mark.parametrize("cut", [None, 3])
def test_same_chunks_and_exceptions_with_and_without(
    telemetry: Any, instrument: Any, fake: Any, cut: int | None, vertex: Any
) -> None:
    chunks = g.one_part_each([g.text("hi "), *vertex_run()])
    outcomes = []
    for _ in range(2):
        fake.enqueue(g.script_for(chunks, cut_after=cut))
        seen, exc = _run(vertex)
        outcomes.append((seen, type(exc), str(exc) if exc else None))
        instrument().uninstrument()
    assert outcomes[0] == outcomes[1]
    assert len(telemetry.tool_spans()) == 1  # the first run was seen, the second was bare
    assert len(outcomes[0][0]) == (cut if cut is not None else len(chunks))


# -- closed, abandoned ---------------------------------------------------------------------------


def test_chat_send_message_stream_close(telemetry: Any, instrument: Any, fake: Any, vertex: Any) -> None:
    fake.enqueue(g.script_for(g.one_part_each(vertex_run())))
    chat = vertex.chats.create(model=g.MODEL)
    it = chat.send_message_stream("weather?")
    next(it), next(it)
    it.close()
    a = attrs(telemetry.one("tool_call "))
    assert (a["toolcall.outcome"], a["toolcall.abort_reason"]) == ("aborted", "closed")


# -- async ---------------------------------------------------------------------------------------


async def test_async_partial_args_and_aclose(telemetry: Any, instrument: Any, fake: Any, vertex: Any) -> None:
    fake.enqueue(g.script_for(g.one_part_each(vertex_run())))
    client = vertex
    got = [c async for c in await client.aio.models.generate_content_stream(model=g.MODEL, contents="x")]
    assert len(got) == len(vertex_run())
    fake.enqueue(g.script_for(g.one_part_each(vertex_run(call_id="fc_v2"))))
    it = await client.aio.models.generate_content_stream(model=g.MODEL, contents="x")
    await it.__anext__()
    await it.__anext__()
    await it.aclose()
    by_id = {attrs(s)["toolcall.call.id"]: attrs(s) for s in telemetry.tool_spans()}
    assert by_id["fc_v1"]["toolcall.arguments.size"] == SIZE
    assert by_id["fc_v1"]["toolcall.outcome"] == "completed"
    assert (by_id["fc_v2"]["toolcall.abort_reason"], by_id["fc_v2"]["toolcall.arguments.deltas"]) == (
        "closed",
        1,
    )


async def _aenumerate(it: Any) -> Any:
    i = 0
    async for x in it:
        yield i, x
        i += 1


# -- automatic function calling ------------------------------------------------------------------


RAN: list[str] = []


def get_weather(city: str) -> str:
    """Weather for a city."""
    RAN.append(city)
    return f"sunny in {city}"


# google-genai 1.55 reads a tool's annotations as they are: under `from __future__ import
# annotations` strings, which its AFC cannot convert (it answers the model with the error).
get_weather.__annotations__ = typing.get_type_hints(get_weather)


def afc_chunks(run: Any) -> int:
    """How many chunks the SDK yields for one AFC round trip, uninstrumented (newer releases also
    yield the function-call chunk, 1.55 only the final answer)."""
    with suppress_instrumentation():
        got = len(run())
    RAN.clear()
    return got


def _afc_config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(tools=[get_weather])


def test_afc_execution_is_linked_to_its_completed_call(
    telemetry: Any, instrument: Any, fake: Any, dev: Any
) -> None:
    RAN.clear()
    call = g.whole_call("get_weather", {"city": "Zürich"}, "fc_afc")
    rounds = [g.script_for(g.one_part_each([call])), g.script_for(g.one_part_each([g.text("Sunny.")]))]
    fake.enqueue(*rounds, *rounds)

    def run() -> list[Any]:
        return list(dev.models.generate_content_stream(model=g.MODEL, contents="x", config=_afc_config()))

    bare = afc_chunks(run)
    telemetry.exporter.clear()  # suppress_instrumentation() does not reach AFC's execute_tool span
    got = run()
    assert RAN == ["Zürich"] and len(got) == bare and len(fake.requests) == 4

    tool = telemetry.one("tool_call get_weather")
    run = telemetry.one("execute_tool get_weather")
    r = attrs(run)
    assert r["gen_ai.operation.name"] == "execute_tool"
    assert r["gen_ai.tool.call.id"] == "fc_afc"
    assert r["toolcall.outcome"] == "completed"
    assert [link.context.span_id for link in run.links] == [tool.context.span_id]
    assert run.links[0].attributes["gen_ai.attribution.link_type"] == "CAUSED_BY_GENERATION"
    assert len([s for s in telemetry.spans() if s.name.startswith("generate_content ")]) == 2


def test_afc_strict_refuses_an_aborted_call(telemetry: Any, instrument: Any, fake: Any, dev: Any) -> None:
    instrument(strict=True)
    RAN.clear()
    call = g.whole_call("get_weather", {"city": "Zürich"}, "fc_bad")
    fake.enqueue(
        g.script_for([g.chunk([call], finish_reason="MALFORMED_FUNCTION_CALL")]),
        g.script_for(g.one_part_each([g.text("Sorry.")])),
    )
    list(dev.models.generate_content_stream(model=g.MODEL, contents="x", config=_afc_config()))
    assert RAN == []
    run = telemetry.one("execute_tool get_weather")
    r = attrs(run)
    assert r["toolcall.outcome"] == "aborted"
    assert r["error.type"] == "otel_toolcalls.IncompleteToolCallError"
    assert run.links == ()
    # The SDK answered the model with the refusal instead of the tool's result.
    sent = fake.requests[1].json()["contents"][-1]["parts"][0]["functionResponse"]["response"]
    assert IncompleteToolCallError.__name__ not in sent["error"] and "refusing" in sent["error"]


async def test_async_afc_execution_is_linked(telemetry: Any, instrument: Any, fake: Any, dev: Any) -> None:
    RAN.clear()
    call = g.whole_call("get_weather", {"city": "Bern"}, "fc_async")
    rounds = [g.script_for(g.one_part_each([call])), g.script_for(g.one_part_each([g.text("Sunny.")]))]
    fake.enqueue(*rounds, *rounds)

    async def run() -> list[Any]:
        it = await dev.aio.models.generate_content_stream(model=g.MODEL, contents="x", config=_afc_config())
        return [c async for c in it]

    with suppress_instrumentation():
        bare = len(await run())
    RAN.clear()
    telemetry.exporter.clear()  # suppress_instrumentation() does not reach AFC's execute_tool span
    got = await run()
    assert RAN == ["Bern"] and len(got) == bare
    tool = telemetry.one("tool_call get_weather")
    run = telemetry.one("execute_tool get_weather")
    assert [link.context.span_id for link in run.links] == [tool.context.span_id]
