"""The openai Realtime adapter against the bare SDK: CPU per event on one WebSocket response carrying
one tool call of 4,000 argument deltas, each variant in a fresh process, paired rounds.

    python benchmarks/realtime.py                # 5 rounds
    python benchmarks/realtime.py --rounds 9

The fake provider's WebSocket endpoint serves from a process of its own; each round runs the bare
SDK and the instrumented one (order alternating) in fresh processes that each read ``--reps``
responses; the overhead is the median of the per-round differences (report.paired's method).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import provider_streams  # noqa: E402

MODEL = "gpt-realtime"


def _frames() -> Any:
    from otel_toolcalls.testing import openai_realtime as wire

    call = wire.ToolCall(
        name="search", arguments="".join(provider_streams.pieces()), fragments=provider_streams.pieces()
    )
    return wire.frames(wire.turn(wire.response_events([call])))


def serve(ready: Any, stop: Any) -> None:
    from otel_toolcalls.testing import FakeProvider

    fake = FakeProvider().start()
    fake.websocket.default = _frames()
    ready.send(fake.websocket.base_url)
    stop.recv()
    fake.stop()


def worker(variant: str, url: str, reps: int) -> dict[str, float]:
    if variant == "otel_toolcalls":
        from opentelemetry.sdk.trace import TracerProvider

        from otel_toolcalls import ToolCallsInstrumentor

        ToolCallsInstrumentor().instrument(tracer_provider=TracerProvider())
    import openai

    client = openai.OpenAI(api_key="sk-bench", base_url="http://127.0.0.1:1/v1", websocket_base_url=url)
    samples = []
    for _ in range(reps + 1):  # the first warms up (imports, the first parse of each type)
        with client.realtime.connect(model=MODEL) as connection:
            connection.response.create()
            events, start = 0, time.process_time()
            for event in connection:
                events += 1
                if event.type == "response.done":
                    break
            samples.append((time.process_time() - start) * 1e6 / events)
    return {"cpu_us_per_event": statistics.median(samples[1:]), "events": events}


def _run(variant: str, url: str, reps: int) -> float:
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        variant,
        "--url",
        url,
        "--reps",
        str(reps),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["cpu_us_per_event"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--worker")
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.url, args.reps)))
        return
    ready, ready_child = multiprocessing.Pipe()
    stop_child, stop = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(ready_child, stop_child), daemon=True)
    server.start()
    url = ready.recv()
    bare, mine = [], []
    for round_ in range(args.rounds):
        order = ("bare", "otel_toolcalls") if round_ % 2 == 0 else ("otel_toolcalls", "bare")
        result = {variant: _run(variant, url, args.reps) for variant in order}
        bare.append(result["bare"])
        mine.append(result["otel_toolcalls"])
    stop.send(None)
    server.join(timeout=10)
    diffs = [m - b for m, b in zip(mine, bare, strict=True)]
    print(json.dumps({
        "bare_cpu_us_per_event": statistics.median(bare),
        "instrumented_cpu_us_per_event": statistics.median(mine),
        "overhead_us_per_event": statistics.median(diffs),
        "overhead_ratio": statistics.median(m / b for m, b in zip(mine, bare, strict=True)),
        "rounds": args.rounds,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
