"""When the wire lies (issue 29): a completion event whose call's arguments stop mid-document.

Each provider's real SDK reads real wire bytes from the fake provider: a call cut at an awkward
place (fragments flushed one write each) and then declared complete by the provider's completion
event ends ``aborted`` / ``unterminated``, is counted, is never linked, and strict mode refuses it;
a complete document, however it ends, stays ``completed`` (TELEMETRY.md section 6).

The SDK modules are imported inside the tests, after ``instrument()`` ran, as
``opentelemetry-instrument`` orders it (in one pytest process other modules imported them first).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
from outcomes import assert_outcome

from otel_toolcalls import IncompleteToolCallError, execute_tool, tool_call_outcome
from otel_toolcalls._core import names as n
from otel_toolcalls.testing import FakeProvider, awkward_split
from otel_toolcalls.testing import anthropic as wire_anthropic
from otel_toolcalls.testing import bedrock as wire_bedrock
from otel_toolcalls.testing import cohere as wire_cohere
from otel_toolcalls.testing import mistral as wire_mistral
from otel_toolcalls.testing import openai_chat as wire_chat
from otel_toolcalls.testing import openai_responses as wire_responses

DOCUMENT = '{"city": "Zürich", "limit": 12, "exact": true, "tags": ["a", "b"], "where": {"lat": 47.4}}'

# Where the issue saw each cut labelled complete: the argument text as it stops.
CUTS = {
    "mid_key": '{"ci',
    "key_before_colon": '{"city"',
    "inside_string": '{"city": "Zü',
    "inside_multibyte": '{"note": "naïve ☀️',  # each of its writes is cut inside a character
    "mid_number": '{"city": "Zürich", "limit": 1',
    "after_comma": '{"city": "Zürich",',
    "after_brace": "{",
    "mid_literal": '{"city": "Zürich", "limit": 12, "exact": tr',
    "in_array": '{"city": "Zürich", "limit": 12, "exact": true, "tags": ["a"',
    "trailing_blank_fragment": '{"city": "Zürich"\n',
}

# Complete documents that end every way a server ends them: never a false alarm.
COMPLETE = {
    "trailing_newlines": '{"city": "Zürich"}\n\n',
    "trailing_blanks_fragment": '{"city": "Zürich"}   ',
    "braces_in_strings": '{"q": "a} b{ }", "r": "{\\"x\\": 1}"}',
    "nested": DOCUMENT,
    "nested_close": '{"a": {"b": [1, {"c": []}]}}',
    "empty_object": "{}",
    "empty_arguments": "",
}


# Arguments that are not an object (TELEMETRY.md section 6): valid JSON all the same.
NOT_OBJECTS = {
    "null": "null",
    "empty_array": "[]",
    "nested_array": '[[1, {"a": [2, "]"]}], [], "x"]',
    "string": '"Zürich {x}"',
    "number": "-12.5e3",
    "true": "true",
}
NOT_OBJECT_CUTS = {"array_after_comma": "[1,", "literal": "nul"}


def fragments(text: str) -> list[str]:
    """Awkward cuts, and the last non-blank part alone when the text ends in blanks; a document
    that is not an object is cut in its middle (``nu`` / ``ll``, ``[`` / ``]``)."""
    if not text:
        return []
    body = text.rstrip()
    if not body.startswith("{"):
        middle = len(body) // 2
        pieces = [body[:middle], body[middle:]] if middle else [body]
    else:
        pieces = awkward_split(body) if len(body) > 2 else [body]
    return [*pieces, text[len(body) :]] if body != text else pieces


# -- drivers: one provider's SDK, one call, its completion event; they return what the SDK yielded ---


def chat_openai(fake: FakeProvider, call_id: str, text: str, finish_reason: str = "tool_calls") -> str:
    openai = importlib.import_module("openai")
    call = wire_chat.ToolCall("get_weather", text, id=call_id, fragments=fragments(text))
    fake.enqueue(wire_chat.tool_call_script([call], finish_reason=finish_reason))
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="k", max_retries=0)
    chunks = list(client.chat.completions.create(**wire_chat.request()))
    return wire_chat.arguments_by_index(chunks).get((0, 0), "")


def chat_groq(fake: FakeProvider, call_id: str, text: str) -> str:
    groq = importlib.import_module("groq")
    call = wire_chat.ToolCall("get_weather", text, id=call_id, fragments=fragments(text))
    fake.enqueue(wire_chat.tool_call_script([call]))
    client = groq.Groq(base_url=fake.base_url, api_key="k", max_retries=0)
    chunks = list(client.chat.completions.create(**wire_chat.request()))
    return wire_chat.arguments_by_index(chunks).get((0, 0), "")


def chat_mistral(fake: FakeProvider, call_id: str, text: str) -> str:
    mistral = importlib.import_module("mistralai.client")
    call = wire_chat.ToolCall("get_weather", text, id=call_id, fragments=fragments(text))
    fake.enqueue(wire_mistral.tool_call_script([call]))
    client = mistral.Mistral(api_key="x", server_url=fake.base_url)
    messages = [{"role": "user", "content": "weather?"}]
    events = list(client.chat.stream(model=wire_mistral.MODEL, messages=messages))
    return "".join(
        tc.function.arguments
        for e in events
        for choice in e.data.choices
        for tc in choice.delta.tool_calls or ()
        if isinstance(tc.function.arguments, str)
    )


def responses(fake: FakeProvider, call_id: str, text: str) -> str:
    openai = importlib.import_module("openai")
    # The item's output_item.done says "completed" whatever its arguments hold.
    call = wire_responses.ToolCall("get_weather", text, call_id=call_id, fragments=fragments(text))
    fake.enqueue(wire_responses.tool_call_script([call]))
    client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    events = list(client.responses.create(model=wire_responses.MODEL, input="weather?", stream=True))
    return "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")


def anthropic_messages(fake: FakeProvider, call_id: str, text: str, *, eager: bool = False) -> str:
    anthropic = importlib.import_module("anthropic")
    pieces = fragments(text)
    if eager:
        # eager_input_streaming: the input unbuffered, a character or two at a time.
        pieces = [text[i : i + 2] for i in range(0, len(text), 2)]
    block = wire_anthropic.ToolUse("get_weather", text, id=call_id, fragments=pieces)
    fake.enqueue(wire_anthropic.tool_use_script([block], stop_reason="tool_use"))
    client = anthropic.Anthropic(api_key="k", base_url=fake.base_url, max_retries=0)
    tool: dict[str, Any] = {"name": "get_weather", "input_schema": {"type": "object"}}
    if eager:
        tool["eager_input_streaming"] = True
    events = list(
        client.messages.create(
            model=wire_anthropic.MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": "weather?"}],
            tools=[tool],  # type: ignore[list-item]
            stream=True,
        )
    )
    return "".join(
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    )


def bedrock_converse(fake: FakeProvider, call_id: str, text: str) -> str:
    block = wire_bedrock.ToolUse("get_weather", text, id=call_id, fragments=fragments(text))
    fake.enqueue(wire_bedrock.tool_use_script([block], stop_reason="tool_use"))
    client = wire_bedrock.client(fake.base_url)
    messages = [{"role": "user", "content": [{"text": "weather?"}]}]
    stream = client.converse_stream(modelId=wire_bedrock.MODEL, messages=messages)["stream"]
    return "".join(
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in stream
        if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})
    )


def cohere_v2(fake: FakeProvider, call_id: str, text: str) -> str:
    cohere = importlib.import_module("cohere")
    call = wire_chat.ToolCall("get_weather", text, id=call_id, fragments=fragments(text))
    fake.enqueue(wire_cohere.tool_call_script([call]))
    client = cohere.ClientV2(base_url=fake.base_url, api_key="x")
    events = list(client.chat_stream(model=wire_cohere.MODEL, messages=[{"role": "user", "content": "w?"}]))
    return "".join(
        e.delta.message.tool_calls.function.arguments or "" for e in events if e.type == "tool-call-delta"
    )


Driver = Callable[[FakeProvider, str, str], str]
DRIVERS: dict[str, Driver] = {
    "openai_chat": chat_openai,
    "groq": chat_groq,
    "mistral": chat_mistral,
    "openai_responses": responses,
    "anthropic": anthropic_messages,
    "bedrock_converse": bedrock_converse,
    "cohere": cohere_v2,
}


# What each driver needs (the version lanes install one SDK each; Responses exists from openai 1.66).
# The SDK, not the submodule its driver imports: a release that moves that one fails, never skips.
NEEDS = {
    "openai_chat": "openai",
    "groq": "groq",
    "mistral": "mistralai",
    "openai_responses": "openai.types.responses",
    "anthropic": "anthropic",
    "bedrock_converse": "boto3",
    "cohere": "cohere",
}


def _available(name: str) -> Any:
    try:
        importlib.import_module(NEEDS[name])
    except ImportError:
        return pytest.param(name, marks=pytest.mark.skip(reason=f"{NEEDS[name]} not installed"))
    return name


def needs(name: str) -> Any:
    """A mark that skips a test whose driver's SDK is not installed."""
    param = _available(name)
    return pytest.mark.skipif(param != name, reason=f"{NEEDS[name]} not installed")


