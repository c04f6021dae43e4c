"""The package's import graph, read from its source: no circle (type-only and function-level imports
included), no private name taken from another module, a private module used only inside its own
subpackage, layers that depend one way, and a core that imports no SDK."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import otel_toolcalls

ROOT = Path(otel_toolcalls.__file__).parent
PACKAGE = "otel_toolcalls"

# Each layer and the layers it may import; the instrumentor reaches the adapters only through the
# table's module paths (importlib), never by an import statement.
LAYERS: dict[str, set[str]] = {
    "version": set(),
    "package": set(),
    "_config": set(),
    "_core": {"_config", "version"},
    "_linking": {"_core", "_config"},
    "_wiring": {"_core", "_linking", "_config", "package"},
    # What the provider adapters share about SDK objects (Stainless patches, hand-backs, servers).
    "_sdks": {"_core", "_wiring", "_config"},
    "_providers": {"_core", "_linking", "_wiring", "_sdks", "_config"},
    "_frameworks": {"_core", "_linking", "_wiring", "_sdks", "_providers", "_config"},
    "_cli": {"_core", "_linking", "_wiring", "_config", "version"},
    # The fake provider reads what a request sent with the translators' own history readers.
    "testing": {"_core", "_wiring", "_config", "_linking", "_providers"},
    "__main__": {"_cli"},
    "": {"_core", "_linking", "_wiring", "version"},  # the package's __init__: the public surface
}
# What the core may import from outside the standard library.
CORE_THIRD_PARTY = {"opentelemetry", "wrapt"}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # a module of the package
    name: str | None  # the name taken from it (None: the module itself)
    line: int


def _module_of(path: Path) -> tuple[str, str]:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


MODULES = {_module_of(p)[0]: p for p in ROOT.rglob("*.py")}


def _resolve(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports() -> Iterator[Import]:
    for module, path in MODULES.items():
        package = _module_of(path)[1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE:
                        yield Import(module, alias.name, None, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(node, package)
                if target.split(".")[0] != PACKAGE:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:
                        yield Import(module, sub, None, node.lineno)
                    else:
                        yield Import(module, target, alias.name, node.lineno)


def _third_party(module: str) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top != PACKAGE and top not in sys.stdlib_module_names:
                yield top, node.lineno


def _layer(module: str) -> str:
    parts = module.split(".")[1:]
    return parts[0] if parts else ""


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in _imports():
        if imp.target != imp.importer and imp.target in MODULES:
            edges[imp.importer].add(imp.target)
    return edges


def test_no_import_circle() -> None:
    assert _cycles(_edges()) == []


def test_the_check_sees_a_circle() -> None:
    # It would pass on a graph it cannot read.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert sum(len(targets) for targets in _edges().values()) > 200


def test_no_private_name_from_another_module() -> None:
    taken = [
        f"{i.importer}:{i.line} takes {i.name} from {i.target}"
        for i in _imports()
        if i.name is not None and i.name.startswith("_") and not i.name.startswith("__")
    ]
    assert taken == []


def test_a_private_module_is_used_only_inside_its_subpackage() -> None:
    outside = []
    for i in _imports():
        owner, _, leaf = i.target.rpartition(".")
        if leaf.startswith("_") and not leaf.startswith("__"):
            importer_package = _module_of(MODULES[i.importer])[1]
            if not (importer_package == owner or importer_package.startswith(owner + ".")):
                outside.append(f"{i.importer}:{i.line} imports {i.target}")
    assert outside == []


def test_layers_depend_one_way() -> None:
    wrong = sorted(
        f"{i.importer}:{i.line} ({_layer(i.importer) or 'otel_toolcalls'}) imports {i.target}"
        for i in _imports()
        if _layer(i.target) != _layer(i.importer) and _layer(i.target) not in LAYERS[_layer(i.importer)]
    )
    assert wrong == []
    assert {_layer(m) for m in MODULES} <= set(LAYERS)


def test_the_core_imports_no_sdk() -> None:
    found = {
        f"{module}:{line} imports {top}"
        for module in MODULES
        if _layer(module) == "_core"
        for top, line in _third_party(module)
        if top not in CORE_THIRD_PARTY
    }
    assert found == set()


def _imported_names(module: str) -> set[str]:
    """Names a module binds at its top level by importing them."""
    names = set()
    for node in ast.parse(MODULES[module].read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


# The public surfaces, which re-export by design.
SURFACES = {PACKAGE, f"{PACKAGE}.testing"}


def test_one_path_to_each_name() -> None:
    # A name is imported from the module that defines it, never through another that imported it.
    relayed = sorted(
        f"{i.importer}:{i.line} takes {i.name} from {i.target}, which imports it"
        for i in _imports()
        if i.name is not None and i.target not in SURFACES and i.name in _imported_names(i.target)
    )
    assert relayed == []


# -- a core that names no provider -----------------------------------------------------------------

# The core names no peer instrumentation's scope (they are in _linking/peer_spans.py).
PEER_SCOPES: set[str] = set()
# Parts of distribution names that are no provider's.
GENERIC_WORDS = {
    "genai", "google", "hub", "ai", "realtime", "responses", "ws", "live", "sdk", "runtime", "bidi"
}  # fmt: skip


def _provider_words() -> set[str]:
    """Every provider adapter's table name, SDK distribution and ``gen_ai.provider.name``, and their parts."""
    from otel_toolcalls._wiring.adapters import ADAPTERS, load

    words = set()
    for name, path in ADAPTERS.items():
        if path.startswith(f"{PACKAGE}._providers."):
            requires = load(name).REQUIRES
            for word in (name, requires.sdk, requires.provider or ""):
                word = word.lower().replace("-", "_")
                words |= {word, *re.split(r"[._]", word)}
    return words - GENERIC_WORDS - {""}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
    }


