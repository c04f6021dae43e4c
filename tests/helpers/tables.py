"""``make tables``: every copy of the surfaces' versions, written from their one declaration.

Each adapter module declares its versions in its ``REQUIRES`` (``tested``: each distribution it
answers for, oldest and newest; ``since``: a surface younger than its distribution; ``extra``:
pyproject.toml's extra for it). This script writes from those declarations, and from the modules
that declare a ``REQUIRES`` at all:

- ``ADAPTERS`` in otel_toolcalls/_wiring/adapters.py (an adapter's name: its ``NAME``, else its
  module's, or its folder's for ``<folder>/adapter.py``);
- pyproject.toml's ``instruments-any`` and the adapters' extras, and the floors of the ``test``
  extra (a main-venv extra's distributions added to it);
- ``_instruments_any`` in otel_toolcalls/package.py;
- otel_toolcalls/_wiring/tested_versions.py;
- docs/SUPPORT.md's tested-versions table;
- the framework lanes' pins (tests/frameworks/requirements*.txt) that stood at a distribution's
  oldest or newest move with it (the version lanes read floors from pyproject.toml and newest
  releases from tested_versions.py).

tests/repo/test_tables.py fails when a written file differs from what this writes. A changed pin
is a changed lock input: ``make tables`` runs tests/locks/lock.py for the stale locks after it.

    python tests/helpers/tables.py           # write
    python tests/helpers/tables.py --check   # list the stale files, exit 1 if any
"""

from __future__ import annotations

import importlib
import re
import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "otel_toolcalls"
KINDS = {
    "_providers": "# Provider APIs: their streams become tool-call spans.",
    "_frameworks": (
        "# Code that executes tools: its executions become execute_tool spans linked to their calls."
    ),
}
# Not surfaces: the package's own dependencies and the test tools' (pyproject.toml's dependencies
# and testing extra state their floors).
CORE: dict[str, tuple[str, str]] = {
    "opentelemetry-api": ("1.30.0", "1.45.2"),
    "opentelemetry-sdk": ("1.30.0", "1.45.2"),
    "opentelemetry-instrumentation": ("0.51b0", "0.66b2"),
    "opentelemetry-semantic-conventions": ("0.51b0", "0.66b2"),
    "wrapt": ("1.14.0", "2.5.2"),
}
WRITTEN = "written by `make tables` (tests/helpers/tables.py) from the adapters' REQUIRES"
DASH = " \u2013 "  # docs/SUPPORT.md's range dash


def adapter_modules() -> dict[str, str]:
    """adapter name -> module, for every module under _providers/ and _frameworks/ with a REQUIRES."""
    found: dict[str, str] = {}
    for kind in KINDS:
        for path in sorted((PACKAGE / kind).rglob("*.py")):
            text = path.read_text()
            if not re.search(r"^REQUIRES = Requires\(", text, re.MULTILINE):
                continue
            named = re.search(r'^NAME = "(\w+)"$', text, re.MULTILINE)
            name = named.group(1) if named else path.parent.name if path.stem == "adapter" else path.stem
            if name in found:
                raise SystemExit(f"two adapters named {name}: {found[name]}, {path}")
            found[name] = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return found


def declarations() -> dict[str, Any]:
    """adapter name -> its REQUIRES, sorted by name."""
    modules = adapter_modules()
    return {name: importlib.import_module(modules[name]).REQUIRES for name in sorted(modules)}


def ranges(core: bool = True) -> dict[str, tuple[str, str]]:
    """distribution -> (oldest, newest), the adapters' then (``core``) the package's own."""
    out: dict[str, tuple[str, str]] = {}
    for name, requires in declarations().items():
        for each in requires.tested:
            if each.dist in out:
                raise SystemExit(f"{name}: {each.dist} is declared by another adapter too")
            out[each.dist] = (each.oldest, each.newest)
    for name, requires in declarations().items():
        if requires.sdk not in out:
            raise SystemExit(f"{name}: no adapter declares the tested range of {requires.sdk}")
    return {**out, **CORE} if core else out


