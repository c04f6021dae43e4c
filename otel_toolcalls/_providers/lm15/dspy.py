"""The lm15 DSPy bundles (``dspy._vendor.lm15``, from 3.4): the client of ``dspy.LM``'s default
engine, traced at the same stream readers as the PyPI package's (``streams``)."""

from __future__ import annotations

from otel_toolcalls._wiring.patches import Requires

from .streams import Streams

# The adapter's name (settings, logs, doctor): not its module's.
NAME = "dspy_lm15"
SDK = Streams("dspy._vendor.lm15")
# DSPy before 3.4 bundles no lm15: its targets are not in those releases, not missing.
# dspy.LM's default engine (3.4+): the lm15 DSPy bundles.
REQUIRES = Requires(
    sdk="dspy",
    targets=SDK.targets,
    surfaces=tuple((module, attr.split(".")[0]) for module, attr in SDK.targets),
)

# The SDK object is the adapter: the instrumentor calls these.
instrument = SDK.instrument
uninstrument = SDK.uninstrument
