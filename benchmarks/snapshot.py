"""Imports otel_toolcalls from a copy of the package (a commit's snapshot: ``git archive <commit> |
tar -x -C DIR``) instead of the development install, to measure a commit against another.

The dev venv installs the package editable: its finder, on ``sys.meta_path``, answers ``import
otel_toolcalls`` from the worktree whatever ``PYTHONPATH`` says, so a snapshot put on
``PYTHONPATH`` measures the worktree. ``use`` drops that finder first, and checks where the
package came from.
"""

from __future__ import annotations

import os
import sys


def _is_editable_finder(finder: object) -> bool:
    # setuptools' editable finder: a class in the module __editable___otel_toolcalls_<version>_finder.
    module = getattr(finder, "__module__", "") or type(finder).__module__
    return module.startswith("__editable__") and "otel_toolcalls" in module


def use(directory: str) -> str:
    """Makes ``import otel_toolcalls`` load ``directory``/otel_toolcalls; call it before anything
    imports the package. Returns the package's ``__init__`` path; exits if it came from elsewhere."""
    directory = os.path.abspath(directory)
    sys.meta_path[:] = [finder for finder in sys.meta_path if not _is_editable_finder(finder)]
    sys.path.insert(0, directory)
    import otel_toolcalls

    origin = os.path.abspath(otel_toolcalls.__file__ or "")
    if not origin.startswith(directory + os.sep):
        raise SystemExit(f"otel_toolcalls came from {origin}, not from the snapshot {directory}")
    return origin
