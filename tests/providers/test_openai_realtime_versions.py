"""An openai release from before a Realtime surface: not in this version, not a missing target. Runs
in every openai version lane (1.40 has no Realtime client, 1.58 only ``client.beta.realtime``)."""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

import pytest

from otel_toolcalls._cli import doctor as _doctor
from otel_toolcalls._providers.openai import realtime as openai_realtime
from otel_toolcalls._providers.openai import responses_ws as openai_responses_ws
from otel_toolcalls._wiring.instrumentor import _report_missing, _reported
from otel_toolcalls._wiring.patches import Requires


def _present(module: str) -> bool:
    return importlib.util.find_spec(module.rpartition(".")[0]) is not None


def test_a_surface_the_release_lacks_is_absent_and_a_target_it_lacks_is_missing() -> None:
    requires = Requires(
        sdk="openai",
        targets=(
            ("openai.resources.no_such_api.api", "Api.connect"),
            ("openai._streaming", "NoSuchStream.__stream__"),
            ("openai._streaming", "Stream.nothing"),
        ),
        surfaces=(("openai.resources.no_such_api.api", "Api"), ("openai._streaming", "NoSuchStream")),
    )
    # A module the release lacks, or one without the surface's marker: absent, not missing.
    assert requires.absent_modules() == ["openai.resources.no_such_api.api", "openai._streaming"]
    assert requires.missing() == []
    # A release with the surface that lacks a target: missing.
    present = Requires(
        sdk="openai", targets=requires.targets[2:], surfaces=(("openai._streaming", "Stream"),)
    )
    assert (present.absent_modules(), present.missing()) == ([], ["openai._streaming.Stream.nothing"])


def test_instrumenting_this_release_warns_about_nothing(
    instrument: Any, caplog: pytest.LogCaptureFixture
) -> None:
    present = [module for module in openai_realtime.MODULES if _present(module)]
    with caplog.at_level(logging.WARNING, logger="otel_toolcalls"):
        instrument()
        for module in present:
            __import__(module)
        _reported.discard("openai_realtime")
        _report_missing("openai_realtime", openai_realtime)
        # The Responses API's WebSocket (2.22 on): absent before it, never a warning.
        _reported.discard("openai_responses_ws")
        _report_missing("openai_responses_ws", openai_responses_ws)
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("otel_toolcalls")]
    assert openai_realtime.REQUIRES.missing() == openai_responses_ws.REQUIRES.missing() == []
    assert openai_realtime.REQUIRES.absent_modules() == [
        m for m in openai_realtime.MODULES if m not in present
    ]


def test_doctor_says_not_in_this_version() -> None:
    row = _doctor._sdk_row("openai_realtime")
    absent = [m for m in openai_realtime.MODULES if not _present(m)]
    assert (row["absent"], row["missing"], row["import_errors"]) == (absent, [], [])
    # The instrumentor applies the adapter where the release has one of its surfaces.
    row["applies"] = len(absent) < len(openai_realtime.MODULES)
    assert _doctor._unseen(row) is False
    rendered = "\n".join(_doctor._sdk_lines([{**row, "unseen": False}]))
    for module in absent:
        assert f"not in this version: {module}" in rendered
    assert ("yes" if row["applies"] else "-") in rendered.split()
    assert f"{row['targets'] - row['absent_targets']}/{row['targets']}" in rendered
    # The same row with a target the release lacks is unseen.
    assert _doctor._unseen({**row, "missing": ["openai.x.Y.z"]}) is True