def surfaces() -> dict[str, tuple[str, str]]:
    tested = ranges()
    return {name: (r.since, tested[r.sdk][1]) for name, r in declarations().items() if r.since}


def _floor(requirement: str, tested: dict[str, tuple[str, str]]) -> str:
    """A bare declared distribution at its oldest; a whole requirement as it is."""
    base = requirement.split("[", 1)[0]
    return f"{requirement}>={tested[base][0]}" if base in tested else requirement


def extras() -> dict[str, list[str]]:
    tested = ranges()
    out = {}
    for r in declarations().values():
        if r.extra is not None:
            out[r.extra.name] = [_floor(each, tested) for each in r.extra.installs or (r.sdk,)]
    return dict(sorted(out.items()))


def instruments_any() -> list[str]:
    tested = ranges()
    sdks = sorted({r.sdk for r in declarations().values()}, key=canonicalize_name)
    return [f"{sdk}>={tested[sdk][0]}" for sdk in sdks]


def _between(text: str, begin: str, end: str, body: str) -> str:
    start = text.index(begin) + len(begin)
    return text[:start] + body + text[text.index(end, start) :]


def write_adapters(text: str) -> str:
    modules = adapter_modules()
    lines = []
    for kind, comment in KINDS.items():
        lines.append(f"    {comment}")
        for name, module in sorted(modules.items()):
            if module.split(".")[1] == kind:
                rest = module.split(".", 2)[2]
                lines.append(f'    "{name}": f"{{{"_P" if kind == "_providers" else "_F"}}}.{rest}",')
    return _between(text, "ADAPTERS: dict[str, str] = {\n", "\n}\n", "\n".join(lines))


PYPROJECT_BEGIN = f"# The extras below are {WRITTEN}.\n"
PYPROJECT_END = "# The extras above are written.\n"
REQUIREMENT = re.compile(r'^(\s*")([A-Za-z0-9_.-]+)(\[[^\]]*\])?>=([^",]+)(".*)$')


def _test_extra(text: str) -> str:
    """The test extra's floors of declared distributions, in place; a main-venv extra's missing ones
    added at its end."""
    tested = ranges(core=False)
    begin = text.index("\ntest = [\n") + len("\ntest = [\n")
    end = text.index("\n]\n", begin)
    lines, present = [], set()
    for line in text[begin:end].split("\n"):
        found = REQUIREMENT.match(line)
        if found and found.group(2) in tested:
            lead, name, bracket, _, tail = found.groups()
            line = f"{lead}{name}{bracket or ''}>={tested[name][0]}{tail}"
        if found:
            present.add(canonicalize_name(found.group(2)))
        lines.append(line)
    for r in declarations().values():
        if r.extra is None or not r.extra.main_venv:
            continue
        for each in r.extra.installs or (r.sdk,):
            spec = _floor(each, tested)
            if canonicalize_name(re.split(r"[\[<>=]", spec, maxsplit=1)[0]) not in present:
                present.add(canonicalize_name(re.split(r"[\[<>=]", spec, maxsplit=1)[0]))
                lines.append(f'    "{spec}",')
    return text[:begin] + "\n".join(lines) + text[end:]


def write_pyproject(text: str) -> str:
    def listed(name: str, items: list[str]) -> str:
        quoted = [f'"{each}"' for each in items]
        if len(items) <= 2:
            return f"{name} = [{', '.join(quoted)}]\n"
        return f"{name} = [\n" + "".join(f'    "{each}",\n' for each in items) + "]\n"

    body = (
        "# `opentelemetry-instrument` loads the instrumentor when any one of these is installed: every\n"
        "# distribution an adapter patches, at its oldest tested release.\n"
        + listed("instruments-any", instruments_any())
        + "".join(listed(name, items) for name, items in extras().items())
    )
    return _test_extra(_between(text, PYPROJECT_BEGIN, PYPROJECT_END, body))


def write_package(text: str) -> str:
    body = "".join(f'    "{each}",\n' for each in instruments_any())
    return _between(text, "_instruments_any = (\n", ")\n", body)


