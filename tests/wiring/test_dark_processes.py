"""A process with one distribution of the ``instruments-any`` extra and no provider SDK, under
``opentelemetry-instrument``: an MCP tool server (the ``mcp-alone`` version lane) and a worker
running LangChain tools (``langchain-alone``). Each lane's venv holds that distribution at the
extra's floor, the package and opentelemetry-distro; elsewhere these tests skip. Each case runs
beside a control, the same process with ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=toolcalls``: what
the instrumentor changes is seen, so a dark process fails the case."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from console_spans import console_spans
from packaging.requirements import Requirement

from otel_toolcalls import package


def _installed(requirement: str) -> bool:
    try:
        importlib.metadata.version(Requirement(requirement).name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


ALONE = [Requirement(each).name for each in package._instruments_any if _installed(each)]
APPS = Path(__file__).resolve().parents[1] / "apps"
VENV_BIN = Path(sys.executable).parent
CUT = "call_cut"
# A carried aborted call, as an agent's toolcalls propagator sends it in _meta.
ABORTED = f"00-aborted-{'0af7651916cd43dd8448eb211c80319c'}-{'b7ad6b7169203331'}-{CUT}"


def _alone(name: str) -> Any:
    return pytest.mark.skipif([name] != ALONE, reason=f"a venv with only {name} of instruments-any")


def _env(*, disabled: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        **extra,
    )
    if disabled:
        env["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] = "toolcalls"
    return env


async def _call_aborted(env: dict[str, str], ran: Path) -> tuple[bool, str]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, str(APPS / "alone_mcp_server.py")]
    server = StdioServerParameters(command=argv[0], args=[*argv[1:], str(ran)], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("get_weather", {"location": CUT}, meta={"toolcall": ABORTED})
    error = getattr(result, "is_error", getattr(result, "isError", None))
    return bool(error), " ".join(getattr(block, "text", "") for block in result.content)


@_alone("mcp")
@pytest.mark.parametrize("disabled", [False, True], ids=["instrumented", "control"])
def test_a_tool_server_with_only_mcp_refuses_a_carried_aborted_call(tmp_path: Path, disabled: bool) -> None:
    import anyio

    env = _env(
        disabled=disabled,
        OTEL_TRACES_EXPORTER="none",  # stdout is the transport
        OTEL_PROPAGATORS="tracecontext,baggage,toolcalls",
        OTEL_TOOLCALLS_STRICT="true",
    )
    ran = tmp_path / "ran.txt"
    error, text = anyio.run(_call_aborted, env, ran)
    if disabled:  # the control: nobody refuses, the tool runs
        assert (error, ran.read_text()) == (False, f"{CUT}\n")
        return
    assert error is True and text.startswith(f"refusing to execute tool call '{CUT}'"), text
    assert not ran.exists()  # the tool body never ran


@_alone("langchain-core")
@pytest.mark.parametrize("disabled", [False, True], ids=["instrumented", "control"])
def test_a_worker_with_only_langchain_core_runs_its_tool_in_an_execution_span(disabled: bool) -> None:
    app = str(APPS / "alone_langchain_worker.py")
    argv = [str(VENV_BIN / "opentelemetry-instrument"), sys.executable, app]
    env = _env(disabled=disabled, OTEL_TRACES_EXPORTER="console")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=True)
    (body,) = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("BODY ")]
    executions = [s for s in console_spans(done.stdout) if s["name"] == "execute_tool get_weather"]
    if disabled:  # the control: no execution span around the tool
        assert (executions, body["name"]) == ([], None)
        return
    (execution,) = executions
    assert execution["attributes"]["gen_ai.tool.call.id"] == "call_worker"
    assert execution["attributes"]["toolcall.outcome"] == "unknown"  # this process saw no stream
    assert body == {"recording": True, "name": "execute_tool get_weather"}


@pytest.mark.skipif(len(ALONE) != 1, reason="a venv with one distribution of instruments-any")
def test_doctor_under_opentelemetry_instrument_sees_the_adapter_on() -> None:
    argv = [str(VENV_BIN / "opentelemetry-instrument"), str(VENV_BIN / "otel-toolcalls"), "doctor", "--json"]
    done = subprocess.run(argv, env=_env(disabled=False, OTEL_TRACES_EXPORTER="none"),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["opentelemetry_instrument"]["loads"] is True
    (row,) = [r for r in data["sdks"] if r["version"] is not None]
    assert (row["sdk"], row["applies"]) == (ALONE[0], True)
