"""Import order: ``_imports`` waits for the modules an adapter patches, whatever the package layout
(driven in process with small packages written to ``tmp_path``)."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from otel_toolcalls import _imports

# -- _imports in process ----------------------------------------------------------------------------


@pytest.fixture
def packages(tmp_path: Path) -> Any:
    """Writes packages under tmp_path (importable), and forgets their modules afterwards."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)

    def write(files: dict[str, str]) -> None:
        for name, text in files.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        importlib.invalidate_caches()

    yield write
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        del sys.modules[name]


# A namespace package (no nsdk/__init__.py) whose client package imports the patched module first
# and defines more after it, as mistralai 3.x does.
NAMESPACE_SDK = {
    "nsdk/client/__init__.py": "from .chat import Chat\nLAST = 'client finished'\n",
    "nsdk/client/chat.py": "class Chat:\n    def stream(self):\n        return 'chunks'\n",
}


def test_a_namespace_package_fires_once_its_import_has_finished(packages: Any) -> None:
    packages(NAMESPACE_SDK)
    seen: list[Any] = []
    _imports.when_imported(
        ["nsdk.client.chat"], lambda: seen.append(getattr(sys.modules["nsdk.client"], "LAST", None))
    )
    assert seen == []
    from nsdk.client import Chat  # type: ignore[import-not-found]

    # Once, and only after nsdk/client/__init__.py ran to its end (not when chat.py finished).
    assert seen == ["client finished"]
    assert Chat().stream() == "chunks"
    importlib.import_module("nsdk.client.chat")
    assert seen == ["client finished"]


def test_the_module_looks_as_without_the_package(packages: Any) -> None:
    packages(NAMESPACE_SDK)
    _imports.when_imported(["nsdk.client.chat"], lambda: None)
    import nsdk.client.chat  # type: ignore[import-not-found]

    for module in (sys.modules["nsdk.client"], nsdk.client.chat):
        assert type(module.__loader__).__name__ == "SourceFileLoader"
        assert module.__spec__.loader is module.__loader__
    assert sys.modules["nsdk"].__spec__.submodule_search_locations is not None


def test_an_imported_module_fires_at_once_and_a_cancelled_wait_never(packages: Any) -> None:
    packages(NAMESPACE_SDK)
    importlib.import_module("nsdk.client")
    seen: list[str] = []
    _imports.when_imported(["nsdk.client.chat"], lambda: seen.append("now"))
    assert seen == ["now"]
    packages({"other/__init__.py": "", "other/mod.py": "X = 1\n"})
    wait = _imports.when_imported(["other.mod"], lambda: seen.append("never"))
    wait.cancel()
    importlib.import_module("other.mod")
    assert seen == ["now"]


def test_a_failed_import_fires_nothing_and_a_later_one_does(packages: Any) -> None:
    failing = "import os\nif os.environ.get('FLAKY_FAIL'):\n    raise RuntimeError('boom')\n"
    packages({"flaky/__init__.py": "", "flaky/mod.py": failing})
    seen: list[str] = []
    _imports.when_imported(["flaky.mod"], lambda: seen.append("imported"))
    os.environ["FLAKY_FAIL"] = "1"
    try:
        with pytest.raises(RuntimeError):
            importlib.import_module("flaky.mod")
    finally:
        del os.environ["FLAKY_FAIL"]
    assert seen == []
    assert not any(name.startswith("flaky") for name in _imports._running)
    importlib.import_module("flaky.mod")
    assert seen == ["imported"]
