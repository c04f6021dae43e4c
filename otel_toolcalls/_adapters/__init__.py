"""One module per provider SDK or framework; each exposes ``REQUIRES`` (a ``_patches.Requires``:
the SDK's distribution, every attribute it patches, its provider name), ``instrument(telemetry) ->
bool`` and ``uninstrument()``.

Modules whose name starts with an underscore are shared translators and helpers, not adapters.
Adding a provider is adding one module here (and its tests): the instrumentor finds it.
"""

from __future__ import annotations

import pkgutil


def adapter_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
