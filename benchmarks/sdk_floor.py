"""The OpenTelemetry SDK's own cost of the signals an instrumentation emits in one agent turn.

A variant's extra instructions per turn are its own code plus what the OpenTelemetry SDK does with
the spans and metric records it hands over. The second part is fixed by what is emitted: given the
same spans (names, attributes, parents, status) and records (instrument, value, attributes), any
instrumentation pays it. Here one instrumented turn is run in process and every SDK call it makes is
written down (``capture``); a fresh process then replays exactly those calls against fresh SDK
providers set up as the worker's (SimpleSpanProcessor into memory, an in-memory metric reader),
under callgrind, with no SDK client, socket or instrumentation code (``replay``). The count is the
floor of the variant's extra: its SDK cost alone, its own code excluded.

    python benchmarks/sdk_floor.py [--providers openai,anthropic] [--workloads turn0,turn2]

What is written down: ``Tracer.start_span`` (parent, kind, attributes; links are refused, no turn
has any), the span's ``set_attribute(s)``, ``set_status``, ``add_event``, ``end``; synchronous
instruments' ``add`` / ``record``. An observable instrument's callback runs at collection, not in the
turn, so it costs nothing here (as in the turn's own count). Context attaches are not replayed: the
package attaches none per turn; a peer's ``start_as_current_span`` would add a little.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import gc
import inspect
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import streams  # noqa: E402

Script = dict[str, Any]  # {"instruments": {name: [kind, unit, boundaries]}, "calls": [[op, ...]]}

_SPAN_METHODS = ("set_attribute", "set_attributes", "set_status", "add_event", "end")
_METRIC_KINDS = {"_Counter": "counter", "_UpDownCounter": "updown", "_Histogram": "histogram"}


class _Recorder:
    """Writes down the outermost SDK call only (the SDK's ``set_attribute`` calls its own
    ``set_attributes``; ``start_as_current_span`` calls ``start_span``)."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []
        self.instruments: dict[str, list[Any]] = {}
        self.ids: dict[int, int] = {}
        self.local = threading.local()

    @contextlib.contextmanager
    def outermost(self) -> Iterator[bool]:
        depth = getattr(self.local, "depth", 0)
        self.local.depth = depth + 1
        try:
            yield depth == 0
        finally:
            self.local.depth = depth

    def span_id(self, span: Any) -> int | None:
        return self.ids.get(id(span))


def _parent(recorder: _Recorder, context: Any) -> int | None:
    from opentelemetry import trace

    return recorder.span_id(trace.get_current_span(context))


