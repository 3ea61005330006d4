"""Growth benchmark: what each step costs as the data grows, in facts and in sessions.

One table (`results/growth.md`): per step and size its time (p50, p95 and p99 of the per-item
steps, seconds of the one-off ones) and its peak memory, each with its ratio to the same step at
the next smaller size. The facts rows come from `benchmarks.growth_facts` (every step in a child
process of its own, so no step shares another's peak), the sessions rows from
`benchmarks.growth_sessions`; an empty list of sizes leaves an axis out.

Run: python -m benchmarks.growth_bench --facts 1000000,10000000 --sessions 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
from collections.abc import Sequence

from benchmarks import growth_facts, growth_sessions
from benchmarks.growth_rows import GrowthRow
from benchmarks.growth_sessions import OXIGRAPH, SAVED, SERVE
from benchmarks.harness import BenchParser, Size, head, load_average, load_line, write

SIZES = {
    "facts": Size("1000000,10000000", "2000,4000", "KG facts, comma-separated", least=None),
    "questions": Size(200, 5, "questions timed per size"),
    "sessions": Size("10000,100000,1000000", "200,400", "recorded sessions, comma-separated",
                     least=None),
    "runs": Size(7, 1, "runs of each saved query per way and sessions size (after a warm-up)"),
    "traced": Size(20, 2, "sessions traced per sessions size"),
    "validated": Size(3, 1, "sessions validated (validate --session) per sessions size"),
}
DEFAULT_SEED = 20240601
TARGET_GROUNDING_GROWTH = 1.5
"""Grounding's p95 at the largest facts size over its p95 at the next smaller one, at most."""
TARGET_DASHBOARD_MS = 300.0
"""Every saved BI query's p50 with one client at the largest sessions size, at most."""
TARGET_PEAK_MB = 2048.0
"""No step's peak above this, at any size."""
TARGET_INDEX_OWN_GROWTH = 1.25
"""The label index's own share of its peak (above reading every label, the store's part) at the
largest facts size over the next smaller one, at most: it must not grow with the KG."""
BOUNDED = ("load", "label index", "index", "migrate")
"""The steps that keep the store, whose peak must not grow with it."""
COLUMNS = ("p50_ms", "p95_ms", "p99_ms", "seconds", "peak_mb")


def sizes(text: str) -> list[int]:
    """A comma-separated list of sizes, smallest first; none for an empty text."""
    if not text.strip():
        return []
    try:
        found = sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError:
        raise SystemExit(f"not a list of sizes: {text!r}") from None
    if not found or found[0] < 1:
        raise SystemExit(f"sizes must be whole numbers of at least 1: {text!r}")
    return found


def _cell(value: float | None, digits: int = 2) -> str:
    return "" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def _ratio(value: float | None, smaller: float | None) -> str:
    if value is None or smaller is None or not smaller or math.isnan(value + smaller):
        return ""
    return f"×{value / smaller:.2f}"


def smaller_of(rows: Sequence[GrowthRow]) -> dict[GrowthRow, GrowthRow]:
    """Each row's row of the same axis and step at the next smaller size."""
    found = {}
    for row in rows:
        below = [r for r in rows if (r.axis, r.step) == (row.axis, row.step) and r.size < row.size]
        if below:
            found[row] = max(below, key=lambda r: r.size)
    return found


