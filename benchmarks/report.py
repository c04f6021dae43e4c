"""Medians over rounds, paired overheads against the bare SDK, and the markdown of RESULTS.md."""

from __future__ import annotations

import statistics
from typing import Any

from turn_report import LABELS, floor_table, instruction_table, turn_table, turn_targets


def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def paired(
    rounds: list[Any], bare: list[Any], workload: str, key: str
) -> tuple[float | None, float | None, float | None]:
    """(median value, median paired difference, median paired ratio) over rounds both ran."""
    values, diffs, ratios = [], [], []
    for mine, base in zip(rounds, bare, strict=False):
        if mine is None or workload not in mine:
            continue
        value = mine[workload][key]
        values.append(value)
        if base is not None and workload in base and base[workload][key]:
            diffs.append(value - base[workload][key])
            ratios.append(value / base[workload][key])
    return median(values), median(diffs), median(ratios)


def summarize(runs: dict[str, dict[str, list[Any]]], plan: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for provider, variants in runs.items():
        bare = variants.get("bare", [])
        table: dict[str, Any] = {}
        for variant, rounds in variants.items():
            row: dict[str, Any] = {}
            for workload in plan:
                if workload.startswith("mem"):
                    key = "peak_bytes"
                elif workload.startswith("turn"):
                    key = "cpu_us_per_stream"
                else:
                    key = "cpu_us_per_chunk"
                value, diff, ratio = paired(rounds, bare, workload, key)
                cell: dict[str, Any] = {"value": value, "extra": diff, "ratio": ratio}
                if workload.startswith(("len", "turn")):
                    cell["wall"] = paired(rounds, bare, workload, "wall_us_per_chunk")[0]
                    cell["spans"] = median([r[workload]["spans_per_stream"] for r in rounds if r])
                    cell["chunks"] = next((r[workload]["chunks"] for r in rounds if r), None)
                if workload.startswith("concurrent"):
                    cell["streams_per_s"] = paired(rounds, bare, workload, "streams_per_s")[0]
                row[workload] = cell
            row["sdk_tracing"] = next((r.get("sdk_tracing") for r in rounds if r), None)
            row["rounds_ok"] = sum(1 for r in rounds if r)
            table[variant] = row
        out[provider] = table
    return out


def _f(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _kib(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1024:,.1f} KiB"


def markdown(
    summary: dict[str, Any],
    info: dict[str, Any],
    versions: dict[str, dict[str, str]],
    venv_of: dict[str, str],
    hotpath: dict[str, Any] | None,
    *,
    quick: bool,
    instructions: dict[str, Any] | None = None,
) -> str:
    plan = info["plan"]
    lengths = [w for w in plan if w.startswith("len")]
    mems = [w for w in plan if w.startswith("mem")]
    lines = [
        "# Benchmark results" + (" (quick mode)" if quick else ""),
        "",
        *(
            [
                "Quick mode: 2 rounds, so the end-to-end figures move by about +-2 us/chunk from run to run; "
                "the replay table (the package alone) is the one to compare before and after a change.",
                "",
            ]
            if quick
            else []
        ),
        f"Date: {info['date']}. Machine: {info['nproc']} cores, {info['cpu']}, Python {info['python']}, "
        f"{info['platform']}. Load average (1/5/15 min) at start "
        f"{'/'.join(f'{x:.1f}' for x in info['loadavg_start'])}, at end "
        f"{'/'.join(f'{x:.1f}' for x in info['loadavg_end'])}: the machine is shared with other engineers' "
        f"test runs, so its load changes during a run. {info['rounds']} interleaved rounds, each variant "
        f"in a fresh process per round, {info['seconds']} s in all."
        + (
            f" Instruction counts (callgrind) ran alone before the rounds: {info['instructions_seconds']} s."
            if info.get("instructions_seconds") is not None
            else ""
        )
        + (f" Tree: {info['commit']}." if info.get("commit") else ""),
        "",
        "Cost = CPU time of the client process while it consumes the stream (the fake provider runs in "
        "another process), per chunk the SDK yields; the minimum over a workload's repetitions within a "
        "process, then the median over rounds. *extra* and *ratio* are medians of per-round paired "
        "differences/ratios against the bare SDK of the same round. Every variant uses an SDK "
        "TracerProvider with a SimpleSpanProcessor into an in-memory exporter and an SDK MeterProvider; "
        "peers run with their default settings (OpenLLMetry and OpenInference record message content by "
        "default). `spans` = spans finished per stream (a check that the variant really traced).",
        "",
    ]
    reused = info.get("instructions_reused")
    if reused:
        lines += [
            f"Instruction counts of {', '.join(LABELS.get(v, v) for v in reused['variants'])} are those of "
            f"`{reused['from']}` (the same venvs, SDK versions and streams: their code does not change with "
            "this tree, and a count repeats to ~0.1%); otel_toolcalls was counted in this run.",
            "",
        ]
    for provider, table in summary.items():
        if not table:
            continue
        lines += [f"## {provider}", ""]
        header = (
            "| variant | "
            + " | ".join(f"{w[3:]} frags: us/chunk (extra, ratio)" for w in lengths)
            + " | spans |"
        )
        lines += [header, "|" + "---|" * (len(lengths) + 2)]
        for variant, row in table.items():
            cells = []
            for w in lengths:
                c = row[w]
                if variant == "bare":
                    cells.append(f"{_f(c['value'], '.2f')}")
                else:
                    cells.append(
                        f"{_f(c['value'], '.2f')} ({_f(c['extra'], '+.2f')}, {_f(c['ratio'], '.3f')}x)"
                    )
            spans = row[lengths[-1]].get("spans")
            lines.append(
                f"| {LABELS.get(variant, variant)} | " + " | ".join(cells) + f" | {_f(spans, '.0f')} |"
            )
        lines += turn_table(table, [w for w in plan if w.startswith("turn")])
        lines += instruction_table(instructions.get(provider) if instructions else None, plan)
        lines += floor_table(instructions.get(provider) if instructions else None, plan)
        conc = next((w for w in plan if w.startswith("concurrent")), None)
        lines += _concurrency_and_memory(table, plan, conc, mems)
        if provider == "anthropic":
            flags = ", ".join(
                f"{LABELS.get(v, v)}: {'on' if r['sdk_tracing'] else 'off'}" for v, r in table.items()
            )
            lines += ["", f"anthropic SDK's own tracing per variant (read back from the client): {flags}."]
        lines.append("")
    lines += _rest(summary, info, versions, venv_of, hotpath, instructions, plan, lengths, mems)
    return "\n".join(lines)


def _concurrency_and_memory(
    table: dict[str, Any], plan: dict[str, int], conc: str | None, mems: list[str]
) -> list[str]:
    if conc is None and not mems:
        return []
    lines = ["", "Concurrency and memory:", ""]
    head = "| variant |"
    if conc:
        head += f" {plan[conc]} concurrent async streams: streams/s, us/chunk (ratio) |"
    head += "".join(f" peak per stream, {w[3:]} argument (extra vs bare) |" for w in mems)
    lines += [head, "|" + "---|" * (1 + (1 if conc else 0) + len(mems))]
    for variant, row in table.items():
        cells = []
        if conc:
            c = row[conc]
            rate = _f(c.get("streams_per_s"), ",.0f")
            cells.append(f"{rate}/s, {_f(c['value'], '.2f')} ({_f(c['ratio'], '.3f')}x)")
        for w in mems:
            m = row[w]
            extra = m["extra"]
            cells.append(f"{_kib(m['value'])} ({'n/a' if extra is None else f'{extra / 1024:+,.1f} KiB'})")
        lines.append(f"| {LABELS.get(variant, variant)} | " + " | ".join(cells) + " |")
    return lines


def _rest(
    summary: Any,
    info: Any,
    versions: Any,
    venv_of: Any,
    hotpath: Any,
    instructions: Any,
    plan: dict[str, int],
    lengths: list[str],
    mems: list[str],
) -> list[str]:
    lines: list[str] = []
    if hotpath:
        lines += [
            "## otel_toolcalls alone: the package's own cost, SDK and socket excluded",
            "",
            "The chunks the real SDK parsed from the fake provider, replayed from a list, bare and through "
            "`wrap_sync` + the adapter's translator with a real `StreamState` and SDK providers (minimum of "
            "interleaved repetitions; benchmarks/hotpath.py). *hot*: fragment chunks cycle through 64 "
            "objects, so they are in the CPU cache as a chunk the SDK has just parsed is; *cold*: every "
            "chunk a distinct object parsed long before (an upper bound: cache misses the real stream "
            "does not pay). *per stream*: the whole difference, spans and metrics included.",
            "",
            "| provider | fragments | chunks | hot: extra us/chunk | cold: extra us/chunk "
            "| per stream (hot) |",
            "|---|---|---|---|---|---|",
        ]
        for provider, by_length in hotpath.items():
            for length, cell in by_length.items():
                hot, cold = cell["hot"], cell["cold"]
                lines.append(
                    f"| {provider} | {length} | {hot['chunks']} | {hot['us_per_chunk']:+.3f} | "
                    f"{cold['us_per_chunk']:+.3f} | {hot['us_per_stream']:+,.0f} us |"
                )
        lines.append("")
    lines += targets(summary, hotpath, lengths, mems)
    lines += turn_targets(summary, instructions, [w for w in plan if w.startswith("turn")])
    lines += ["## Versions", "", "| venv | variants | packages |", "|---|---|---|"]
    for venv, packages in versions.items():
        users = ", ".join(LABELS.get(v, v) for v, e in venv_of.items() if e == venv)
        pkgs = ", ".join(f"{k} {v}" for k, v in sorted(packages.items()))
        lines.append(f"| {venv} | {users} | {pkgs} |")
    lines.append("")
    return lines


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def targets(
    summary: dict[str, Any], hotpath: dict[str, Any] | None, lengths: list[str], mems: list[str]
) -> list[str]:
    """The issue's targets, checked against this run's numbers."""
    if "len4000" not in lengths and not mems:
        return []  # a run without the 4,000-fragment stream and the memory workloads checks none
    lines = ["## Targets (otel_toolcalls)", "", "| target | provider | measured | verdict |"]
    lines.append("|---|---|---|---|")
    for provider, table in summary.items():
        row = table.get("otel_toolcalls")
        if row is None or "len4000" not in row:
            continue
        cell = row["len4000"]
        extra, ratio = cell["extra"], cell["ratio"]
        lines.append(
            f"| end to end, 4,000 fragments: at most +1 us/chunk | {provider} | {_f(extra, '+.2f')} us |"
            f" {_verdict(None if extra is None else extra <= 1.0)} |"
        )
        lines.append(
            f"| end to end, 4,000 fragments: at most 1.02x bare | {provider} | {_f(ratio, '.3f')}x |"
            f" {_verdict(None if ratio is None else ratio <= 1.02)} |"
        )
        if hotpath and "4000" in hotpath.get(provider, {}):
            own = hotpath[provider]["4000"]["hot"]["us_per_chunk"]
            lines.append(
                f"| package alone (replay), 4,000 fragments: at most +1 us/chunk | {provider} | "
                f"{own:+.3f} us | {_verdict(own <= 1.0)} |"
            )
        if hotpath and provider in hotpath:
            long = [hotpath[provider][w[3:]]["hot"]["us_per_chunk"] for w in lengths if int(w[3:]) >= 500]
            if len(long) >= 2:
                # Flat: the longest stream costs no more per chunk than the 500-fragment one.
                lines.append(
                    f"| flat cost per chunk, 500 to {lengths[-1][3:]} fragments (replay) | {provider} | "
                    f"{min(long):+.3f} to {max(long):+.3f} us |"
                    f" {_verdict(long[-1] <= long[0] * 1.1 + 0.05)} |"
                )
        peaks = {w: row[w]["extra"] for w in mems if row.get(w, {}).get("extra") is not None}
        for w, extra in peaks.items():
            lines.append(
                f"| peak memory of a {w[3:]} argument: under +64 KiB over bare | {provider} | "
                f"{extra / 1024:+,.1f} KiB | {_verdict(extra < 64 * 1024)} |"
            )
    lines += [
        "",
        "Short streams cost more per chunk for every variant: the request and the spans are paid once per "
        "stream and spread over few chunks (see the per-stream column of the replay table).",
        "",
    ]
    return lines


def main(source: str) -> None:
    import json
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from variants import VARIANTS

    with open(source) as f:
        data = json.load(f)
    venv_of = {v[0]: v[1] for v in VARIANTS if any(v[0] in t for t in data["summary"].values())}
    hotpath = data.get("hotpath")
    print(
        markdown(
            data["summary"],
            data["machine"],
            data["versions"],
            venv_of,
            hotpath,
            quick=False,
            instructions=data.get("instructions"),
        )
    )


if __name__ == "__main__":
    import sys

    main(sys.argv[1])
