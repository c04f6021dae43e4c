"""A fake LLM provider for tests and demos: real wire bytes on 127.0.0.1, no API key.

Users can reuse it in their own tests: queue a script, point the real SDK client at ``base_url``.
"""

from ._fragments import awkward_points, awkward_split, split_at, split_mid_character, sse
from ._server import FakeProvider, ReceivedRequest, Script

__all__ = [
    "FakeProvider",
    "ReceivedRequest",
    "Script",
    "awkward_points",
    "awkward_split",
    "split_at",
    "split_mid_character",
    "sse",
]
