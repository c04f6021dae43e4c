"""The agent-turn part of RESULTS.md: the turn tables (CPU time and instructions, 0 to 8 calls per
turn), the per-stream / per-call split, and the turn targets."""

from __future__ import annotations

from typing import Any

LABELS = {
    "bare": "bare SDK",
    "otel_toolcalls": "otel_toolcalls",
    "anthropic_own": "anthropic SDK's own tracing",
    "openllmetry": "OpenLLMetry",
    "otel_openai_v2": "OTel openai-v2",
    "otel_genai_openai": "OTel genai-openai",
    "openinference": "OpenInference",
}

# The target on openai: the package's extra per two-call turn at most this share of openai-v2's.
OPENAI_V2_SHARE = 0.7


def calls_of(workload: str) -> int:
    return int(workload.removeprefix("turn"))


def fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """(per stream, per call): the least-squares line through (calls per turn, extra per turn)."""
    if len(points) < 2:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx, slope


def _f(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _header(turns: list[str], suffix: str, after: list[str]) -> list[str]:
    """A turn table's header: a column per workload ("2 calls" + ``suffix``), then ``after``."""
    cells = [f"{calls_of(w)} call{'s' if calls_of(w) != 1 else ''}{suffix}" for w in turns]
    return ["| variant | " + " | ".join(cells + after) + " |", "|" + "---|" * (len(cells) + len(after) + 1)]


def cpu_extra(summary_row: dict[str, Any], workload: str) -> float | None:
    cell = summary_row.get(workload) or {}
    return cell.get("extra")


def instruction_extra(instructions: dict[str, Any] | None, variant: str, workload: str) -> float | None:
    """Extra instructions per turn over the bare SDK's count of the same workload."""
    if not instructions:
        return None
    mine, bare = instructions.get(variant), instructions.get("bare")
    if not mine or not bare or workload not in mine or workload not in bare:
        return None
    return float(mine[workload]["instructions_per_stream"] - bare[workload]["instructions_per_stream"])


def turn_table(table: dict[str, Any], turns: list[str]) -> list[str]:
    """CPU time per turn: text, then 0..8 parallel tool calls; the line through the extras splits
    them into a per-stream and a per-call part."""
    if not turns:
        return []
    lines = [
        "",
        "Agent turn (text, then N parallel tool calls): client CPU us per turn (extra, ratio); "
        "*per stream* / *per call*: the least-squares line through the extras:",
        "",
        *_header(turns, "", ["per stream", "per call", "spans (at the most calls)"]),
    ]
    for variant, row in table.items():
        cells = []
        for w in turns:
            c = row.get(w) or {}
            if variant == "bare":
                cells.append(_f(c.get("value"), ",.0f"))
            else:
                value, extra, ratio = c.get("value"), c.get("extra"), c.get("ratio")
                cells.append(f"{_f(value, ',.0f')} ({_f(extra, '+,.0f')}, {_f(ratio, '.3f')}x)")
        line = fit([(calls_of(w), e) for w in turns if (e := cpu_extra(row, w)) is not None])
        split = ["", ""] if variant == "bare" or line is None else [f"{line[0]:+,.0f}", f"{line[1]:+,.1f}"]
        spans = (row.get(turns[-1]) or {}).get("spans")
        lines.append(
            f"| {LABELS.get(variant, variant)} | " + " | ".join(cells + split) + f" | {_f(spans, '.0f')} |"
        )
    return lines


def instruction_table(instructions: dict[str, Any] | None, plan: dict[str, int]) -> list[str]:
    if not instructions:
        return []
    turns = [w for w in plan if w.startswith("turn")]
    lines = [
        "",
        "The same turns counted in instructions (valgrind callgrind, benchmarks/instructions.py): "
        "millions of instructions per turn (extra over bare, thousands):",
        "",
        *_header(turns, "", ["per stream", "per call"]),
    ]
    for variant, row in instructions.items():
        if not row:
            lines.append(f"| {LABELS.get(variant, variant)} |" + " n/a |" * (len(turns) + 2))
            continue
        cells = []
        for w in turns:
            mine = (row.get(w) or {}).get("instructions_per_stream")
            extra = instruction_extra(instructions, variant, w)
            if variant == "bare" or extra is None:
                cells.append(_f(None if mine is None else mine / 1e6, ".3f"))
            else:
                cells.append(f"{mine / 1e6:.3f} ({extra / 1e3:+,.0f} k)")
        line = fit(
            [
                (calls_of(w), e)
                for w in turns
                if (e := instruction_extra(instructions, variant, w)) is not None
            ]
        )
        split = (
            ["", ""]
            if variant == "bare" or line is None
            else [f"{line[0] / 1e3:+,.0f} k", f"{line[1] / 1e3:+,.1f} k"]
        )
        lines.append(f"| {LABELS.get(variant, variant)} | " + " | ".join(cells + split) + " |")
    return lines


def floor_of(instructions: dict[str, Any] | None, variant: str, workload: str) -> float | None:
    """The OpenTelemetry SDK's own cost of the variant's spans and records in the turn (sdk_floor.py)."""
    row = ((instructions or {}).get(variant) or {}).get(workload) or {}
    return row.get("sdk_floor_per_stream")


def floor_table(instructions: dict[str, Any] | None, plan: dict[str, int]) -> list[str]:
    """Each variant's extra split in two: the SDK's cost of what it emitted, and its own code."""
    turns = [w for w in plan if w.startswith("turn")]
    variants = [v for v in instructions or {} if any(floor_of(instructions, v, w) for w in turns)]
    if not variants:
        return []
    lines = [
        "",
        "Where each extra goes (benchmarks/sdk_floor.py): *SDK*, the OpenTelemetry SDK's own cost of the "
        "spans and metric records the variant emitted in the turn, every one replayed with its name, "
        "parent, attributes and status against fresh SDK providers with nothing else running; *own*, the "
        "rest of its extra (its own code: extra minus SDK). Thousands of instructions per turn; *per "
        "call*: the slope of each through the turns, as the per call above; "
        "*signals*: spans and synchronous metric records per turn at the most calls.",
        "",
        *_header(turns, ": SDK / own", ["per call: SDK / own", "signals"]),
    ]
    for variant in variants:
        cells = []
        sdk_points: list[tuple[int, float]] = []
        own_points: list[tuple[int, float]] = []
        for w in turns:
            floor, extra = floor_of(instructions, variant, w), instruction_extra(instructions, variant, w)
            own = None if floor is None or extra is None else extra - floor
            if floor is not None and own is not None:
                sdk_points.append((calls_of(w), floor))
                own_points.append((calls_of(w), own))
            sdk_k = None if floor is None else floor / 1e3
            own_k = None if own is None else own / 1e3
            cells.append(f"{_f(sdk_k, ',.0f')} / {_f(own_k, '+,.0f')}")
        # The per-call part of each, as the instruction table's per call: the slope of its line.
        sdk_line, own_line = fit(sdk_points), fit(own_points)
        per_call = (
            "n/a"
            if sdk_line is None or own_line is None
            else f"{sdk_line[1] / 1e3:,.1f} / {own_line[1] / 1e3:+,.1f}"
        )
        cells.append(per_call)
        last = [
            row for w in turns if (row := (instructions or {})[variant].get(w) or {}).get("spans") is not None
        ]
        signals = f"{last[-1]['spans']} spans, {last[-1]['records']} records" if last else "n/a"
        lines.append(f"| {LABELS.get(variant, variant)} | " + " | ".join(cells) + f" | {signals} |")
    return lines


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "**missed**")