def verdicts(rows: Sequence[GrowthRow]) -> list[str]:
    """The targets' lines: grounding's growth, and every step's peak."""
    lines = []
    smaller = smaller_of(rows)
    grounding = sorted((r for r in rows if r.axis == "facts" and r.step == "grounding"),
                       key=lambda r: r.size)
    if len(grounding) >= 2 and grounding[-1] in smaller:
        large, small = grounding[-1], smaller[grounding[-1]]
        growth = (large.p95_ms or math.nan) / (small.p95_ms or math.nan)
        ok = growth <= TARGET_GROUNDING_GROWTH
        lines.append(
            f"- grounding p95 at {large.size:,} facts / at {small.size:,}: {growth:.2f} "
            f"(target ≤ {TARGET_GROUNDING_GROWTH:g}; p99 {_ratio(large.p99_ms, small.p99_ms)}): "
            + ("pass" if ok else "**FAIL**"))
    lines += _index_verdict(rows)
    lines += _dashboard_verdicts(rows)
    peaks = [r for r in rows if r.peak_mb is not None]
    if peaks:
        top = max(peaks, key=lambda r: r.peak_mb or 0.0)
        kept = max((r for r in peaks if r.step in BOUNDED), key=lambda r: r.peak_mb or 0.0,
                   default=top)
        ok = (top.peak_mb or 0.0) <= TARGET_PEAK_MB
        lines.append(
            f"- highest peak: {top.peak_mb:,.0f} MB ({top.step}, {top.size:,} {top.axis}); of "
            f"{', '.join(BOUNDED)}: {kept.peak_mb:,.0f} MB ({kept.step}, {kept.size:,} "
            f"{kept.axis}) (target: none above {TARGET_PEAK_MB:,.0f} MB): "
            + ("pass" if ok else "**FAIL**"))
    return lines


def _index_verdict(rows: Sequence[GrowthRow]) -> list[str]:
    """The label index's peak above reading every label, at the two largest facts sizes: none
    where the index's peak is the read's or less (the read's caches fill as the store's files
    lie, so the two peaks differ by some tens of MB either way)."""
    def peak(size: int, step: str) -> float:
        found = [r.peak_mb for r in rows if (r.axis, r.size, r.step) == ("facts", size, step)]
        return found[0] if found and found[0] is not None else math.nan

    sizes = sorted({r.size for r in rows if r.axis == "facts"})
    if len(sizes) < 2:
        return []
    shares = []
    for size in sizes[-2:]:
        index, read = peak(size, "label index"), peak(size, growth_facts.READING_LABELS)
        shares.append(max(index - read, 0.0))
    small, large = shares
    growth = large / small if small > 0 else (0.0 if large == 0 else math.inf)
    return [f"- label index's own share of its peak (above reading every label's) at "
            f"{sizes[-1]:,} facts / at {sizes[-2]:,}: {large:,.0f} / {small:,.0f} MB = "
            f"×{growth:.2f} (target ≤ {TARGET_INDEX_OWN_GROWTH:g}): "
            + ("pass" if growth <= TARGET_INDEX_OWN_GROWTH else "**FAIL**")]


def _dashboard_verdicts(rows: Sequence[GrowthRow]) -> list[str]:
    """Every saved BI query's p50 at the largest sessions size, in process and on each server,
    against the target; and tgsparql serve's against oxigraph serve-read-only's, same text."""
    queries = [r for r in rows if r.axis == "sessions" and r.step.startswith(SAVED)]
    if not queries:
        return []
    largest = max(r.size for r in queries)
    at_largest = [r for r in queries if r.size == largest]
    measured = {r.step: r for r in at_largest if r.p50_ms is not None}
    slow = [f"{step.removeprefix(SAVED)} {row.p50_ms:,.0f} ms" for step, row in measured.items()
            if row.p50_ms > TARGET_DASHBOARD_MS]
    slow += [f"{r.step.removeprefix(SAVED)} no answer" for r in at_largest if r.p50_ms is None]
    over = f"; over it: {', '.join(slow)}" if slow else ""
    lines = [f"- saved BI queries at {largest:,} sessions, p50 with one client: "
             f"{len(at_largest) - len(slow)} of {len(at_largest)} at most "
             f"{TARGET_DASHBOARD_MS:,.0f} ms (target: all{over}): "
             + ("**FAIL**" if slow else "pass")]
    ratios = [measured[step.replace(OXIGRAPH, SERVE)].p50_ms / oxigraph.p50_ms
              for step, oxigraph in measured.items() if step.endswith(", " + OXIGRAPH)
              and oxigraph.p50_ms and step.replace(OXIGRAPH, SERVE) in measured]
    if ratios:
        lines.append(f"- tgsparql serve / oxigraph serve-read-only, same text, p50 at {largest:,} "
                     f"sessions: ×{min(ratios):.2f} to ×{max(ratios):.2f}")
    return lines


