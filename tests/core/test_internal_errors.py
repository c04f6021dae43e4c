"""The package's own failures: never raised into the application, but counted
(``toolcall.internal_errors`` by ``error.site``) and logged at WARNING once per site."""

from __future__ import annotations

import logging
from typing import Any

import openai
import pytest

from otel_toolcalls._core import errors as _internal
from otel_toolcalls._core import process
from otel_toolcalls._providers.formats import chat_completions as _chat_completions
from otel_toolcalls.testing.openai_chat import WEATHER, tool_call_script

SITE = "_providers.formats.chat_completions.translate_chunk"


class TranslatorBug(Exception):
    pass


@pytest.fixture
def broken_translator(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(state: Any, chunk: Any) -> None:
        raise TranslatorBug("not for the host")

    monkeypatch.setattr(_chat_completions, "_identify", explode)
    process.reset()  # sites warned about by earlier tests: said again


def _run(fake: Any) -> list[Any]:
    client = openai.OpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0)
    fake.enqueue(tool_call_script([WEATHER]))
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)
    return list(stream)


def test_a_failing_translator_is_counted_and_warned_once(
    telemetry: Any, instrument: Any, fake: Any, broken_translator: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="otel_toolcalls")
    first = _run(fake)
    second = _run(fake)

    # The host saw every chunk, nothing raised.
    assert len(first) == len(second) > 1
    points = telemetry.points("toolcall.internal_errors")
    assert [dict(p.attributes) for p in points] == [{"error.site": SITE, "error.type": "TranslatorBug"}]
    assert points[0].value == len(first) + len(second)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and SITE in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].exc_info is not None and warnings[0].exc_info[0] is TranslatorBug
    # Later failures still leave a trace, at DEBUG.
    assert any(r.levelno == logging.DEBUG and SITE in r.getMessage() for r in caplog.records)


def test_a_failing_step_outside_a_stream_is_counted(
    telemetry: Any, instrument: Any, caplog: pytest.LogCaptureFixture
) -> None:
    process.reset()  # sites warned about by earlier tests: said again

    def read_request() -> None:
        raise KeyError("x")

    _internal.guarded(read_request)
    _internal.guarded(read_request)
    (point,) = telemetry.points("toolcall.internal_errors")
    assert point.value == 2
    assert point.attributes["error.site"].endswith("read_request")
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1
