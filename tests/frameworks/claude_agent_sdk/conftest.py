"""The Claude Agent SDK's tests drive the real CLI: their fake endpoint also answers the CLI's
own side requests (``CLIFake``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_toolcalls.testing.claude_code import CLIFake


@pytest.fixture(scope="module")
def shared_provider() -> Iterator[CLIFake]:
    with CLIFake() as provider:
        yield provider