def _cmp(mine: float | None, bound: float | None, *, strict: bool) -> bool | None:
    if mine is None or bound is None:
        return None
    return mine < bound if strict else mine <= bound


Row = tuple[str, str, str, str, "bool | None", "bool | None"]
Pair = tuple["float | None", "float | None"]  # (the package's extra, the bound)


def _row(target: str, provider: str, instr: Pair, cpu: Pair | None, *, strict: bool) -> Row:
    """A target's row: judged on instructions, the CPU-time verdict beside it (None: not judged)."""
    return (
        target,
        provider,
        _pair(*instr, "instr"),
        "n/a" if cpu is None else _pair(*cpu, "us"),
        _cmp(*instr, strict=strict),
        None if cpu is None else _cmp(*cpu, strict=strict),
    )


def _scaled(value: float | None, share: float) -> float | None:
    return None if value is None else share * value


def _extras(counted: Any, table: dict[str, Any], peer: str, workload: str) -> tuple[Pair, Pair]:
    """(instructions, CPU us): the package's extra and the peer's, on ``workload``."""
    return (
        (instruction_extra(counted, "otel_toolcalls", workload), instruction_extra(counted, peer, workload)),
        (cpu_extra(table["otel_toolcalls"], workload), cpu_extra(table[peer], workload)),
    )


