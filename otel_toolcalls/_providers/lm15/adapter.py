"""lm15 from PyPI: its own HTTP client, traced at its stream readers (``streams``)."""

from __future__ import annotations

from otel_toolcalls._core.telemetry import Telemetry
from otel_toolcalls._wiring.patches import Requires

from .streams import Streams

SDK = Streams("lm15")
# What the adapter needs of the SDK (the instrumentor waits for and checks it). No one provider:
# each stream's is the one its lm15 provider class speaks to (streams.PROVIDERS).
REQUIRES = Requires(sdk="lm15", targets=SDK.targets)


def instrument(telemetry: Telemetry) -> bool:
    return SDK.instrument(telemetry)


def uninstrument() -> None:
    SDK.uninstrument()
