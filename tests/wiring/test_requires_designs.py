"""``Requires.earlier``: an SDK that moved the code an adapter hooks declares each design's targets;
the installed release's version picks the one the adapter wraps, ``doctor`` counts and the missing-
target warning names. Read against a real installed distribution (wrapt)."""

from __future__ import annotations

import importlib.metadata

from packaging.version import Version

from otel_toolcalls._wiring.patches import Earlier, Requires

INSTALLED = Version(importlib.metadata.version("wrapt"))
NEXT, AFTER_NEXT = f"{INSTALLED.major + 1}.0", f"{INSTALLED.major + 2}.0"
NEWEST = (("wrapt", "wrap_function_wrapper"),)
OLDER = (("wrapt", "FunctionWrapper"),)
OLDEST = (("wrapt.gone_module", "ObjectProxy"),)


def test_a_release_from_a_designs_until_on_has_the_newer_design() -> None:
    req = Requires(sdk="wrapt", targets=NEWEST, earlier=(Earlier(str(INSTALLED), OLDER),))
    assert req.installed_targets() == NEWEST


def test_a_release_before_until_has_the_older_design() -> None:
    assert Requires(sdk="wrapt", targets=NEWEST, earlier=(Earlier(NEXT, OLDER),)).installed_targets() == OLDER


def test_of_two_older_designs_the_nearest_until_wins_in_any_order() -> None:
    for earlier in [(Earlier(NEXT, OLDER), Earlier(AFTER_NEXT, OLDEST)),
                    (Earlier(AFTER_NEXT, OLDEST), Earlier(NEXT, OLDER))]:  # fmt: skip
        assert Requires(sdk="wrapt", targets=NEWEST, earlier=earlier).installed_targets() == OLDER


def test_an_sdk_not_installed_has_the_newest_design() -> None:
    req = Requires(sdk="no-such-distribution", targets=NEWEST, earlier=(Earlier(NEXT, OLDER),))
    assert req.installed_targets() == NEWEST


def test_every_designs_modules_are_waited_for_but_only_the_current_is_checked() -> None:
    req = Requires(sdk="wrapt", targets=OLDEST, earlier=(Earlier(NEXT, NEWEST),))
    assert req.modules == ("wrapt.gone_module", "wrapt")
    assert req.missing() == []  # the installed release's design (NEWEST) is all there
    moved = Requires(sdk="wrapt", targets=NEWEST, earlier=(Earlier(NEXT, OLDEST),))
    assert moved.missing() == ["wrapt.gone_module.ObjectProxy"]
