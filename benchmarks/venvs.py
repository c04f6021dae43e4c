"""One venv per peer under .bench-venvs/: the peers patch the same SDK methods and pin different
OpenTelemetry versions, so installed side by side they would conflict or wrap each other.

Every venv gets this package (editable, for its fake provider), the same openai and anthropic
versions as the driver's own venv (so every variant reads the same SDK code), the OpenTelemetry SDK,
and its peer packages taken from the ``bench`` extra in pyproject.toml (one source of truth).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from importlib import metadata

try:
    import tomllib
except ImportError:  # Python 3.10: the extra is read with a regular expression instead
    tomllib = None  # type: ignore[assignment]


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENVS = os.path.join(ROOT, ".bench-venvs")

# venv name -> distribution names from the bench extra that go into it.
PEERS: dict[str, tuple[str, ...]] = {
    "base": ("matplotlib",),
    "openllmetry": ("opentelemetry-instrumentation-openai", "opentelemetry-instrumentation-anthropic"),
    # openai-v2 imports httpx, which openai 3.x no longer depends on (it uses httpx2), and
    # opentelemetry.util.genai.instruments, which util-genai 1.x (its successor's) no longer has.
    "otel-openai-v2": ("opentelemetry-instrumentation-openai-v2", "httpx", "opentelemetry-util-genai==0.4b0"),
    "otel-genai-openai": ("opentelemetry-instrumentation-genai-openai",),
    "openinference": ("openinference-instrumentation-openai", "openinference-instrumentation-anthropic"),
}


def _bench_extra() -> dict[str, str]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        raw = f.read()
    if tomllib is not None:
        extra = tomllib.loads(raw.decode())["project"]["optional-dependencies"]["bench"]
    else:
        block = re.search(rb"^bench = \[(.*?)^\]", raw, re.S | re.M)
        extra = re.findall(r'"([^"]+)"', block.group(1).decode()) if block else []
    out = {}
    for requirement in extra:
        name = requirement.split(">", 1)[0].split("=", 1)[0].split("<", 1)[0].strip()
        out[name] = requirement
    return out


def _sdk_pins() -> list[str]:
    pins = []
    for name in ("openai", "anthropic"):
        try:
            pins.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pins.append(name)
    return pins


def python_of(name: str) -> str:
    return os.path.join(VENVS, name, "bin", "python")


def ensure(name: str, *, log: bool = True) -> str | None:
    """The venv's python, created or updated when its requirements changed; None when it cannot install."""
    extra = _bench_extra()
    requirements = [
        "-e",
        ROOT,
        *_sdk_pins(),
        extra["opentelemetry-sdk"],
        # Anything the extra does not list is a plain requirement (httpx for openai-v2, below).
        *(extra.get(peer, peer) for peer in PEERS[name]),
    ]
    path = os.path.join(VENVS, name)
    stamp = os.path.join(path, ".bench-stamp")
    digest = hashlib.sha256(json.dumps(requirements).encode()).hexdigest()
    if os.path.exists(stamp):
        with open(stamp) as f:
            if f.read() == digest:
                return python_of(name)
    if log:
        print(f"[bench] installing venv {name}: {' '.join(requirements[2:])}", file=sys.stderr, flush=True)
    if not os.path.exists(python_of(name)):
        subprocess.run([sys.executable, "-m", "venv", path], check=True)
    pip = [python_of(name), "-m", "pip", "--disable-pip-version-check", "-q", "install"]
    done = subprocess.run([*pip, *requirements], capture_output=True, text=True)
    if done.returncode != 0:
        # A peer that cannot install next to the pinned SDK versions: let pip pick the SDK versions.
        loose = [r for r in requirements if not r.startswith(("openai==", "anthropic=="))]
        done = subprocess.run([*pip, *loose], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"[bench] venv {name} could not install:\n{done.stderr[-2000:]}", file=sys.stderr, flush=True)
        return None
    with open(stamp, "w") as f:
        f.write(digest)
    return python_of(name)


def versions(python: str) -> dict[str, str]:
    """Installed versions of the SDKs, OpenTelemetry and the peers in one venv."""
    code = (
        "import json, importlib.metadata as m\n"
        "out = {}\n"
        "for d in m.distributions():\n"
        "    n = d.metadata['Name'].lower()\n"
        "    if n in ('openai', 'anthropic', 'opentelemetry-sdk', 'opentelemetry-api', 'otel-toolcalls')"
        " or n.startswith(('opentelemetry-instrumentation-', 'openinference-instrumentation-')):\n"
        "        out[n] = d.version\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


if __name__ == "__main__":
    for venv in sys.argv[1:] or list(PEERS):
        print(venv, ensure(venv))
