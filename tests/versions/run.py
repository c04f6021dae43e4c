"""The version lane: each SDK's adapter tests again, on the oldest version pyproject.toml accepts
(and on the releases around a change of the SDK's stream design), each in a venv of its own.

The floors are read from pyproject.toml, so raising a floor there moves its lane (after `make lock`:
each lane installs from its lock, tests/locks/versions/<lane>.txt, written from ``requirements()``).
A venv is kept under .version-venvs/ and reused while its stamp (the lock, pyproject.toml and the
interpreter) is unchanged; two lanes run at a time.

    python3 tests/versions/run.py            # every lane
    python3 tests/versions/run.py openai-floor anthropic-floor
    python3 tests/versions/run.py --list
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".version-venvs"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# uv (the test extra installs it next to this interpreter) builds a venv in seconds; pip otherwise.
UV = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))

# counted_skips.LINE (tests/helpers is not on this script's path): the lines to show from a lane's log.
SKIP_LINE = re.compile(r"^(=+ counted skips|listed |UNLISTED |counted skips: )")

# What every lane's tests need besides the SDK (newest: the lane is about the SDK, not these).
TEST_TOOLS = ["opentelemetry-sdk", "pytest", "pytest-asyncio", "hypothesis"]


@dataclass(frozen=True)
class Lane:
    name: str
    # distribution -> version to pin; None: the floor pyproject.toml declares for it.
    pins: dict[str, str | None]
    tests: Sequence[str]
    # Other packages the tests import, unpinned (groq's tests reuse the openai chat test helpers).
    extra: Sequence[str] = ()
    # What the pinned SDK needs to work at all, where a fresh install would break it (not ours).
    era: Sequence[str] = ()
    why: str = ""
    # The outcome matrix's drivers (tests/contract/test_outcomes_matrix.py) this SDK version runs: the
    # outcome tests moved there from the adapter test files.
    matrix: Sequence[str] = ()
    # A peer lane (tests/peers): the peer instrumentation installed here, named for its tests.
    peer: str = ""
    requirements: list[str] = field(default_factory=list, compare=False)


def _floors() -> dict[str, str]:
    """distribution -> the version after ``>=`` in every specifier pyproject.toml declares."""
    specs = list(PYPROJECT["project"]["dependencies"])
    for extra in PYPROJECT["project"]["optional-dependencies"].values():
        specs += extra
    floors: dict[str, str] = {}
    for spec in specs:
        found = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)", spec)
        if found is None:
            continue
        name, version = found.group(1).lower(), found.group(2)
        if floors.setdefault(name, version) != version:
            raise SystemExit(f"pyproject.toml declares two floors for {name}: {floors[name]}, {version}")
    return floors


FLOORS = _floors()
# distribution -> the newest release tested (`make tables` writes it from the adapters' REQUIRES).
NEWEST = {
    dist: newest
    for dist, (_, newest) in runpy.run_path(str(ROOT / "otel_toolcalls/_wiring/tested_versions.py"))[
        "TESTED"
    ].items()
}
OPENAI = ["tests/providers/test_openai_chat.py", "tests/providers/test_openai_chat_async.py",
          "tests/providers/test_openai_responses.py", "tests/providers/test_openai_realtime_versions.py",
          "tests/contract/test_wire_lies.py", "tests/providers/test_compatible_servers.py"]  # fmt: skip
# The Realtime client through the SDK's own `realtime` extra (its websockets bounds).
REALTIME = ["tests/providers/test_openai_realtime.py", "tests/providers/test_openai_realtime_versions.py"]
ANTHROPIC = ["tests/providers/test_anthropic.py", "tests/providers/test_anthropic_async.py",
             "tests/providers/test_anthropic_bedrock.py", "tests/contract/test_wire_lies.py"]  # fmt: skip
CHAT = ["openai_chat", "openai_chat_async"]
RESPONSES = ["openai_responses", "openai_responses_async"]
# Before 1.14 anthropic has no tracing of its own: no anthropic_sdk_tracing driver.
MESSAGES = ["anthropic", "anthropic_async", "anthropic_bedrock"]
OTEL = ["opentelemetry-api", "opentelemetry-sdk", "opentelemetry-instrumentation",
        "opentelemetry-semantic-conventions"]

# Why each floor is where it is (first tried -> now: what broke below it):
#   openai 1.40 -> 1.40: with httpx < 0.28 (below); Responses tests skip before the API (1.66),
#     Realtime tests before 1.58 (client.beta.realtime; client.realtime from 1.103)
#   anthropic 0.40 -> 0.43: before 0.43 the messages.stream() helpers read a second Stream built
#     after the request returned, so the package cannot tell which request it belongs to
#   groq 0.9 -> 0.11: 0.9 / 0.10 pass an in-stream error payload on as a chunk instead of raising
#   boto3 1.34 -> 1.34.116: ConverseStream arrived in botocore 1.34.116
#   aiobotocore 2.13.1: 2.13.0 pins botocore < 1.34.107, before ConverseStream
#   mistralai 3.0, cohere 7.0, google-genai 1.55: as declared
#   litellm 1.50 -> 1.108.0: no 1.50 exists; before 1.108 a sync stream has no close() and
#     hosted_vllm streams through the openai SDK rather than LiteLLM's own HTTP
#   langgraph 0.3 -> 0.3.1: 0.3.0 is yanked (it lacks its langgraph-prebuilt dependency)
#   pydantic-ai-slim 1.0 -> 1.86.1: ToolManager._raw_execute arrived in 1.78; until 1.86.0 the
#     package made its execution span beside the instrumented agent's own instead of annotating it
#   openai-agents 0.3 -> 0.19.0: its _invoke_function_tool_with_metadata arrived in 0.19
#   mcp 1.10 -> 1.25.0: 1.10 (and 1.20; not 1.25) import a pydantic private pydantic 2.14 removed
#   opentelemetry-api/sdk 1.30, -instrumentation 0.51b0, wrapt 1.14: as declared
#   lm15 0.9.9: its first release on PyPI (DSPy 3.4 bundles 1.0.0rc3, between it and 1.0.1)
#   ollama 0.4.0: before it, chunks are plain dicts (no ChatResponse objects to read attributes of)
#   huggingface_hub 0.30.0: before it the stream's delta.tool_calls is typed as one call (TGI 2's
#     shape, its name inside the arguments), not the OpenAI list; its sync client streams with
#     requests, the async one with aiohttp (httpx from 1.0, httpx2 from 2.0)

# openai-agents' own WebSocket models: their adapters' tests run wherever openai_agents' do.
AGENTS_WS = ("agents_realtime", "agents_responses_ws")

# The async Bedrock tests, and the import-order apps of botocore's two adapters (opentelemetry-
# instrument comes with the distro).
AIOBOTOCORE = ["tests/providers/test_bedrock_async.py",
               "tests/wiring/test_import_order.py::test_the_span_comes_out"]
AIOBOTOCORE_EXTRA = ["opentelemetry-distro", "boto3"]  # boto3: the bedrock app; uv keeps it in step
AIOBOTOCORE_DRIVERS = ["aiobotocore_converse", "aiobotocore_invoke"]

# lm15's tests reuse the openai chat test helpers; its app runs under opentelemetry-instrument, with
# the other apps of the SDKs installed (openai's, the WebSocket ones need websockets).
LM15 = ["tests/providers/test_lm15.py", "tests/wiring/test_import_order.py::test_the_span_comes_out"]
LM15_EXTRA = ["openai", "websockets", "opentelemetry-distro"]

# openai 1.40 and groq 0.11 pass `proxies=` to httpx.Client, which httpx 0.28 removed: with them a
# user necessarily has an older httpx.
OLD_HTTPX = ["httpx<0.28"]

# The adapters' tests on wrapt 1.x (the main venv has 2.x; both are supported), with the main venv's
# SDKs: the test extra, newest.
WRAPT1 = ["tests/core/test_core.py", "tests/providers/test_openai_chat.py",
          "tests/providers/test_anthropic.py", "tests/wiring/test_instrumentor.py",
          "tests/providers/test_gemini.py", "tests/providers/test_cohere.py",
          "tests/providers/test_litellm.py", "tests/linking/test_execute_tool.py",
          "tests/wiring/test_missing_targets.py", "tests/wiring/test_returned_objects.py"]

# The peer lanes: another instrumentation of the same SDKs beside the package (tests/peers), at the
# versions docs/SUPPORT.md's "Installed beside" table names; the SDKs the newest, as in the main venv.
PEER_TESTS = ["tests/peers/test_peers.py"]
OFFICIAL_EXECUTIONS = "tests/peers/test_official_executions.py"
SDKS = ["openai", "anthropic"]
PEER_LANES = [
    Lane("peer-openinference", {"openinference-instrumentation-openai": "0.1.66",
                                "openinference-instrumentation-anthropic": "3.1.0",
                                "openinference-instrumentation-bedrock": "0.1.61"},
         PEER_TESTS, extra=[*SDKS, "boto3"], peer="openinference"),
    # OpenInference's messages.stream() span, never current, on an anthropic 0.x (OpenInference 1.1.2 imports
    # anthropic.resources.completions, gone from 1.0), which has no tracing of its own.
    Lane("peer-openinference-anthropic-1", {"openinference-instrumentation-anthropic": "1.1.2",
                                            "anthropic": "0.125.0"},
         PEER_TESTS, peer="openinference-anthropic",
         why="the messages.stream() span is the only inference span (no SDK span before anthropic 1.14)"),
    # OpenInference first wraps OpenAI.request on the subclass, shadowing the package's patch: the
    # stream is seen where it is built, on a release whose Stream has no options.
    Lane("peer-openinference-openai-2", {"openinference-instrumentation-openai": "0.1.66", "openai": "2.8.0"},
         PEER_TESTS, peer="openinference-openai", why="Stream(cast_to, response, client): no options"),
    Lane("peer-logfire", {"logfire": "5.4.0"}, PEER_TESTS, extra=SDKS, peer="logfire"),
    Lane("peer-openllmetry", {"opentelemetry-instrumentation-openai": "0.62.4",
                              "opentelemetry-instrumentation-anthropic": "0.62.4",
                              "opentelemetry-instrumentation-bedrock": "0.62.4"},
         PEER_TESTS, extra=[*SDKS, "boto3"], peer="openllmetry"),
    # openai-v2 imports httpx (openai 3 uses httpx2) and util-genai 0.x's instruments module.
    Lane("peer-otel-openai-v2", {"opentelemetry-instrumentation-openai-v2": "2.4b0"}, PEER_TESTS,
         extra=["openai"], era=["httpx", "opentelemetry-util-genai==0.4b0"], peer="otel-openai-v2"),
    # The same, on the experimental conventions (OTEL_SEMCONV_STABILITY_OPT_IN): util-genai starts
    # its span with no attributes.
    Lane("peer-otel-openai-v2-latest", {"opentelemetry-instrumentation-openai-v2": "2.4b0"}, PEER_TESTS,
         extra=["openai"], era=["httpx", "opentelemetry-util-genai==0.4b0"], peer="otel-openai-v2-latest"),
    # The official GenAI instrumentations (opentelemetry-python-genai), openai-v2's successors; a
    # framework's lane has the openai one too (its model streams through the openai SDK) and the
    # distro (tests/peers/test_official_executions.py runs opentelemetry-instrument).
    Lane("peer-otel-genai", {"opentelemetry-instrumentation-genai-openai": "1.3b0",
                             "opentelemetry-instrumentation-genai-anthropic": "1.3b0",
                             "opentelemetry-instrumentation-genai-bedrock": "1.3b0"},
         PEER_TESTS, extra=[*SDKS, "boto3"], peer="otel-genai"),
    Lane("peer-otel-genai-langchain", {"opentelemetry-instrumentation-genai-langchain": "1.3b0",
                                       "opentelemetry-instrumentation-genai-openai": "1.3b0",
                                       "langchain": "1.5.2", "langchain-core": "1.8.3",
                                       "langchain-openai": "1.8.1", "langgraph": "1.2.24"},
         [*PEER_TESTS, OFFICIAL_EXECUTIONS], extra=["openai", "opentelemetry-distro"],
         peer="otel-genai-langchain"),
    Lane("peer-otel-genai-llama-index", {"opentelemetry-instrumentation-genai-llama-index": "1.3b0",
                                         "opentelemetry-instrumentation-genai-openai": "1.3b0",
                                         "llama-index-core": "0.14.25", "llama-index-llms-openai": "0.8.3"},
         [*PEER_TESTS, OFFICIAL_EXECUTIONS], extra=["openai"], peer="otel-genai-llama-index"),
    Lane("peer-otel-genai-openai-agents", {"opentelemetry-instrumentation-genai-openai-agents": "1.3b0",
                                           "opentelemetry-instrumentation-genai-openai": "1.3b0",
                                           "openai-agents": "0.20.0"},
         [OFFICIAL_EXECUTIONS], extra=["openai"], peer="otel-genai-openai-agents"),
    Lane("peer-otel-genai-smolagents", {"opentelemetry-instrumentation-genai-smolagents": "1.2b0",
                                        "opentelemetry-instrumentation-genai-openai": "1.3b0",
                                        "smolagents[openai]": "1.26.0"},
         [OFFICIAL_EXECUTIONS], extra=["openai", "opentelemetry-distro"], peer="otel-genai-smolagents"),
    Lane("peer-otel-genai-smolagents-floor", {"opentelemetry-instrumentation-genai-smolagents": "1.2b0",
                                              "opentelemetry-instrumentation-genai-openai": "1.3b0",
                                              "smolagents[openai]": "1.24.0"},
         [OFFICIAL_EXECUTIONS], extra=["openai", "opentelemetry-distro"], peer="otel-genai-smolagents",
         why="smolagents' floor, which is also genai-smolagents' (smolagents >= 1.24.0)"),
    Lane("peer-langfuse", {"langfuse": "5.2.0"}, PEER_TESTS, extra=["openai"], peer="langfuse"),
    # OpenInference's framework instrumentations, through the framework's OpenAI model.
    Lane("peer-openinference-langchain", {"openinference-instrumentation-langchain": "0.1.80",
                                          "langchain-openai": "1.7.4", "langchain-core": "1.8.3"},
         PEER_TESTS, extra=["openai"], peer="openinference-langchain"),
    Lane("peer-openinference-llama-index", {"openinference-instrumentation-llama-index": "4.6.1",
                                            "llama-index-llms-openai": "0.8.3",
                                            "llama-index-core": "0.14.25"},
         PEER_TESTS, extra=["openai"], peer="openinference-llama-index"),
    # agno's newest covered release (the main framework venv's) with OpenInference's agno
    # instrumentation: its TOOL span is the execution span (tests/peers/test_official_executions.py).
    Lane("peer-openinference-agno", {"openinference-instrumentation-agno": "1.0.15", "agno": NEWEST["agno"]},
         [OFFICIAL_EXECUTIONS], extra=["openai", "opentelemetry-distro"], peer="openinference-agno"),
]  # fmt: skip

LANES = [
    # First: the longest lane, so the two-at-a-time pool does not end on it alone.
    Lane("wrapt-1", {"wrapt": "1.17.3"}, WRAPT1, extra=PYPROJECT["project"]["optional-dependencies"]["test"],
         why="the newest wrapt 1.x, with every SDK of the main venv"),
    Lane("openai-floor", {"openai": None}, OPENAI, era=OLD_HTTPX, matrix=CHAT),
    Lane("openai-2", {"openai": "2.54.0"}, OPENAI, matrix=CHAT + RESPONSES,
         why="the last on httpx, its stream closing the response in a finally (1.40 drains it)"),
    Lane("openai-realtime-beta", {"openai[realtime]": "1.58.0"}, REALTIME,
         why="the first release with a Realtime client (client.beta.realtime only)"),
    Lane("openai-realtime-ga", {"openai[realtime]": "1.103.0"}, REALTIME,
         why="the first with client.realtime (GA) beside client.beta.realtime"),
    Lane("openai-responses-ws", {"openai[realtime]": "2.22.0"},
         ["tests/providers/test_openai_responses_ws.py", "tests/providers/test_openai_realtime_versions.py"],
         why="the first with client.responses.connect() (the Responses API over WebSocket)"),
    Lane("anthropic-floor", {"anthropic": None}, ANTHROPIC, extra=["boto3"], matrix=MESSAGES),
    Lane("anthropic-1.13", {"anthropic": "1.13.0"}, ANTHROPIC, extra=["boto3"], matrix=MESSAGES,
         why="the last before the design change: httpx2 (from 1.0), no tracing of its own"),
    Lane("anthropic-1.14", {"anthropic": "1.14.0"}, ANTHROPIC, extra=["boto3"],
         matrix=[*MESSAGES, "anthropic_sdk_tracing"],
         why="the first with the SDK's own tracing and __stream__ on a lazy copy of the stream"),
    Lane("groq-floor", {"groq": None}, ["tests/providers/test_groq.py"], extra=["openai"], era=OLD_HTTPX,
         matrix=["groq", "groq_async"]),
    Lane("bedrock-floor", {"boto3": None, "botocore": FLOORS["boto3"]},
         ["tests/providers/test_bedrock.py", "tests/providers/test_bedrock_invoke.py",
          "tests/tooling/test_eventstream_codec.py"],
         matrix=["bedrock_converse", "bedrock_invoke"],
         why="botocore in step (boto3 X takes any botocore 1.34 >= X): ConverseStream came in 1.34.116"),
    # aiobotocore pins botocore below the newest: tested here, never in the main venv.
    Lane("aiobotocore-floor", {"aiobotocore": None}, AIOBOTOCORE, extra=AIOBOTOCORE_EXTRA,
         matrix=AIOBOTOCORE_DRIVERS,
         why="the first whose botocore pin (1.34.131) has ConverseStream; its _parse_event is sync"),
    Lane("aiobotocore", {"aiobotocore": NEWEST["aiobotocore"]}, AIOBOTOCORE, extra=AIOBOTOCORE_EXTRA,
         matrix=AIOBOTOCORE_DRIVERS,
         why="the newest, with the botocore it pins (1.43.117); _parse_event a coroutine"),
    Lane("mistral-floor", {"mistralai": None}, ["tests/providers/test_mistral.py"],
         matrix=["mistral", "mistral_async"]),
    Lane("cohere-floor", {"cohere": None}, ["tests/providers/test_cohere.py"],
         matrix=["cohere", "cohere_async"]),
    Lane("gemini-floor", {"google-genai": None}, ["tests/providers/test_gemini.py"],
         matrix=["gemini_dev", "gemini_dev_async", "gemini_vertex", "gemini_vertex_async"]),
    # Gemini Live (client.aio.live.connect): the same floor; opentelemetry-instrument for the example.
    # The revocation test applies the alert rule (yaml) to the Prometheus exposition.
    Lane("gemini-live-floor", {"google-genai": None}, ["tests/providers/test_gemini_live.py"],
         extra=["opentelemetry-distro", "pyyaml", "opentelemetry-exporter-prometheus"]),
    Lane("litellm-floor", {"litellm": None}, ["tests/providers/test_litellm.py"],
         matrix=["litellm", "litellm_async"]),
    # lm15's first release and its newest: its client's own HTTP, and its app under opentelemetry-instrument.
    Lane("lm15-floor", {"lm15": None}, LM15, extra=LM15_EXTRA),
    Lane("lm15", {"lm15": NEWEST["lm15"]}, LM15, extra=LM15_EXTRA),
    Lane("langgraph-floor", {"langgraph": None, "langchain-openai": None, "langchain-core": "0.3.86"},
         ["tests/frameworks/langchain/test_frameworks_langchain.py"],
         why="langchain-core, which the adapter patches, pinned where those floors resolve it"),
    Lane("pydantic-ai-floor", {"pydantic-ai-slim[openai]": None},
         ["tests/frameworks/pydantic_ai/test_frameworks_pydantic_ai.py"]),
    # With the SDK's own WebSocket models (realtime, Responses over WebSocket): the same floor.
    Lane("openai-agents-floor", {"openai-agents": None},
         [f"tests/frameworks/{a}/test_frameworks_{a}.py" for a in ("openai_agents", *AGENTS_WS)],
         extra=["opentelemetry-distro"]),
    Lane("mcp-floor", {"mcp": None},
         ["tests/frameworks/mcp/test_frameworks_mcp.py", "tests/linking/test_remote_mcp.py"],
         extra=["openai"], why="the floor; and the first major, which injects nothing into _meta itself"),
    # The main venv's frameworks at a release between floor and newest, resolved together (openai
    # 2.x): their tests and the lane-aware ones (tests/helpers/lanes.py VERSION_FRAMEWORK_LANES). Why each:
    # langgraph 1.0.10 / langchain-core 1.0.7 / langchain-openai 1.0.3: the 1.0 line, the first major
    # after the floor's 0.3; pydantic-ai-slim 2.0.0 and mcp 2.0.0: the first of the major the newest
    # is in; openai-agents 0.20.0: the last on openai 2 (0.21 requires openai 3).
    Lane("main-frameworks-mid",
         {"langgraph": "1.0.10", "langchain-core": "1.0.7", "langchain-openai": "1.0.3",
          "pydantic-ai-slim[openai]": "2.0.0", "openai-agents": "0.20.0", "mcp": "2.0.0"},
         [*(f"tests/frameworks/{a}/test_frameworks_{a}.py"
            for a in ("langchain", "pydantic_ai", "openai_agents", "mcp", *AGENTS_WS)),
          "tests/linking/test_remote_mcp.py", "tests/wiring/test_import_order.py",
          "tests/wiring/test_missing_targets.py", "tests/tooling/test_doctor.py"],
         extra=["openai", "opentelemetry-distro"],
         # Those of langgraph 1.0.10's day: checkpoint 4 calls langchain-core's Reviver(allowed_objects=),
         # which 1.0.7 lacks; prebuilt 1.0.9 imports langgraph.runtime.ExecutionInfo, which 1.0.10 lacks.
         era=["langgraph-checkpoint<4", "langgraph-prebuilt==1.0.8"],
         why="langchain, pydantic-ai, openai-agents, mcp between their floors and newest"),
    # A process with one distribution of instruments-any and no provider SDK, under
    # opentelemetry-instrument: each at the extra's floor (tests/wiring/test_dark_processes.py).
    Lane("mcp-alone", {"mcp": None}, ["tests/wiring/test_dark_processes.py"], extra=["opentelemetry-distro"],
         why="a tool server: mcp, no provider SDK"),
    Lane("langchain-alone", {"langchain-core": None}, ["tests/wiring/test_dark_processes.py"],
         extra=["opentelemetry-distro"], why="a worker running LangChain tools: no provider SDK"),
    Lane("ollama-floor", {"ollama": None}, ["tests/providers/test_ollama.py"], extra=["openai"],
         matrix=["ollama", "ollama_async"]),
    Lane("huggingface-floor", {"huggingface_hub": None}, ["tests/providers/test_huggingface.py"],
         extra=["aiohttp"],
         matrix=["huggingface", "huggingface_async"]),
    Lane("opentelemetry-floor", {name: None for name in [*OTEL, "wrapt"]},
         ["tests/core/test_core.py", "tests/providers/test_openai_chat.py",
          "tests/linking/test_propagator.py", "tests/linking/test_propagator_loading.py"], extra=["openai"],
         why="the oldest opentelemetry-api/sdk/instrumentation and wrapt with the core, one adapter and "
             "the propagator"),
    *PEER_LANES,
]


def requirements(lane: Lane, floors: dict[str, str]) -> list[str]:
    out = []
    for name, version in lane.pins.items():
        base = name.split("[", 1)[0].lower()
        pinned = version or floors.get(base)
        if pinned is None:
            raise SystemExit(f"{lane.name}: pyproject.toml declares no floor for {base}")
        out.append(f"{name}=={pinned}")
    pinned_names = {name.split("[", 1)[0].lower() for name in lane.pins}
    tools = [t for t in [*TEST_TOOLS, *lane.extra] if t not in pinned_names]
    return out + list(lane.era) + tools + list(PYPROJECT["project"]["dependencies"])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# log -> CPU seconds (user + sys) its commands and their children used: the lanes share two cores
# with the rest of `make test`, so CPU, not wall time, is what a lane costs.
CPU: dict[Path, float] = {}


def _run(cmd: Sequence[str], log: Path, env: dict[str, str] | None = None) -> int:
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        process = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
        # wait4, not wait: the child's own resource usage, whatever the other lanes' threads reap.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        CPU[log] = CPU.get(log, 0.0) + usage.ru_utime + usage.ru_stime
        return process.returncode


def lock_of(lane: Lane) -> Path:
    """The lane's lock (tests/locks/lock.py writes it from ``requirements(lane)``)."""
    return ROOT / "tests" / "locks" / "versions" / f"{lane.name}.txt"