PROVIDERS = [_available(name) for name in DRIVERS]
# Every cut through the openai SDK; three kinds of cut through every other provider's.
SOME_CUTS = ("inside_multibyte", "after_comma", "mid_literal")


# -- checks -------------------------------------------------------------------------------------------


def call_span(telemetry: Any, call_id: str) -> Any:
    (span,) = [s for s in telemetry.tool_spans() if s.attributes.get(n.TOOLCALL_CALL_ID) == call_id]
    return span


def executions(telemetry: Any) -> list[Any]:
    return [
        s for s in telemetry.spans() if (s.attributes or {}).get(n.GEN_AI_OPERATION_NAME) == "execute_tool"
    ]


def assert_refused_and_unlinked(telemetry: Any, call_id: str, reason: str) -> None:
    """No link from the execution, and strict mode refuses before the body runs."""
    ran: list[str] = []
    with execute_tool(call_id, name="get_weather"):
        ran.append("lenient")
    with pytest.raises(IncompleteToolCallError) as refused, execute_tool(call_id, strict=True):
        ran.append("strict")
    assert ran == ["lenient"]
    assert refused.value.call_id == call_id and refused.value.reason == reason
    lenient, strict = executions(telemetry)
    assert lenient.links == () and strict.links == ()
    assert lenient.attributes[n.TOOLCALL_OUTCOME] == "aborted"
    assert lenient.attributes[n.TOOLCALL_ABORT_REASON] == reason


