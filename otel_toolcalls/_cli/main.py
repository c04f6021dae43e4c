"""``otel-toolcalls`` / ``python -m otel_toolcalls``: one console script, one subcommand per tool.

Each subcommand lives in its own module and is imported only when asked for, so the command line
costs nothing at ``instrument()`` time and a subcommand's dependencies stay its own.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# subcommand -> (module, one-line help); each module has ``main(argv: list[str]) -> int``.
_COMMANDS = {
    "doctor": ("otel_toolcalls._cli.doctor", "what this environment's SDKs and settings will show"),
    "chaos": ("otel_toolcalls.testing.chaos", "a fault-injecting proxy for staging"),
}


def _usage() -> str:
    lines = ["usage: otel-toolcalls COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<8} {text}" for name, (_, text) in _COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in _COMMANDS:
        print(f"otel-toolcalls: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(_COMMANDS[name][0])
    return int(module.main(rest))