def _bound_rows(provider: str, table: dict[str, Any], counted: Any) -> list[Row]:
    """The issue's two bounds on the two-call turn: 0.7x openai-v2's extra (and whether the SDK's
    cost of the package's signals alone could meet it), the anthropic SDK's own tracing's."""
    if provider == "openai" and "otel_openai_v2" in table:
        (m_i, p_i), (m_c, p_c) = _extras(counted, table, "otel_openai_v2", "turn2")
        bound = _scaled(p_i, OPENAI_V2_SHARE)
        rows = [_row(f"2-call turn: extra at most {OPENAI_V2_SHARE}x OTel openai-v2's", provider,
                     (m_i, bound), (m_c, _scaled(p_c, OPENAI_V2_SHARE)), strict=False)]  # fmt: skip
        floor = floor_of(counted, "otel_toolcalls", "turn2")
        if floor is not None:
            # Whether any code emitting the package's spans and records could meet the bound.
            target = "the same, for the SDK's cost of the package's spans and records alone"
            rows.append(_row(target, provider, (floor, bound), None, strict=False))
        return rows
    if provider == "anthropic" and "anthropic_own" in table:
        instr, cpu = _extras(counted, table, "anthropic_own", "turn2")
        return [
            _row("2-call turn: extra at most the SDK's own tracing's", provider, instr, cpu, strict=False)
        ]
    return []


def turn_targets(summary: dict[str, Any], instructions: dict[str, Any] | None, turns: list[str]) -> list[str]:
    """The issue-12 targets: judged on instructions (paired, repeatable whatever the load), the
    CPU-time verdict next to it."""
    rows: list[Row] = []
    for provider, table in summary.items():
        if table.get("otel_toolcalls") is None:
            continue
        counted = (instructions or {}).get(provider)
        if "turn2" in turns:
            rows += _bound_rows(provider, table, counted)
        for w in turns:
            for peer in (v for v in table if v not in ("bare", "otel_toolcalls")):
                instr, cpu = _extras(counted, table, peer, w)
                target = f"{calls_of(w)}-call turn: extra below {LABELS.get(peer, peer)}'s"
                rows.append(_row(target, provider, instr, cpu, strict=True))
    if not rows:
        return []
    lines = [
        "## Turn targets (issue 12)",
        "",
        "Judged on instructions: the paired difference to the bare SDK's count is the same from run "
        "to run whatever else the machine runs, while the CPU-time difference of one turn (~100-600 us) "
        "moves by tens of microseconds with the load of this shared 2-core machine. The CPU-time "
        "verdict, what a user pays, is given next to it.",
        "",
        "| target | provider | instructions: package vs bound | CPU us: package vs bound "
        "| verdict (instructions) | CPU time |",
        "|---|---|---|---|---|---|",
    ]
    for target, provider, instr_cell, cpu_cell, ok_i, ok_c in rows:
        lines.append(
            f"| {target} | {provider} | {instr_cell} | {cpu_cell} | {_verdict(ok_i)} | {_verdict(ok_c)} |"
        )
    lines.append("")
    return lines


def _pair(mine: float | None, bound: float | None, unit: str) -> str:
    return f"{_amount(mine, unit)} vs {_amount(bound, unit)}"


def _amount(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    return f"{value / 1e3:+,.0f} k" if unit == "instr" else f"{value:+,.0f}"