def assert_linked_and_run(telemetry: Any, call_id: str) -> None:
    ran: list[str] = []
    with execute_tool(call_id, strict=True):
        ran.append(call_id)
    assert ran == [call_id]
    run = [s for s in executions(telemetry) if s.attributes.get(n.GEN_AI_TOOL_CALL_ID) == call_id][-1]
    (link,) = run.links
    assert link.context.span_id == call_span(telemetry, call_id).context.span_id


def assert_unterminated(telemetry: Any, call_id: str, delivered: str) -> None:
    span = call_span(telemetry, call_id)
    assert_outcome(span, n.UNTERMINATED)
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(delivered.encode("utf-8"))
    assert tool_call_outcome(call_id) == "aborted"
    assert telemetry.calls_by_outcome() == {("aborted", "unterminated"): 1}
    (point,) = [
        p for p in telemetry.points(n.METRIC_TOOLCALL_CALLS) if p.attributes[n.TOOLCALL_OUTCOME] == "aborted"
    ]
    assert point.attributes[n.ERROR_TYPE] == n.UNTERMINATED
    assert_refused_and_unlinked(telemetry, call_id, n.UNTERMINATED)


# -- a cut call labelled complete --------------------------------------------------------------------


@needs("openai_chat")
@pytest.mark.parametrize("cut", list(CUTS))
def test_openai_chat_every_cut_labelled_tool_calls(telemetry, instrument, fake, cut):
    delivered = chat_openai(fake, "call_cut", CUTS[cut])
    assert delivered == CUTS[cut]
    assert_unterminated(telemetry, "call_cut", delivered)
    chat = telemetry.one("chat ")
    # The response itself ended normally: only the call is aborted.
    assert chat.attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)


