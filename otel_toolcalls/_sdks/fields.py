"""A wire event that arrives as a JSON object (a dict), read by attribute as the translators read
the SDKs' parsed event objects: for programs that hand us the dict, not the SDK's object."""

from __future__ import annotations

from typing import Any


class Fields:
    """Each key as an attribute, a missing one None, a nested object as Fields, a list its items
    as Fields; nothing copied but the lists."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        return _read(self._data.get(name))


def _read(value: Any) -> Any:
    if isinstance(value, dict):
        return Fields(value)
    if isinstance(value, list):
        return [_read(item) for item in value]
    return value
