"""The pipeline users run, end to end, as real processes on 127.0.0.1 (tests/pipeline/stack.py):
two apps under ``opentelemetry-instrument`` -> two agents (loadbalancing by trace id, sending
queue on disk) -> two gateways (the agents' Collector build: tail sampling, span metrics) -> Jaeger
(Badger storage); Prometheus scraping the gateways' exporter and every Collector's own metrics
with the repo's rules, Alertmanager paging a webhook here.

Read back from Jaeger's /api/v3/traces (OTLP JSON, links to their targets): every trace with
an aborted call, whole and from one gateway; outcomes and reasons as the app saw them; each
execute_tool linked only to its completed call. From Prometheus: span metrics and the package's
toolcall.calls count the same calls. From the webhook: the aborted-rate alert of both rule files.
Then, phase by phase, every span the apps ended is accounted for (each tier's own counters, read
per process lifetime, and what Jaeger stores): Jaeger restarted with turns sent while it is down
(lost: 0); a gateway killed for 5 s mid-run (the page stays firing; lost: only the traces it had
not yet decided on); a gateway restarted (SIGTERM) mid-run (lost: no aborted call); Jaeger down
past what the gateways' queue holds (the drop is counted and OtelcolPipelineDroppingSpans pages).

Skips only when the binaries are not built or Debian's prometheus / alertmanager are missing, and
fails instead under `make test`, which builds and installs them first (pipeline-bins, promtool,
alertmanager; tests/helpers/markers.py's `missing`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import markers
import pytest
from pipeline.stack import BIN, ROOT, SERVICE, Stack, attrs, missing_tools, running

from otel_toolcalls._core import names as n

TURNS = 48  # per app: 96 turns, 192 calls, 48 of them aborted
RATE = 6.0  # turns a second per app
DOWN_TURNS = 16  # sent while Jaeger is down: 8 of them abort a call
# The gateways' queue towards Jaeger, in spans (the test's copy; the repo's holds 1000 requests):
# room for what a restarted gateway releases at once (150 spans seen on an idle machine), and under
# what the outage phase's turns leave waiting (OUTAGE_TURNS).
GATEWAY_QUEUE_SPANS = 300
OUTAGE_TURNS = 2 * TURNS
DECISION_WAIT_S = 2.0  # the test's copy of gateway.yaml (tests/pipeline/stack.py)
# Hang guards, not performance bounds.
DEADLINE_S = 120.0
EXPECTED = {
    "ok": {"completed"},
    "cut": {"completed", "aborted"},
    "length": {"completed", "aborted"},
}
REASON = {"cut": n.STREAM_ERROR, "length": n.TRUNCATED}


def poll(what: str, check: Callable[[], Any], deadline_s: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not there in {deadline_s} s (last: {last!r})")


@dataclass
class Run:
    """What the apps of one phase did: their calls (one row each) and the spans they ended."""

    rows: list[dict[str, Any]]
    spans: int
    began_s: float


def start_apps(
    stack: Stack, turns: int = TURNS, names: tuple[str, ...] = ("app-0", "app-1")
) -> list[subprocess.Popen[str]]:
    return [stack.app(name, i, "--turns", str(turns), "--rate", str(RATE)) for i, name in enumerate(names)]


def finish_apps(apps: list[subprocess.Popen[str]], turns: int, began_s: float) -> Run:
    run = Run([], 0, began_s)
    for app in apps:
        out, _ = app.communicate(timeout=DEADLINE_S)
        assert app.returncode == 0, out[-2000:]
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert lines[-1]["done"] == turns
        run.rows.extend(lines[:-1])
        run.spans += lines[-1]["spans"]
    return run


def run_apps(stack: Stack, turns: int = TURNS, names: tuple[str, ...] = ("app-0", "app-1")) -> Run:
    began_s = time.time()
    return finish_apps(start_apps(stack, turns, names), turns, began_s)


def by_trace(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        traces[span["traceId"]].append(span)
    return traces


def whole(spans: list[dict[str, Any]], calls: list[dict[str, Any]]) -> bool:
    """The trace has its root, no orphan, and every span the package emits for its calls."""
    ids = {s["spanId"] for s in spans}
    roots = [s for s in spans if not s.get("parentSpanId")]
    orphans = [s for s in spans if s.get("parentSpanId") and s["parentSpanId"] not in ids]
    names = Counter(s["name"].split(" ", 1)[0] for s in spans)
    requests = 1 if calls[0]["kind"] == "ok" else 2  # tests/pipeline/app.py: requests_for
    return (
        len(roots) == 1
        and not orphans
        and names["tool_call"] == len(calls)
        and names["execute_tool"] == len(calls)
        and names["chat"] == requests
    )


def calls_by_trace(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    calls: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        calls[row["trace_id"]].append(row)
    return calls


def aborted_traces(calls: dict[str, list[dict[str, Any]]]) -> set[str]:
    return {t for t, cs in calls.items() if any(c["outcome"] == n.ABORTED for c in cs)}


def stored(stack: Stack, start_ns: int) -> dict[str, list[dict[str, Any]]]:
    return by_trace(stack.traces(start_ns, time.time_ns() + 60_000_000_000))


def whole_aborted(stack: Stack, start_ns: int, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """What Jaeger holds once every trace of rows with an aborted call is there whole, else {}."""
    calls = calls_by_trace(rows)
    traces = stored(stack, start_ns)
    return traces if all(whole(traces.get(t, []), calls[t]) for t in aborted_traces(calls)) else {}


def listeners(pid: int) -> set[str]:
    """Local addresses of the TCP sockets this process listens on (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                address = fields[1].split(":")[0]
                found.add("127.0.0.1" if address == "0100007F" else address)
    return found


# ------------------------------------------------------------------ the pipeline rule, by promtool

PIPELINE_RULES = ROOT / "collector-config" / "prometheus" / "pipeline"
FIRST_FAILURE = (
    "\n              or\n                (otelcol_exporter_enqueue_failed_spans_total"
    " unless otelcol_exporter_enqueue_failed_spans_total offset 5m)"
)


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = shutil.which("promtool")
    if path is None:
        markers.missing("promtool", "make promtool: Debian's prometheus package")
    return subprocess.run([path, *args], capture_output=True, text=True, timeout=600, cwd=cwd, check=False)


def test_promtool_checks_and_unit_tests_the_pipeline_rule() -> None:
    check = promtool("check", "rules", "otelcol-pipeline.rules.yaml", cwd=PIPELINE_RULES)
    assert check.returncode == 0 and "SUCCESS" in check.stdout, check.stdout + check.stderr
    result = promtool("test", "rules", "otelcol-pipeline.test.yaml", cwd=PIPELINE_RULES)
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_a_pipeline_rule_that_misses_a_first_failure_fails_its_unit_tests(tmp_path: Path) -> None:
    # enqueue_failed appears with its first failure: increase() alone never sees it.
    text = (PIPELINE_RULES / "otelcol-pipeline.rules.yaml").read_text()
    assert text.count(FIRST_FAILURE) == 1
    (tmp_path / "otelcol-pipeline.rules.yaml").write_text(text.replace(FIRST_FAILURE, ""))
    shutil.copy(PIPELINE_RULES / "otelcol-pipeline.test.yaml", tmp_path)
    result = promtool("test", "rules", "otelcol-pipeline.test.yaml", cwd=tmp_path)
    assert result.returncode != 0, result.stdout
    assert "a gateway's queue overflows" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Any:
    missing = missing_tools()
    if missing:
        markers.missing(str(missing), "make pipeline-bins promtool alertmanager")
    workdir = tmp_path_factory.mktemp("pipeline")
    # The gateways run the agents' build: it decides a stopping gateway's pending traces.
    gateway_bin = BIN / "otelcol-agent"
    with running(workdir, gateway_queue_spans=GATEWAY_QUEUE_SPANS, gateway_bin=gateway_bin) as stack:
        start_ns = time.time_ns() - 5_000_000_000
        first = run_apps(stack)
        yield stack, first, start_ns


def test_every_listener_is_on_loopback(pipeline: Any) -> None:
    stack, _, _ = pipeline
    for name, proc in stack.procs.items():
        assert listeners(proc.popen.pid) == {"127.0.0.1"}, name


def test_every_aborted_calls_trace_arrives_whole_from_one_gateway(pipeline: Any) -> None:
    stack, first, start_ns = pipeline
    rows = first.rows
    aborted = aborted_traces(calls_by_trace(rows))
    assert len(aborted) == TURNS  # half the turns of each app abort one call
    traces = poll(
        "every aborted call's trace, whole, in Jaeger", lambda: whole_aborted(stack, start_ns, rows)
    )
    gateways = Counter()
    for trace_id in aborted:
        stamps = {attrs(s).get("pipeline.gateway") for s in traces[trace_id]}
        assert len(stamps) == 1 and None not in stamps, (trace_id, stamps)
        gateways.update(stamps)
    assert set(gateways) == {"gateway-0", "gateway-1"}  # routed by trace id across both


def test_outcomes_reasons_and_links_are_exact(pipeline: Any) -> None:
    stack, first, start_ns = pipeline
    rows = first.rows
    traces = stored(stack, start_ns)
    expected = {row["call_id"]: row for row in rows if row["trace_id"] in traces}
    tool_calls = {}
    checked = Counter()
    for trace_id, spans in traces.items():
        for span in spans:
            a = attrs(span)
            if span["name"].startswith("tool_call "):
                row = expected[a[n.TOOLCALL_CALL_ID]]
                assert row["trace_id"] == trace_id
                assert a[n.TOOLCALL_OUTCOME] == row["outcome"]
                tool_calls[a[n.TOOLCALL_CALL_ID]] = span
                if row["outcome"] == n.ABORTED:
                    reason = REASON[row["kind"]]
                    assert a[n.TOOLCALL_ABORT_REASON] == reason
                    assert a[n.ERROR_TYPE] == (
                        "openai.APIConnectionError" if reason == n.STREAM_ERROR else reason
                    )
                    assert (
                        span["status"].get("code") == "STATUS_CODE_ERROR" or span["status"].get("code") == 2
                    )
                else:
                    assert n.TOOLCALL_ABORT_REASON not in a
                checked[(row["kind"], row["outcome"])] += 1
    for spans in traces.values():
        for span in spans:
            if not span["name"].startswith("execute_tool "):
                continue
            a = attrs(span)
            row = expected[a[n.GEN_AI_TOOL_CALL_ID]]
            links = span.get("links", [])
            assert row["executed"] == (row["outcome"] == n.COMPLETED)
            if row["outcome"] == n.COMPLETED:
                (link,) = links
                assert link["spanId"] == tool_calls[a[n.GEN_AI_TOOL_CALL_ID]]["spanId"]
                assert link["traceId"] == span["traceId"]
                # Badger stores Jaeger's v1 span model, which has no place for a link's attributes
                # (jaegertracing/jaeger#8078): when it keeps them, check the link type here again.
                assert n.GEN_AI_ATTRIBUTION_LINK_TYPE not in attrs(link)
            else:
                assert links == []
            checked["execute_tool"] += 1
    assert checked[("cut", n.ABORTED)] == checked[("length", n.ABORTED)] == TURNS // 2
    assert checked["execute_tool"] >= 2 * TURNS


# ------------------------------------------------------------------ every span accounted for

AGENT, GATEWAY = 'job="otelcol-agent"', 'job="otelcol-gateway"'
LEDGER = {
    "agents_accepted": f"otelcol_receiver_accepted_spans_total{{{AGENT}}}",
    "agents_sent": f'otelcol_exporter_sent_spans_total{{{AGENT}, exporter="loadbalancing"}}',
    "agents_dropped": f'{{__name__=~"otelcol_exporter_(send|enqueue)_failed_spans_total", {AGENT}}}',
    "gateways_accepted": f"otelcol_receiver_accepted_spans_total{{{GATEWAY}}}",
    # What the tail sampler kept: the processor right after it (the test's attributes/gateway).
    "gateways_sampled": "otelcol_processor_incoming_items_total"
    f'{{{GATEWAY}, processor="attributes/gateway", otel_signal="traces"}}',
    "gateways_sent": f'otelcol_exporter_sent_spans_total{{{GATEWAY}, exporter="otlp/jaeger"}}',
    "gateways_dropped": f'{{__name__=~"otelcol_exporter_(send|enqueue)_failed_spans_total", {GATEWAY}}}',
    "jaeger_accepted": 'otelcol_receiver_accepted_spans_total{job="jaeger"}',
}


def ledger(stack: Stack, run: Run, start_ns: int) -> dict[str, float]:
    """Spans the phase's apps ended, what each tier's own counters (scraped by Prometheus, per
    process lifetime) counted since the phase began, and the phase's spans Jaeger holds."""
    now = time.time()
    counts = {name: stack.counted(selector, run.began_s, now) for name, selector in LEDGER.items()}
    mine = calls_by_trace(run.rows)
    traces = stored(stack, start_ns)
    counts["stored"] = float(sum(len(spans) for trace_id, spans in traces.items() if trace_id in mine))
    return {"apps_ended": float(run.spans), **counts}


def balanced(c: dict[str, float]) -> bool:
    """Each tier's spans in are its spans out plus the drops it counted; the tail sampler's
    deliberate drops are not losses, so the gateways balance twice: in, and kept."""
    return (
        c["apps_ended"] == c["agents_accepted"] == c["agents_sent"] + c["agents_dropped"]
        and c["agents_sent"] == c["gateways_accepted"]
        and 0 < c["gateways_sampled"] < c["gateways_accepted"]
        and c["gateways_sampled"] == c["gateways_sent"] + c["gateways_dropped"]
        and c["gateways_sent"] == c["jaeger_accepted"] == c["stored"]
    )


def reconciled(stack: Stack, run: Run, start_ns: int, what: str) -> dict[str, float]:
    last: dict[str, float] = {}

    def check() -> bool:
        last.update(ledger(stack, run, start_ns))
        return balanced(last)

    try:
        poll(what, check)
    except AssertionError as exc:
        raise AssertionError(f"{what}: the ledger never balanced: {last}") from exc
    print(f"\n{what}: {last}")
    return last


def test_every_span_of_the_first_run_is_accounted_for(pipeline: Any) -> None:
    stack, first, start_ns = pipeline
    counts = reconciled(stack, first, start_ns, "first run")
    assert counts["agents_dropped"] == counts["gateways_dropped"] == 0


def calls_by_outcome(stack: Stack, expr: str) -> dict[tuple[str, str], float]:
    return {
        (r["metric"].get("toolcall_outcome", ""), r["metric"].get("toolcall_abort_reason", "")): float(
            r["value"][1]
        )
        for r in stack.prom(expr)
    }


def test_span_metrics_and_toolcall_calls_agree(pipeline: Any) -> None:
    stack, first, _ = pipeline
    rows = first.rows
    want = Counter((r["outcome"], REASON[r["kind"]] if r["outcome"] == n.ABORTED else "") for r in rows)
    by = "sum by (toolcall_outcome, toolcall_abort_reason)"
    spans = f'{by} (traces_span_metrics_calls_total{{service_name="{SERVICE}", span_name=~"tool_call .+"}})'
    # Not honor_labels: the exporter's job label (service.name) is kept as exported_job.
    package = f'{by} (toolcall_calls_total{{exported_job="{SERVICE}"}})'
    poll("span metrics count every call", lambda: calls_by_outcome(stack, spans) == want)
    poll("toolcall.calls counts every call", lambda: calls_by_outcome(stack, package) == want)


def test_the_aborted_rate_page_arrives(pipeline: Any) -> None:
    stack, _, _ = pipeline
    assert stack.webhook is not None

    def paged() -> set[str]:
        sources = {
            a["labels"].get("source", "")
            for a in stack.webhook.alerts()
            if a["labels"]["alertname"] == "ToolCallsAbortedRateHigh" and a["status"] == "firing"
        }
        return sources if sources == {"spanmetrics", "toolcall_metrics"} else set()

    poll("ToolCallsAbortedRateHigh from both rule files at the webhook", paged)


def waiting_for_jaeger(stack: Stack) -> float:
    """Items the gateways' exporters hold (queued or being retried), read from their own metrics."""
    return sum(
        stack.collector_metric(port, "otelcol_exporter_queue_size") for port in stack.ports.gateway_metrics
    )


def span_keys(traces: dict[str, list[dict[str, Any]]]) -> set[tuple[str, str]]:
    return {(trace_id, span["spanId"]) for trace_id, spans in traces.items() for span in spans}


def test_a_jaeger_restart_loses_nothing(pipeline: Any) -> None:
    # Last in the module: the tests above count the first run's turns only.
    stack, first, start_ns = pipeline
    rows = first.rows
    held = poll("every aborted call's trace, whole, in Jaeger", lambda: whole_aborted(stack, start_ns, rows))
    jaeger = stack.procs["jaeger"]
    jaeger.stop()  # SIGTERM, as a deployment's restart sends
    down = run_apps(stack, DOWN_TURNS, ("app-down",))
    down_rows = down.rows
    # The fault is real only once the gateways hold spans they could not deliver.
    poll("the gateways holding spans for the stopped Jaeger", lambda: waiting_for_jaeger(stack) > 0)
    jaeger.start()
    after = poll(
        "the aborted calls' traces sent while Jaeger was down, whole",
        lambda: whole_aborted(stack, start_ns, down_rows),
    )
    lost = span_keys(held) - span_keys(after)
    sent_while_down = aborted_traces(calls_by_trace(down_rows))
    print(
        f"\nJaeger restart: {len(span_keys(held))} spans in {len(held)} traces held before, lost {len(lost)};"
        f" {len(sent_while_down)} aborted-call traces sent while down, all whole after"
    )
    assert len(sent_while_down) == DOWN_TURNS // 2
    assert lost == set(), f"lost {len(lost)} of {len(span_keys(held))} spans across the restart"
    # Jaeger's counters start again from 0: read per lifetime, the two add up to what it stored.
    counts = reconciled(stack, down, start_ns, "Jaeger restart")
    assert counts["agents_dropped"] == counts["gateways_dropped"] == 0


# ------------------------------------------------------------------ a gateway restart


def firing(stack: Stack, alertname: str, source: str) -> bool:
    expr = f'ALERTS{{alertname="{alertname}", source="{source}", alertstate="firing"}}'
    return bool(stack.prom(expr))


GW_TRACES_IN = f"otelcol_processor_tail_sampling_new_trace_id_received_total{{{GATEWAY}}}"
GW_TRACES_DECIDED = f"otelcol_processor_tail_sampling_global_count_traces_sampled_total{{{GATEWAY}}}"


def now(stack: Stack, selector: str) -> float:
    """The sum of the selector's series as Prometheus last scraped them (running processes only)."""
    return sum(float(r["value"][1]) for r in stack.prom(f"sum({selector})"))


def gateway_down_for_prometheus(stack: Stack, i: int) -> bool:
    instance = f"127.0.0.1:{stack.ports.gateway_metrics[i]}"
    return any(r["value"][1] == "0" for r in stack.prom(f'up{{instance="{instance}"}}'))


def delivered_after_restart(stack: Stack, run: Run, start_ns: int) -> dict[str, list[dict[str, Any]]]:
    """What Jaeger holds once every span of run is through: the agents handed on all they held for
    the gateway; the gateways, as they run now, hold no undecided trace and no kept span unsent;
    Jaeger stored what it accepted. A stopped process's last counts are not seen, so its lifetime
    is left out of the gateways' two."""
    state: dict[str, Any] = {}

    def delivered() -> dict[str, list[dict[str, Any]]]:
        c = ledger(stack, run, start_ns)
        state.update(c)
        state.update(
            traces_in=now(stack, GW_TRACES_IN),
            traces_decided=now(stack, GW_TRACES_DECIDED),
            sampled_now=now(stack, LEDGER["gateways_sampled"]),
            sent_now=now(stack, LEDGER["gateways_sent"]),
        )
        done = (
            c["apps_ended"] == c["agents_accepted"] == c["agents_sent"]
            and state["traces_in"] == state["traces_decided"] > 0
            and state["sampled_now"] == state["sent_now"] > 0
            and c["jaeger_accepted"] == c["stored"]
        )
        return stored(stack, start_ns) if done else {}

    try:
        return poll("the gateway restart's spans delivered and stored", delivered)
    except AssertionError as exc:
        raise AssertionError(f"never delivered: {state}") from exc


def running_apps(stack: Any, names: tuple[str, str]) -> tuple[float, int, Any]:
    """Two apps of twice the turns, started and two thirds through (by the spans the agents took):
    a fault now falls mid-traffic."""
    began_s = time.time()
    turns = 2 * TURNS
    apps = start_apps(stack, turns, names)
    poll(
        "two thirds of the run's spans at the agents",
        lambda: stack.counted(LEDGER["agents_accepted"], began_s, time.time()) >= turns * 2 * 6 * 2 / 3,
    )
    return began_s, turns, apps


def test_a_gateway_restart_keeps_paging_and_loses_only_its_undecided_traces(pipeline: Any) -> None:
    stack, _, start_ns = pipeline
    gateway = stack.procs["gateway-1"]
    began_s, turns, apps = running_apps(stack, ("app-gw-0", "app-gw-1"))
    killed_ns = time.time_ns()
    gateway.stop(signal.SIGKILL)
    # While it is down: Prometheus sees it gone and the page from the package's own metrics
    # (toolcall_calls_total, through the other gateway) is still firing.
    poll("Prometheus seeing gateway-1 down", lambda: gateway_down_for_prometheus(stack, 1))
    assert firing(stack, "ToolCallsAbortedRateHigh", "toolcall_metrics")
    assert gateway.popen.poll() is not None  # still down when the alert was read
    while time.time_ns() - killed_ns < 5_000_000_000:  # the fault lasts 5 s; nothing is proven by it
        time.sleep(0.2)
    gateway.start()
    run = finish_apps(apps, turns, began_s)
    calls = calls_by_trace(run.rows)
    aborted = aborted_traces(calls)
    traces = delivered_after_restart(stack, run, start_ns)
    lost = {t for t in aborted if not whole(traces.get(t, []), calls[t])}
    # Which: traces the killed gateway had received and not yet decided on. Tail sampling holds
    # a trace for decision_wait after its first span (decided on the next 1 s tick), then exports
    # it in 200 ms: a turn that ended more than that, plus the app's and the agent's export
    # delays, before the kill was out already; one begun after it went whole to the new process.
    window_s = DECISION_WAIT_S + 5.0
    ended = sorted(round((killed_ns - max(c["ended_ns"] for c in calls[t])) / 1e9, 2) for t in lost)
    began_after = [t for t in lost if min(c["began_ns"] for c in calls[t]) > killed_ns]
    print(f"\ngateway restart: {len(lost)} of {len(aborted)} aborted-call traces lost, ended {ended} s ago")
    assert all(age <= window_s for age in ended), f"lost traces that had ended {ended} s before the kill"
    assert began_after == []
    assert firing(stack, "ToolCallsAbortedRateHigh", "toolcall_metrics")


def aborted_spans_stored(traces: dict[str, list[dict[str, Any]]]) -> set[str]:
    tool_calls = (s for spans in traces.values() for s in spans if s["name"].startswith("tool_call "))
    return {a[n.TOOLCALL_CALL_ID] for a in map(attrs, tool_calls) if a[n.TOOLCALL_OUTCOME] == n.ABORTED}


def test_a_gateway_graceful_restart_loses_no_aborted_call(pipeline: Any) -> None:
    stack, _, start_ns = pipeline
    gateway = stack.procs["gateway-1"]
    began_s, turns, apps = running_apps(stack, ("app-term-0", "app-term-1"))
    gateway.restart(signal.SIGTERM)  # as a deployment's rolling restart does
    run = finish_apps(apps, turns, began_s)
    calls = calls_by_trace(run.rows)
    aborted = aborted_traces(calls)
    traces = delivered_after_restart(stack, run, start_ns)
    # The stopping gateway decides every trace it holds (drop_pending_traces_on_shutdown: false)
    # after its receiver has closed; what it refused the agents send again to the new process.
    # Whichever process holds an aborted call's span keeps it (keep-aborted-tool-calls), so no
    # aborted call is lost. A trace whose spans reached both processes is decided twice on
    # partial data: its other half may be sampled out, so it may not arrive whole.
    aborted_calls = {r["call_id"] for r in run.rows if r["outcome"] == n.ABORTED}
    missing = aborted_calls - aborted_spans_stored(traces)
    split = {t for t in aborted if not whole(traces.get(t, []), calls[t])}
    print(f"\ngateway graceful restart: {len(split)} of {len(aborted)} aborted-call traces not whole")
    assert missing == set(), f"{len(missing)} of {len(aborted_calls)} aborted calls lost across the restart"
    assert firing(stack, "ToolCallsAbortedRateHigh", "toolcall_metrics")


# ------------------------------------------------------------------ a drop the pipeline counts


def dropping_page(stack: Stack) -> set[str]:
    assert stack.webhook is not None
    return {
        a["labels"]["reason"]
        for a in stack.webhook.alerts()
        if a["labels"]["alertname"] == "OtelcolPipelineDroppingSpans"
        and a["status"] == "firing"
        and a["labels"].get("job") == "otelcol-gateway"
    }


def test_a_jaeger_outage_longer_than_the_queue_is_counted_and_pages(pipeline: Any) -> None:
    # Last in the module: it makes the pipeline drop spans.
    stack, _, start_ns = pipeline
    assert dropping_page(stack) == set()  # the faults above lost nothing that a counter sees
    jaeger = stack.procs["jaeger"]
    jaeger.stop()
    run = run_apps(stack, OUTAGE_TURNS, ("app-drop-0", "app-drop-1"))
    poll("OtelcolPipelineDroppingSpans (enqueue_failed) at the webhook", lambda: dropping_page(stack))
    jaeger.start()
    counts = reconciled(stack, run, start_ns, "Jaeger outage past the queue")
    assert counts["gateways_dropped"] > 0 and counts["agents_dropped"] == 0
    assert dropping_page(stack) == {"enqueue_failed"}
