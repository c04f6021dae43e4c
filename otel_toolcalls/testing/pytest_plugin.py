"""The pytest plugin: fixtures ``toolcalls`` and ``fake_llm``, and the ``toolcalls`` marker for
instrumentor settings. Opt-in, as contrib's test helpers are: ``pytest_plugins =
["otel_toolcalls.testing.pytest_plugin"]`` in a conftest.py, or ``-p otel_toolcalls.testing.pytest_plugin``.

    @pytest.mark.toolcalls(strict=True)          # optional: instrument() keywords for this test
    def test_loop(toolcalls, fake_llm): ...

It imports nothing at load time: the SDK, the instrumentor and the fake are imported when a test
asks for a fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .recorder import ToolCalls
    from .scenario import FakeLLM


TEST_BUFFERED_WINDOW_MS = 250


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "toolcalls(**settings): instrument() keywords for the toolcalls fixture (e.g. strict=True)"
    )


@pytest.fixture
def toolcalls(request: pytest.FixtureRequest) -> Iterator[ToolCalls]:
    """The instrumentor on in-memory exporters for this test, off again after it (settings from the
    ``toolcalls`` marker; ``buffered_window_ms`` defaults to 250 here)."""
    from .recorder import ToolCalls

    marker = request.node.get_closest_marker("toolcalls")
    # A burst's chunks reach the consumer within microseconds, but a loaded CI machine can
    # deschedule it for longer than the production window (10 ms): a wider one keeps the
    # ``buffer`` fault's signal from depending on the machine's load. The marker can set it back.
    settings: dict[str, Any] = {"buffered_window_ms": TEST_BUFFERED_WINDOW_MS}
    settings.update(marker.kwargs if marker else {})
    recorder = ToolCalls(**settings)
    try:
        yield recorder
    finally:
        recorder.close()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """The fake provider for this test: ``fake_llm.openai`` / ``.responses`` / ``.anthropic`` /
    ``.bedrock`` each have ``reply(...)``, ``base_url``, ``client``, ``async_client`` (not for
    Bedrock: botocore has none) and ``sent``."""
    from .scenario import FakeLLM

    llm = FakeLLM()
    llm.start()
    try:
        yield llm
    finally:
        llm.stop()