def write_tested_versions(_: str) -> str:
    owners = {each.dist: name for name, r in declarations().items() for each in r.tested}
    rows = [
        f'    "{dist}": ("{oldest}", "{newest}"),  # {owners.get(dist, "the package itself")}'
        for dist, (oldest, newest) in ranges().items()
    ]
    since = [f'    "{name}": ("{a}", "{b}"),' for name, (a, b) in surfaces().items()]
    return "\n".join(
        [
            '"""The versions each supported distribution was tested at: (oldest, newest).',
            "",
            f"{WRITTEN[0].upper()}{WRITTEN[1:]}: do not edit. Each",
            "row names the adapter that declares it (its module says why the oldest is there).",
            "``otel-toolcalls doctor`` reads it; the version and framework lanes run its ends.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "TESTED: dict[str, tuple[str, str]] = {",
            *rows,
            "}",
            "",
            "# Adapters that cover a surface younger than their distribution's oldest: the range that",
            "# surface was tested at (doctor shows it on the adapter's row).",
            "SURFACES: dict[str, tuple[str, str]] = {",
            *since,
            "}",
            "",
        ]
    )


SUPPORT_BEGIN = f"<!-- tested versions: {WRITTEN} -->\n"
SUPPORT_END = "<!-- end of the written table -->"


def write_support(text: str) -> str:
    adapters: dict[str, list[str]] = {}
    for name, r in declarations().items():
        adapters.setdefault(r.sdk, []).append(name)
    since = surfaces()
    rows = ["| distribution | adapters | oldest tested | newest tested |", "|---|---|---|---|"]
    for dist, (oldest, newest) in ranges().items():
        names = [
            f"`{a}`" + (f" ({since[a][0]}{DASH}{since[a][1]})" if a in since else "")
            for a in adapters.get(dist, [])
        ]
        rows.append(f"| `{dist}` | {', '.join(names) or 'none (tested beside them)'} | {oldest} | {newest} |")
    return _between(text, SUPPORT_BEGIN, SUPPORT_END, "\n".join(rows) + "\n")


def _old_ranges() -> dict[str, tuple[str, str]]:
    """The ranges as tested_versions.py states them now (before this run writes it)."""
    return runpy.run_path(str(PACKAGE / "_wiring" / "tested_versions.py"))["TESTED"]


def write_lane_pins(text: str) -> str:
    """A pin at the written oldest or newest of a declared distribution moves to the declared one."""
    old, new = _old_ranges(), ranges()

    def moved(found: re.Match[str]) -> str:
        name, version = found.group(1), found.group(3)
        base = next((d for d in new if canonicalize_name(d) == canonicalize_name(name)), None)
        if base is None or base not in old:
            return found.group(0)
        for before, after in zip(old[base], new[base], strict=True):
            if version == before:
                return f"{name}{found.group(2) or ''}=={after}"
        return found.group(0)

    return re.sub(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?==(\S+)", moved, text, flags=re.MULTILINE)


def writers() -> dict[Path, Callable[[str], str]]:
    lanes: dict[Path, Callable[[str], str]] = {
        path: write_lane_pins for path in sorted((ROOT / "tests" / "frameworks").glob("requirements*.txt"))
    }
    return {
        PACKAGE / "_wiring" / "adapters.py": write_adapters,
        ROOT / "pyproject.toml": write_pyproject,
        PACKAGE / "package.py": write_package,
        **lanes,  # before tested_versions.py: they move from what it states now
        PACKAGE / "_wiring" / "tested_versions.py": write_tested_versions,
        ROOT / "docs" / "SUPPORT.md": write_support,
    }


def stale() -> dict[Path, str]:
    """Each written file that differs from what ``make tables`` writes -> what it writes."""
    out = {}
    for path, write in writers().items():
        text = path.read_text()
        written = write(text)
        if written != text:
            out[path] = written
    return out


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    found = stale()
    for path, written in found.items():
        if "--check" not in argv:
            path.write_text(written)
        print(f"{'stale' if '--check' in argv else 'wrote'} {path.relative_to(ROOT)}")
    return 1 if found and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