def ensure_venv(lane: Lane, log: Path) -> Path | None:
    """The lane's venv, built from its lock unless its stamp says it holds that lock already."""
    venv = VENVS / lane.name
    stamp = venv / ".stamp"
    lock = lock_of(lane)
    if not lock.exists():
        log.write_text(f"no lock {lock.relative_to(ROOT)}: make lock\n")
        return None
    # pyproject.toml too: the editable install's metadata (entry points, scripts) comes from it.
    key = json.dumps([sys.version, lock.read_text(), (ROOT / "pyproject.toml").read_text()])
    key = hashlib.sha256(key.encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == key:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    python = str(venv / "bin" / "python")
    if UV is None:
        raise SystemExit("uv is needed (the test extra installs it): make .venv/.stamp-test")
    sync = [UV, "pip", "sync", "-q", "--require-hashes", "--python", python, str(lock)]
    if _run([UV, "venv", "-q", "--python", sys.executable, str(venv)], log) != 0 or _run(sync, log) != 0:
        return None
    # The package itself, editable (its dependencies came above); one build at a time, as each
    # writes the same egg-info into the source tree.
    with _locked(VENVS / ".build.lock"):
        if _run([UV, "pip", "install", "-q", "--python", python, "--no-deps", "-e", str(ROOT)], log) != 0:
            return None
    if _run([UV, "pip", "check", "-q", "--python", python], log) != 0:
        return None
    stamp.write_text(key)
    return venv


def _versions(venv: Path, names: Sequence[str]) -> str:
    code = (
        "import importlib.metadata as m, sys\n"
        "print(' '.join(f'{n}=={m.version(n)}' for n in sys.argv[1:]))"
    )
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code, *names], capture_output=True, text=True, check=False
    )
    return found.stdout.strip() or (found.stderr.strip().splitlines() or ["no version"])[-1]


