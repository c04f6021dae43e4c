"""The adapters whose SDK or framework this venv has (the frameworks live in venvs of their own)."""

from __future__ import annotations

import importlib
import importlib.metadata

from otel_toolcalls._adapters import adapter_names


def installed_adapter_names() -> list[str]:
    names = []
    for name in adapter_names():
        requires = importlib.import_module(f"otel_toolcalls._adapters.{name}").REQUIRES
        try:
            importlib.metadata.version(requires.sdk)
        except importlib.metadata.PackageNotFoundError:
            continue
        names.append(name)
    return names
