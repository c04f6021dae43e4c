"""lm15 from PyPI: its own HTTP client, traced at its stream readers (``streams``)."""

from __future__ import annotations

from otel_toolcalls._wiring.patches import Extra, Requires, Tested

from .streams import Streams

SDK = Streams("lm15")
# What the adapter needs of the SDK (the instrumentor waits for and checks it). No one provider:
# each stream's is the one its lm15 provider class speaks to (streams.PROVIDERS).
# lm15: 0.9.9 (2026-09-15), its first release on PyPI; BaseProviderLM.stream /
#   AsyncBaseProviderLM.stream and the canonical events are the same from it to 1.5.0. Lanes
#   lm15-floor, lm15 (newest).
REQUIRES = Requires(
    sdk="lm15", targets=SDK.targets,
    tested=(Tested("lm15", "0.9.9", "1.5.0"),),
    extra=Extra("lm15"),
)

# The SDK object is the adapter: the instrumentor calls these.
instrument = SDK.instrument
uninstrument = SDK.uninstrument
