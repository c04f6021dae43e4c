"""Beside another instrumentation of the same SDK (docs/TELEMETRY.md section 6, "Installed beside"):
one inference span per streamed request, the package's tool-call spans its children, outcomes and
the package's metrics as without the peer, the peer's spans and the SDK's objects as without the
package.

Runs in a peer lane (tests/versions/run.py ``peer-*``: one venv per peer, ``OTEL_TOOLCALLS_PEER``
names it); skipped elsewhere. Each combination is a process of its own (tests/peers/drive.py): the
peer alone, the package alone, and both in each instrumentation order, each making the same
requests (sync and async, cut mid-arguments, the streaming helper, failed before any stream).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import drive
import pytest

PEER = os.environ.get("OTEL_TOOLCALLS_PEER", "")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

pytestmark = pytest.mark.skipif(PEER not in drive.PEERS, reason="runs in a peer lane (tests/versions/run.py)")

SDKS = sorted(drive.PEERS.get(PEER, {}))
ORDERS = ["ours-first", "peer-first"]
INFERENCE_OPERATIONS = {"chat", "text_completion", "generate_content"}
# What differs from one run to the next by itself: timings (Logfire's message and the SDK's own span
# carry some), and Logfire's hash of an exception's traceback, whose frames include any wrapper of
# the SDK's methods.
VOLATILE = {"duration", "logfire.msg", "gen_ai.response.time_to_first_chunk", "logfire.exception.fingerprint",
            "langfuse.observation.completion_start_time"}  # fmt: skip


@functools.cache
def run(mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(HERE / "drive.py"), PEER, mode],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{PEER} {mode} failed:\n{done.stderr[-3000:]}"
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _ours(span: dict[str, Any]) -> bool:
    return span["scope"] == "otel_toolcalls"


def _inference(span: dict[str, Any]) -> bool:
    """The test's own reading of each peer's convention for an inference span."""
    attributes = span["attributes"]
    if attributes.get("openinference.span.kind") == "LLM":
        return True
    if attributes.get("langfuse.observation.type") == "generation":
        return True
    if (span["scope"], span["name"]) == ("opentelemetry.instrumentation.openai.v1", "openai.response"):
        return True  # OpenLLMetry's Responses span: no gen_ai.operation.name
    return span["kind"] == "CLIENT" and attributes.get("gen_ai.operation.name") in INFERENCE_OPERATIONS


def _tool_calls(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in spans if _ours(s) and s["name"].startswith("tool_call ")]


def _requests(sdk: str, mode: str) -> dict[str, dict[str, Any]]:
    return dict(run(mode)["requests"][sdk])


# (peer, sdk) whose inference span is never current where the SDK runs (Langfuse's generation,
# OpenLLMetry's ConverseStream span: started, never made current; OpenInference's LlamaIndex span:
# out of the context and of LlamaIndex's active span id once stream_chat has returned its
# generator, whose first read makes the request): the package cannot know of it, and makes its own
# beside it (TELEMETRY.md 6). OpenInference's LangChain span, never current either, is known by the
# model run LangChain's callbacks name (_core/peers.py).
UNSEEN = {("langfuse", "openai"), ("openllmetry", "bedrock"), ("openinference-llama-index", "llama-index")}
# (peer, sdk, request) where the peer's span, current at the request, is never ended (OpenInference's
# for a ConverseStream call that fails): the package adopted it, and none is exported, as without it.
NEVER_ENDED = {("openinference", "bedrock", "sync-fails")}
# (peer, sdk, request) of two model runs started by one call (LangChain's batch generate): which
# request is whose is unknown, so none of the peer's spans is adopted; the package makes its own.
# (The official GenAI LangChain instrumentation makes each run's span current for its request:
# each adopted.)
AMBIGUOUS = {("openinference-langchain", "langchain", "sync-batch")}

combinations = pytest.mark.parametrize(("sdk", "order"), [(s, o) for s in SDKS for o in ORDERS])


@combinations
def test_one_inference_span_and_the_tool_calls_under_it(sdk: str, order: str) -> None:
    alone = _requests(sdk, "peer")
    for name, request in _requests(sdk, order).items():
        spans = request["spans"]
        inference = [s for s in spans if _inference(s)]
        theirs = [s for s in alone[name]["spans"] if _inference(s)]
        # The peer's (and an SDK's own) as without the package; the package's only where none is.
        ours = [s for s in inference if _ours(s)]
        requests = 2 if name == "sync-batch" else 1
        if (PEER, sdk) in UNSEEN or (PEER, sdk, name) in AMBIGUOUS:
            assert len(ours) == requests and len(inference) == len(theirs) + requests, (
                name, [s["name"] for s in spans])  # fmt: skip
            inference = ours
        elif (PEER, sdk, name) in NEVER_ENDED:
            assert inference == theirs == [], name
        else:
            assert len(inference) == max(1, len(theirs)), (name, [s["name"] for s in inference])
            assert ours == ([] if theirs else inference[:1]), name
        # Under the innermost (OpenInference's messages.stream span and the SDK's own are both roots).
        innermost = {s["id"] for s in inference if not any(o["parent"] == s["id"] for o in inference)}
        calls = _tool_calls(spans)
        parents = [c["parent"] for c in calls]
        assert name.endswith("fails") or len(calls) == 2 * requests, (name, [s["name"] for s in spans])
        assert set(parents) <= innermost and all(parents.count(p) == 2 for p in parents), name


def _outcome(span: dict[str, Any]) -> tuple[Any, ...]:
    attributes = span["attributes"]
    keys = ("toolcall.call.id", "toolcall.outcome", "toolcall.abort_reason", "toolcall.arguments.deltas",
            "toolcall.arguments.size", "error.type")  # fmt: skip
    return (span["name"], span["status"], *(attributes.get(k) for k in keys))


def _stream_outcome(spans: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """``toolcall.*`` of the stream as a whole, on whichever inference span carries them."""
    keys = ("toolcall.outcome", "toolcall.abort_reason", "toolcall.count")
    carrying = [s for s in spans if _inference(s) and keys[0] in s["attributes"]]
    return [tuple(s["attributes"].get(k) for k in keys) for s in carrying]


@combinations
def test_outcomes_as_without_the_peer(sdk: str, order: str) -> None:
    ours = _requests(sdk, "ours")
    for name, request in _requests(sdk, order).items():
        assert sorted(map(_outcome, _tool_calls(request["spans"]))) == sorted(
            map(_outcome, _tool_calls(ours[name]["spans"]))
        ), name
        # On the peer's span while it is open; a span ended before the stream was read has none.
        assert _stream_outcome(request["spans"]) in ([], _stream_outcome(ours[name]["spans"])), name


# Peers that replace the client class's `request` with one calling the SDK's method as it was when
# they instrumented: instrumented first, the package's request hook never runs, and a request that
# fails before any stream is the peer's alone (docs/TELEMETRY.md, "Installed beside").
REQUEST_HOOK_BYPASSED = {"openinference", "openinference-openai", "logfire"}


def _without_failures(metrics: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, points in metrics.items():
        kept = {k: v for k, v in points.items() if "InternalServerError" not in k}
        if kept:
            out[name] = kept
    return out


@pytest.mark.parametrize("order", ORDERS)
def test_the_packages_metrics_as_without_the_peer(order: str) -> None:
    ours, both = run("ours")["metrics"], run(order)["metrics"]
    assert ours  # the comparison is of something
    if order == "peer-first" and PEER in REQUEST_HOOK_BYPASSED:
        assert both == _without_failures(ours) != ours
    else:
        assert both == ours


def _theirs(spans: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The peer's (and the SDK's own) spans: what they say and under which of theirs they hang;
    the package's own ``toolcall.*`` on an adopted span left out."""
    names = {s["id"]: s["name"] for s in spans}
    out = []
    for span in spans:
        if _ours(span):
            continue
        attributes = {
            k: v for k, v in span["attributes"].items() if not k.startswith("toolcall.") and k not in VOLATILE
        }
        out.append((span["name"], span["kind"], span["scope"], span["status"], names.get(span["parent"]),
                    json.dumps(attributes, sort_keys=True)))  # fmt: skip
    return sorted(out)


@combinations
def test_the_peers_spans_and_the_sdks_objects_unchanged(sdk: str, order: str) -> None:
    alone, ours = _requests(sdk, "peer"), _requests(sdk, "ours")
    for name, request in _requests(sdk, order).items():
        assert _theirs(request["spans"]) == _theirs(alone[name]["spans"]), name
        assert request["sdk"] == alone[name]["sdk"] == ours[name]["sdk"], name