def table(rows: Sequence[GrowthRow]) -> list[str]:
    """The rows by axis, step and size, each with its ratios to the next smaller size."""
    smaller = smaller_of(rows)
    lines = [
        "| axis | size | step | p50 ms | p95 ms | p99 ms | s | peak MB "
        "| × p50 | × p95 | × p99 | × s | × peak | note |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        below = smaller.get(row)
        cells = [_cell(getattr(row, column), 0 if column == "peak_mb" else 2)
                 for column in COLUMNS]
        ratios = [_ratio(getattr(row, column), getattr(below, column) if below else None)
                  for column in COLUMNS]
        lines.append(f"| {row.axis} | {row.size:,} | {row.step} | " + " | ".join(cells) + " | "
                     + " | ".join(ratios) + f" | {row.note} |")
    return lines


def report(rows: Sequence[GrowthRow], args: argparse.Namespace, wall_s: float, cpu_s: float,
           load_before: tuple[float, float, float]) -> str:
    facts = [f"- facts: the pipeline benchmark's KG at each size, on disk, its files read into "
             f"the page cache before each step; {args.questions} questions timed per step and "
             f"size after 5 warm-up ones; each step in a child process of its own, its peak the "
             f"child's VmHWM; the sizes of a step measured one after the other"]
    sessions = [f"- sessions: {growth_sessions.SESSIONS_PER_DAY:,} a day, the store of each size "
                f"cached; per size `tgsparql migrate` and `tgsparql rollup` through the day before "
                f"the last, so the saved queries read the last day from the record, and `tgsparql "
                f"drift` with its whole report (each a process: its peak); every saved BI query {args.runs} times after a warm-up, in process "
                f"and over HTTP with one client on `{SERVE}` and on `{OXIGRAPH}` (the same text, "
                f"each query on both back to back); `{SERVE}`'s peak with its workers after every "
                f"query; trace of {args.traced} sessions and `validate --session` of "
                f"{args.validated}, in process"]
    return "\n".join([
        *head("Growth benchmark", "python -m benchmarks.growth_bench"),
        load_line(load_before),
        f"- run: {wall_s:,.0f} s wall; the steps' child processes {cpu_s:,.0f} s CPU",
        *(facts if any(r.axis == "facts" for r in rows) else []),
        *(sessions if any(r.axis == "sessions" for r in rows) else []),
        *verdicts(rows),
        "",
        *table(rows),
        "",
        "Times are per question (grounding, retrieval, the writes of one session's recording), "
        "per recorded session (trace, validate --session) or per run of a saved query; s is a "
        "one-off step's wall time (load: the check and the store, and label index: `tgsparql "
        "index` on the loaded store, both measured when the store was built, by the code of that "
        "day, and built again when the way the index is written changed; index: `tgsparql "
        "index` on the store up to date; migrate: `tgsparql migrate`; rollup: `tgsparql "
        "rollup`; drift: `tgsparql drift`). A facts step that took longer "
        f"than {growth_facts.STEP_LIMIT_S} s was stopped and has no figures. Each × column is "
        "the ratio to the same step at the next smaller size. The note of a facts row gives the "
        "step's CPU time beside its process's wall time and the load average at its end (the "
        "machine is shared; the benchmark itself adds about 1).",
        "",
    ])


def _children_cpu() -> float:
    """CPU seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: argparse.Namespace) -> str:
    """Both axes measured, the facts first; the table written."""
    load_before, started, cpu_before = load_average(), time.perf_counter(), _children_cpu()
    rows = growth_facts.measure(sizes(args.facts), args.work, args.seed, args.questions)
    rows += growth_sessions.measure(sizes(args.sessions), args.work, args.seed, args.runs,
                                    args.traced, args.validated)
    cpu_s = _children_cpu() - cpu_before
    return write(args.out, report(rows, args, time.perf_counter() - started, cpu_s,
                                  load_before))


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.growth_bench", __doc__.split("\n\n")[0], SIZES,
                         out="growth.md", seed=DEFAULT_SEED, work="cache of built stores")
    args = parser.parse(argv)
    print(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