@needs("openai_chat")
def test_openai_chat_cut_labelled_stop(telemetry, instrument, fake):
    # Gemini's OpenAI-compatible endpoint says "stop" for tool calls.
    delivered = chat_openai(fake, "call_stop", CUTS["after_comma"], finish_reason="stop")
    assert_unterminated(telemetry, "call_stop", delivered)


@pytest.mark.parametrize("cut", SOME_CUTS)
@pytest.mark.parametrize("provider", [p for p in PROVIDERS if p != "openai_chat"])
def test_every_provider_cut_labelled_complete(telemetry, instrument, fake, provider, cut):
    delivered = DRIVERS[provider](fake, "call_cut", CUTS[cut])
    assert delivered == CUTS[cut]
    assert_unterminated(telemetry, "call_cut", delivered)


@needs("anthropic")
def test_anthropic_eager_input_streaming_cut(telemetry, instrument, fake):
    # Fine-grained tool streaming may end with invalid JSON, by its own documentation.
    delivered = anthropic_messages(fake, "toolu_eager", CUTS["mid_number"], eager=True)
    assert delivered == CUTS["mid_number"]
    assert_unterminated(telemetry, "toolu_eager", delivered)
    assert telemetry.one("tool_call get_weather").attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 15


@needs("anthropic")
def test_anthropic_eager_input_streaming_complete(telemetry, instrument, fake):
    delivered = anthropic_messages(fake, "toolu_eager", DOCUMENT, eager=True)
    assert delivered == DOCUMENT
    assert_outcome(call_span(telemetry, "toolu_eager"), None)
    assert_linked_and_run(telemetry, "toolu_eager")


# -- never a false alarm ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(COMPLETE))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_documents_stay_completed(telemetry, instrument, fake, provider, shape):
    text = COMPLETE[shape]
    delivered = DRIVERS[provider](fake, "call_ok", text)
    assert delivered == text
    span = call_span(telemetry, "call_ok")
    assert_outcome(span, None)
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(text.encode("utf-8"))
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert_linked_and_run(telemetry, "call_ok")


@needs("openai_responses")
def test_responses_custom_tool_input_is_free_form(telemetry, instrument, fake):
    openai = importlib.import_module("openai")
    # A custom tool's input is free text: no "}" is owed.
    call = wire_responses.ToolCall(
        "run_sql", "SELECT 1 FROM t WHERE a = '{", call_id="call_sql", kind="custom_tool_call"
    )
    fake.enqueue(wire_responses.tool_call_script([call]))
    client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    list(client.responses.create(model=wire_responses.MODEL, input="q", stream=True))
    assert_outcome(call_span(telemetry, "call_sql"), None)
    assert_linked_and_run(telemetry, "call_sql")


# -- arguments that are not an object -------------------------------------------------------------


@pytest.mark.parametrize("shape", list(NOT_OBJECTS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_documents_that_are_not_objects_stay_completed(telemetry, instrument, fake, provider, shape):
    # {} owes a "}", [] a "]", a literal nothing more than itself: strict mode runs each.
    text = NOT_OBJECTS[shape]
    delivered = DRIVERS[provider](fake, "call_doc", text)
    assert delivered == text
    span = call_span(telemetry, "call_doc")
    assert_outcome(span, None)
    assert span.attributes[n.TOOLCALL_ARGUMENTS_DELTAS] == 2
    assert span.attributes[n.TOOLCALL_ARGUMENTS_SIZE] == len(text.encode("utf-8"))
    assert telemetry.calls_by_outcome() == {("completed", None): 1}
    assert_linked_and_run(telemetry, "call_doc")


@pytest.mark.parametrize("cut", list(NOT_OBJECT_CUTS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_documents_that_are_not_objects_cut(telemetry, instrument, fake, provider, cut):
    delivered = DRIVERS[provider](fake, "call_cut", NOT_OBJECT_CUTS[cut])
    assert delivered == NOT_OBJECT_CUTS[cut]
    assert_unterminated(telemetry, "call_cut", delivered)