def run_lane(lane: Lane, floors: dict[str, str]) -> tuple[Lane, bool, str, float]:
    start = time.monotonic()
    log = VENVS / "logs" / f"{lane.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    venv = ensure_venv(lane, log)
    if venv is None:
        return lane, False, f"install failed (see {log.relative_to(ROOT)})", time.monotonic() - start
    names = [name.split("[", 1)[0] for name in lane.pins]
    versions = _versions(venv, names)
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    # uv installs no bytecode: without it written on first import, each process of the lane's tests
    # (the subprocess apps among them) compiled the SDK again from source.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tests = [*lane.tests, *(["tests/contract/test_outcomes_matrix.py"] if lane.matrix else [])]
    if lane.matrix:
        env["OTEL_TOOLCALLS_MATRIX"] = ",".join(lane.matrix)
    if lane.peer:
        env["OTEL_TOOLCALLS_PEER"] = lane.peer
    # Which entries of tests/skips.toml apply (tests/helpers/counted_skips.py).
    env["OTEL_TOOLCALLS_LANE"] = lane.name
    cmd = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", *tests]
    ok = _run(cmd, log, env) == 0
    lines = log.read_text().strip().splitlines()
    # The lane's skips, each with its verdict, shown with the lane's line rather than only in its log.
    skips = "".join(f"\n    {line}" for line in lines if SKIP_LINE.match(line))
    tail = lines[-1:] or [""]
    return lane, ok, f"cpu {CPU.get(log, 0.0):5.1f}s  {versions}: {tail[0]}{skips}", time.monotonic() - start


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("lanes", nargs="*", help="lane names (default: all)")
    parser.add_argument("--list", action="store_true", help="print the lanes and their requirements")
    parser.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("VERSION_LANE_JOBS", "2")))
    args = parser.parse_args(argv)
    floors = FLOORS
    chosen = [lane for lane in LANES if not args.lanes or lane.name in args.lanes]
    unknown = set(args.lanes) - {lane.name for lane in LANES}
    if unknown:
        parser.error(f"unknown lanes: {', '.join(sorted(unknown))}")
    if args.list:
        for lane in chosen:
            print(f"{lane.name}: {' '.join(requirements(lane, floors)[: len(lane.pins)])}  {lane.why}")
        return 0
    start = time.monotonic()
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for lane, ok, summary, seconds in pool.map(lambda lane: run_lane(lane, floors), chosen):
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {lane.name:<22} {seconds:6.1f}s  {summary}", flush=True)
    seconds = time.monotonic() - start
    print(f"version lane: {len(chosen)} lanes in {seconds:.0f}s, cpu {sum(CPU.values()):.0f}s")
    print(f"versions: {len(chosen) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
