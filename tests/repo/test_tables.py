"""Every copy of the surfaces' versions is written by `make tables` (tests/helpers/tables.py) from the
adapters' ``REQUIRES``: ``ADAPTERS``, pyproject.toml's extras, ``package._instruments_any``,
``tested_versions.py``, docs/SUPPORT.md's table and the framework lanes' pins. A file that differs
from what it writes was edited by hand or not written again after a declaration changed."""

from __future__ import annotations

import tables
from packaging.requirements import Requirement

from otel_toolcalls import package
from otel_toolcalls._wiring.adapters import adapter_names, load


def test_no_written_file_is_stale() -> None:
    stale = [str(path.relative_to(tables.ROOT)) for path in tables.stale()]
    assert stale == [], "run `make tables` (then `make lock` if a lock input moved)"


def test_every_adapter_is_written_with_its_distribution_at_its_oldest() -> None:
    # What opentelemetry-instrument loads the package for names every adapter's distribution.
    listed = {Requirement(each).name: Requirement(each) for each in package._instruments_any}
    tested = tables.ranges()
    for name in adapter_names():
        sdk = load(name).REQUIRES.sdk
        assert sdk in listed, name
        assert listed[sdk].specifier.contains(tested[sdk][0]), name
    assert sorted(tables.adapter_modules()) == adapter_names()


def test_each_writer_undoes_an_edit_by_hand() -> None:
    # The groq floor edited in each copy that states it: written again, each is what it was.
    for path, write in tables.writers().items():
        text = path.read_text()
        edited = text.replace("groq>=0.11", "groq>=0.9").replace('"groq": ("0.11"', '"groq": ("0.9"')
        edited = edited.replace("| `groq` | `groq` | 0.11 |", "| `groq` | `groq` | 0.9 |")
        if edited != text:
            assert write(edited) == text, path
    assert sum(
        "groq" in path.read_text() and path.suffix != ".txt" for path in tables.writers()
    ) == 5  # adapters.py, pyproject.toml, package.py, tested_versions.py, SUPPORT.md
