"""Runs Arize Phoenix (in .venv-viewer) on loopback only, with nothing phoning out.

Phoenix binds its HTTP port to PHOENIX_HOST, but its OTLP/gRPC receiver to every interface
("[::]:port") whatever the host: that bind is rewritten to 127.0.0.1 before the server starts.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import grpc

# No telemetry pixels, web fonts or downloads; no assistant, MCP or docs server reaching out.
QUIET = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    "PHOENIX_ENABLE_MCP_SERVER": "false",
    "PHOENIX_ENABLE_PROMETHEUS": "false",
}


def _loopback(address: str) -> str:
    host, _, port = address.rpartition(":")
    if host not in ("[::]", "0.0.0.0", ""):
        return address
    return f"127.0.0.1:{port}"


def _loopback_grpc() -> None:
    make_server = grpc.aio.server

    def server(*args: Any, **kwargs: Any) -> Any:
        made = make_server(*args, **kwargs)
        insecure, secure = made.add_insecure_port, made.add_secure_port
        made.add_insecure_port = lambda address: insecure(_loopback(address))
        made.add_secure_port = lambda address, credentials: secure(_loopback(address), credentials)
        return made

    grpc.aio.server = server


def main() -> None:
    for name, value in QUIET.items():
        os.environ[name] = value
    os.environ["PHOENIX_HOST"] = "127.0.0.1"
    _loopback_grpc()
    from phoenix.server.main import main as phoenix_main

    sys.argv = ["phoenix", "serve"]
    phoenix_main()


if __name__ == "__main__":
    main()