@contextlib.contextmanager
def _recording(recorder: _Recorder) -> Iterator[None]:
    from opentelemetry.sdk.metrics._internal import instrument as sdk_instruments
    from opentelemetry.sdk.trace import Span, Tracer

    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, make: Any) -> None:
        original = getattr(owner, name)
        saved.append((owner, name, original))
        setattr(owner, name, make(original))

    def start_span(original: Any) -> Any:
        signature = inspect.signature(original)

        def start(*args: Any, **kwargs: Any) -> Any:
            with recorder.outermost() as outer:
                span = original(*args, **kwargs)
            if outer:
                given = signature.bind(*args, **kwargs).arguments
                if given.get("links"):
                    raise SystemExit("sdk_floor: a span with links; the replay does not make them")
                recorder.ids[id(span)] = len(recorder.ids)
                kind = getattr(given.get("kind"), "name", "INTERNAL")
                parent = _parent(recorder, given.get("context"))
                attributes = dict(given.get("attributes") or {})
                recorder.calls.append(
                    ["start", recorder.ids[id(span)], given["name"], parent, kind, attributes]
                )
            return span

        return start

    def span_method(method: str) -> Any:
        def make(original: Any) -> Any:
            def call(self: Any, *args: Any, **kwargs: Any) -> Any:
                with recorder.outermost() as outer:
                    result = original(self, *args, **kwargs)
                known = recorder.span_id(self)
                if outer and known is not None:
                    recorder.calls.append([method, known, _arguments(method, args, kwargs)])
                return result

            return call

        return make

    def measure_call(kind: str) -> Any:
        def make(original: Any) -> Any:
            def call(self: Any, amount: Any, attributes: Any = None, *args: Any, **kwargs: Any) -> Any:
                advisory = getattr(self, "_advisory", None)
                boundaries = list(getattr(advisory, "explicit_bucket_boundaries", None) or [])
                recorder.instruments.setdefault(self.name, [kind, self.unit, boundaries])
                recorder.calls.append(["measure", self.name, amount, dict(attributes or {})])
                return original(self, amount, attributes, *args, **kwargs)

            return call

        return make

    patch(Tracer, "start_span", start_span)
    for method in _SPAN_METHODS:
        patch(Span, method, span_method(method))
    for class_name, kind in _METRIC_KINDS.items():
        owner = getattr(sdk_instruments, class_name)
        patch(owner, "add" if kind != "histogram" else "record", measure_call(kind))
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _arguments(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if method == "set_status":
        status = args[0] if args else kwargs.get("status")
        code = getattr(status, "status_code", status)
        return [getattr(code, "name", "UNSET"), getattr(status, "description", None)]
    if method == "set_attribute":
        return list(args)
    if method == "set_attributes":
        return dict(args[0] if args else kwargs.get("attributes") or {})
    if method == "add_event":
        return [args[0] if args else kwargs.get("name"), dict(kwargs.get("attributes") or {})]
    return None  # end: the time is the replay's own


def capture(variant: str, provider: str, workload: str) -> Script:
    """Every SDK call of one ``variant`` turn (in this process: run one capture per process)."""
    import worker

    from otel_toolcalls.testing import FakeProvider

    if provider == "anthropic":
        os.environ["ANTHROPIC_OPEN_TELEMETRY"] = "true" if variant == "anthropic_own" else "false"
    build = streams.openai_script if provider == "openai" else streams.anthropic_script
    with FakeProvider(default=build(workload)) as fake:
        exporter = worker.instrument(variant, provider)
        make, open_sync, _ = worker.clients(provider, {})
        client = make(fake.base_url)
        for _ in range(2):  # first-use work (imports, caches) is not the turn's
            for _ in open_sync(client):
                pass
        recorder = _Recorder()
        with _recording(recorder):
            for _ in open_sync(client):
                pass
        if exporter is not None:
            exporter.clear()
    return {"instruments": recorder.instruments, "calls": recorder.calls}


def _providers() -> tuple[Any, Any, Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    tracer = tracer_provider.get_tracer("sdk_floor")
    return tracer, meter_provider.get_meter("sdk_floor"), exporter, meter_provider


def _instruments(meter: Any, specs: dict[str, list[Any]]) -> dict[str, Any]:
    made: dict[str, Any] = {}
    for name, (kind, unit, boundaries) in specs.items():
        if kind == "histogram":
            extra = {"explicit_bucket_boundaries_advisory": boundaries} if boundaries else {}
            made[name] = meter.create_histogram(name, unit=unit, **extra)
        elif kind == "updown":
            made[name] = meter.create_up_down_counter(name, unit=unit)
        else:
            made[name] = meter.create_counter(name, unit=unit)
    return made


def _replay_once(tracer: Any, made: dict[str, Any], calls: list[list[Any]]) -> None:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode

    spans: dict[int, Any] = {}
    for call in calls:
        op = call[0]
        if op == "start":
            _, key, name, parent, kind, attributes = call
            context = trace.set_span_in_context(spans[parent]) if parent is not None else None
            spans[key] = tracer.start_span(name, context, kind=SpanKind[kind], attributes=attributes)
        elif op == "measure":
            _, name, amount, attributes = call
            instrument = made[name]
            (instrument.record if hasattr(instrument, "record") else instrument.add)(amount, attributes)
        else:
            span, argument = spans[call[1]], call[2]
            if op == "set_attributes":
                span.set_attributes(argument)
            elif op == "set_attribute":
                span.set_attribute(*argument)
            elif op == "set_status":
                span.set_status(Status(StatusCode[argument[0]], argument[1]))
            elif op == "add_event":
                span.add_event(argument[0], attributes=argument[1])
            elif op == "end":
                span.end()


def replay(script: Script, turns: int, prefix: str) -> float:
    """Instructions per turn of the replayed calls, counted in one callgrind dump (this process
    runs under callgrind, as worker.py's --callgrind does)."""
    import worker

    tracer, meter, exporter, _keep = _providers()
    made = _instruments(meter, script["instruments"])
    calls = script["calls"]
    for _ in range(3):  # the series and the code paths exist before the count, as in the turn's
        _replay_once(tracer, made, calls)
    exporter.clear()
    gc.collect()
    gc.freeze()
    start = os.environ.get("OTEL_TOOLCALLS_BENCH_CGSTART")
    if start:
        ctypes.CDLL(start).otel_toolcalls_bench_start()
        _replay_once(tracer, made, calls)
        exporter.clear()
    before = worker.callgrind_dumps(prefix)

    def turns_of(_: int, __: int) -> int:
        for _ in range(turns):
            _replay_once(tracer, made, calls)
        return 0

    functools.reduce(turns_of, (0, 0))
    (dump,) = sorted(worker.callgrind_dumps(prefix) - before)
    total = worker.callgrind_total(dump)
    os.remove(dump)
    return total / turns


def _capture_in_subprocess(python: str, variant: str, provider: str, workload: str) -> Script | None:
    done = subprocess.run(
        [python, __file__, "--capture", variant, provider, workload],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        print(
            f"[bench] sdk_floor capture {variant}/{provider}/{workload} failed:\n{done.stderr[-2000:]}",
            file=sys.stderr,
        )
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _count(python: str, script: Script, turns: int, start: str | None) -> float:
    import instructions

    with tempfile.TemporaryDirectory(prefix="otel-toolcalls-floor-") as tmp:
        path, prefix = os.path.join(tmp, "script.json"), os.path.join(tmp, "cg")
        with open(path, "w") as f:
            json.dump(script, f)
        command = [
            *instructions.callgrind_command(prefix, start),
            python,
            __file__,
            "--replay",
            path,
            "--turns",
            str(turns),
            "--prefix",
            prefix,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0", "OTEL_TOOLCALLS_BENCH_CGSTART": start or ""}
        done = subprocess.run(command, capture_output=True, text=True, timeout=1200, env=env, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["instructions_per_stream"])


def summary(script: Script) -> dict[str, int]:
    """What the turn emitted: spans started, metric records (synchronous instruments)."""
    calls = script["calls"]
    return {
        "spans": sum(1 for c in calls if c[0] == "start"),
        "records": sum(1 for c in calls if c[0] == "measure"),
    }


def _floor(python: str, variant: str, provider: str, workload: str, turns: int, start: str | None) -> Any:
    script = _capture_in_subprocess(python, variant, provider, workload)
    if script is None:
        return None
    return {"sdk_floor_per_stream": _count(python, script, turns, start), **summary(script)}


def measure(
    jobs: list[tuple[str, str, str]], workloads: list[str], *, turns: int = 5, parallel: int = 2
) -> dict[str, dict[str, dict[str, Any]]]:
    """``jobs``: (python, variant, provider). {provider: {variant: {workload: {"sdk_floor_per_stream",
    "spans", "records"}}}}; a capture that failed is left out (and said on stderr). Counts do not
    depend on the load: ``parallel`` at a time."""
    import instructions

    out: dict[str, dict[str, dict[str, Any]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="otel-toolcalls-cgstart-") as tmp,
        ThreadPoolExecutor(max_workers=parallel) as pool,
    ):
        start = instructions.start_library(tmp)
        futures = {
            (variant, provider, workload): pool.submit(
                _floor, python, variant, provider, workload, turns, start
            )
            for python, variant, provider in jobs
            for workload in workloads
        }
        for (variant, provider, workload), future in futures.items():
            row = future.result()
            if row is not None:
                out.setdefault(provider, {}).setdefault(variant, {})[workload] = row
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--capture", nargs=3, metavar=("VARIANT", "PROVIDER", "WORKLOAD"))
    parser.add_argument("--replay", help="a captured script (JSON), replayed under callgrind")
    parser.add_argument("--prefix", help="with --replay: callgrind's --callgrind-out-file prefix")
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--variants", default="otel_toolcalls")
    parser.add_argument("--providers", default="openai,anthropic")
    parser.add_argument("--workloads", default=",".join(f"turn{c}" for c in streams.TURN_CALLS))
    args = parser.parse_args()
    if args.capture:
        print(json.dumps(capture(*args.capture)))
        return 0
    if args.replay:
        with open(args.replay) as f:
            script = json.load(f)
        print(json.dumps({"instructions_per_stream": replay(script, args.turns, args.prefix)}))
        return 0
    workloads = args.workloads.split(",")
    jobs = [(sys.executable, v, p) for p in args.providers.split(",") for v in args.variants.split(",")]
    result = measure(jobs, workloads, turns=args.turns)
    print("| provider | variant | " + " | ".join(workloads) + " |")
    print("|---|---|" + "---|" * len(workloads))
    for provider, variants in result.items():
        for variant, rows in variants.items():
            cells = [
                f"{r['sdk_floor_per_stream'] / 1e3:,.0f} k ({r['spans']} spans, {r['records']} records)"
                for r in (rows[w] for w in workloads)
            ]
            print(f"| {provider} | {variant} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