def _named(source: str, words: set[str]) -> list[tuple[int, str]]:
    """(line, text) of each identifier, import or string in ``source`` (docstrings and comments,
    which say what the core serves, left out) that names one of ``words`` or the adapters' layers."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    pattern = re.compile(r"(?<![a-z0-9])(" + "|".join(map(re.escape, sorted(words))) + r")(?![a-z0-9])")
    found = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            texts = [node.name]
        elif isinstance(node, ast.arg):
            texts = [node.arg]
        elif isinstance(node, ast.alias):
            texts = [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            texts = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            texts = [] if node.value in PEER_SCOPES else [node.value]
        for text in texts:
            if pattern.search(text.lower()) or "_providers" in text or "_frameworks" in text:
                found.append((getattr(node, "lineno", 0), text))
    return found


def test_the_core_names_no_provider() -> None:
    words = _provider_words()
    found = [
        f"{module}:{line} {text!r}"
        for module, path in sorted(MODULES.items())
        if _layer(module) == "_core"
        for line, text in _named(path.read_text(), words)
    ]
    assert found == []


def test_the_check_sees_a_provider_in_the_core() -> None:
    # It would pass on words it does not have, or on code it does not read.
    words = _provider_words()
    assert {"openai", "anthropic", "bedrock", "gemini", "cohere", "mistral", "ollama", "groq"} <= words
    planted = '''
"""Docstrings may name openai."""
from otel_toolcalls._providers.formats import chat_completions
def gemini_usage(metadata):
    return metadata.get("cacheReadInputTokens"), "aws.bedrock"
SCOPE = "opentelemetry.instrumentation.openai_v2"
'''
    assert [text for _, text in _named(planted, words)] == [
        "otel_toolcalls._providers.formats",
        "gemini_usage",
        "opentelemetry.instrumentation.openai_v2",  # a peer's scope: _linking/peer_spans.py
        "aws.bedrock",
    ]


# Modules that hold only translators (chunk -> Sink calls), and the core vocabulary they may use:
# never the stream's state or its end (StreamState, Request, the wrappers); the adapter owns those.
TRANSLATORS = {
    f"{PACKAGE}._providers.formats.anthropic_messages",
    f"{PACKAGE}._providers.formats.chat_completions",
    f"{PACKAGE}._providers.formats.responses",
    f"{PACKAGE}._providers.bedrock.converse",
    f"{PACKAGE}._providers.bedrock.invoke",
    f"{PACKAGE}._providers.gemini.chunks",
    f"{PACKAGE}._providers.openai.realtime_events",
}
VOCABULARY = {f"{PACKAGE}._core.{m}" for m in ("names", "usage", "replay", "sink", "calls")}


def test_translators_use_the_sink_alone() -> None:
    assert set(MODULES) >= TRANSLATORS
    found = sorted(
        f"{i.importer}:{i.line} imports {i.target}"
        for i in _imports()
        if i.importer in TRANSLATORS and _layer(i.target) == "_core" and i.target not in VOCABULARY
    )
    assert found == []


def _not_adapters(modules: set[str], adapters: set[str]) -> list[str]:
    """Modules of ``_providers`` that are neither an adapter of the table, nor a part of one (a module
    in the folder of an ``adapter`` module), nor a shared wire format's translator (``formats/``)."""
    folders = {a.rsplit(".", 1)[0] for a in adapters if a.endswith(".adapter")}
    providers = f"{PACKAGE}._providers"
    return sorted(
        m
        for m in modules
        if _layer(m) == "_providers"
        and m != providers
        and m not in adapters
        and m.rsplit(".", 1)[0] not in folders
        and m not in folders
        and not (m.startswith(f"{providers}.formats") and (m in TRANSLATORS or m == f"{providers}.formats"))
    )


def test_providers_holds_only_adapters() -> None:
    from otel_toolcalls._wiring.adapters import ADAPTERS

    adapters = set(ADAPTERS.values())
    assert _not_adapters(set(MODULES), adapters) == []
    # and what the adapters share holds none
    assert [a for a in adapters if _layer(a) == "_sdks"] == []


def test_the_check_sees_plumbing_among_the_adapters() -> None:
    from otel_toolcalls._wiring.adapters import ADAPTERS

    planted = {f"{PACKAGE}._providers.servers", f"{PACKAGE}._providers.formats.helpers"}
    assert _not_adapters(set(MODULES) | planted, set(ADAPTERS.values())) == sorted(planted)


def _process_names(source: str) -> list[str]:
    """Functions and module-level names called ``process_*``: the translators' old verb."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.name)
        elif isinstance(node, ast.Assign):
            found += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [name for name in found if name.startswith("process_")]


def test_translators_are_named_translate() -> None:
    # One verb for one idea (sink.Translator): a translator is translate_<what the SDK hands over>.
    # Realtime's events are dispatched by the session's translate_event (openai/realtime.py) to the
    # per-event handlers of realtime_events.RESPONSE_EVENTS: no translate_ of its own.
    dispatched = {f"{PACKAGE}._providers.openai.realtime_events"}
    unnamed = [
        m for m in TRANSLATORS - dispatched if not any(x.startswith("translate_") for x in vars(_load(m)))
    ]
    assert unnamed == []
    found = [
        f"{module}: {name}"
        for module, path in sorted(MODULES.items())
        if _layer(module) in ("_core", "_sdks", "_providers")
        for name in _process_names(path.read_text())
    ]
    assert found == []
    assert _process_names("def process_chunk(state, chunk): ...\nprocess_event = by_type()") == [
        "process_chunk",
        "process_event",
    ]


def _load(module: str) -> object:
    import importlib

    return importlib.import_module(module)
