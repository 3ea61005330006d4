"""Load benchmark: peak memory and time of `tgsparql load` on a large N-Triples file.

Writes the synthetic KG of the pipeline benchmark (same generator) as N-Triples of about
`--megabytes` MB, then loads it into a fresh on-disk store in a child process per run, two ways
side by side:

- **tgsparql**: `tgsparql.data.loader.load_files`, the product path: the whole file parsed once as a
  syntax check (nothing stored), then streamed into the store in batches
  (`EmbeddedStore.bulk_load`), then the grounding label index brought up to date;
- **before**: how `load` did it before: the same check, then pyoxigraph's `Store.bulk_load` of
  the whole file in one call, then the label index built from every pending label read into
  memory at once and written 5,000 labels an update with no flush between them.

Each child reports its peak resident set size (VmHWM) after each step; the parent runs the
ways alternately, `--rounds` times, and reports medians. Target (issue 16): peak ≤ 400 MB for a
200 MB file, with the whole-file check kept.

Run: python -m benchmarks.load_bench --megabytes 200 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyoxigraph as ox

from benchmarks.harness import BenchParser, Load, Size, head, load_average, write
from benchmarks.pipeline_bench import generate, median
from tgsparql.asking.grounding import (
    INDEX_VERSION, IndexEntry, label_keys, write_index_entries,
)
from tgsparql.data.loader import check_file, load_files
from tgsparql.stores.store import BULK_BATCH, EmbeddedStore

SIZES = {
    "megabytes": Size(200.0, 0.5, "size of the generated N-Triples file", least=0.01),
    "rounds": Size(1, 1, "loads of each way"),
}
DEFAULT_SEED = 20240601
BYTES_PER_FACT = 112
"""About what a fact of the generated KG (with its share of labels and types) takes in N-Triples."""
TARGET_PEAK_MB = 400.0
TARGET_FILE_MB = 200.0
WAYS = {
    "tgsparql": "`load_files`: the check, then the file streamed in batches of {batch:,} quads, "
                "then the label index from rows read into a temporary file",
    "before": "the same check, then pyoxigraph's `Store.bulk_load` of the whole file, then the "
              "label index from every pending label held at once",
}
STEPS = ("check", "store", "label index")
INDEX_BATCH_BEFORE = 5000
"""Labels a write of the index, before."""


def peak_mb() -> float:
    """This process's peak resident set size so far. VmHWM, not ru_maxrss: the kernel carries
    ru_maxrss over exec from the forked parent, whose size a child must not inherit."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class _Steps:
    """Wall time and peak RSS at the end of each step of one load."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.marks: dict[str, tuple[float, float]] = {}

    def mark(self, step: str) -> None:
        self.marks[step] = (time.perf_counter() - self.started, peak_mb())


def child(way: str, path: Path, store_dir: Path) -> dict[str, object]:
    """One load in this (fresh) process; what it took, step by step."""
    steps = _Steps()
    store = EmbeddedStore(store_dir)
    size = path.stat().st_size
    if way == "tgsparql":
        read = 0

        def progress(count: int) -> None:
            nonlocal read
            read += count
            if read >= size and "check" not in steps.marks:
                steps.mark("check")
            if read >= 2 * size and "store" not in steps.marks:
                steps.mark("store")

        report = load_files(store, [path], progress=lambda _: progress)
        if report.failed:
            raise SystemExit(f"load failed: {report.failed}")
        quads, labels = report.loaded[path], report.labels_indexed
    else:
        quads = check_file(path)
        steps.mark("check")
        store.oxigraph.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)
        steps.mark("store")
        labels = label_index_before(store)
    steps.mark("label index")
    store.close()
    return {"quads": quads, "labels": labels, "steps": steps.marks}


def label_index_before(store: EmbeddedStore) -> int:
    """The label index as `load` built it before: every pending label read into memory first,
    then written INDEX_BATCH_BEFORE at a time."""
    store.run("label_index_clear", version=INDEX_VERSION)
    rows = store.run("label_index_pending").rows
    entries = [
        IndexEntry(row["entity"], row["label"], keys)  # type: ignore[arg-type]
        for row in rows if (keys := label_keys(row["label"].value))
    ]
    for start in range(0, len(entries), INDEX_BATCH_BEFORE):
        batch = entries[start : start + INDEX_BATCH_BEFORE]
        write_index_entries(store, batch)
    return len(entries)


def run_child(way: str, path: Path, work: Path) -> dict[str, object]:
    store_dir = Path(tempfile.mkdtemp(prefix=f"load-{way}-", dir=work))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.load_bench", "--child", way,
             "--file", str(path), "--store", str(store_dir)],
            capture_output=True, text=True, check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the {way} load failed: {done.stderr.strip()}")
        return json.loads(done.stdout)
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)


def kg_file(megabytes: float, work: Path, seed: int, log: Callable[[str], None]) -> Path:
    """The benchmark's N-Triples file, generated once and cached."""
    facts = max(200, int(megabytes * 1_000_000 / BYTES_PER_FACT))
    path = work / f"load-{facts}-seed{seed}.nt"
    if not path.exists():
        work.mkdir(parents=True, exist_ok=True)
        log(f"writing {facts:,} facts as N-Triples to {path}")
        partial = path.with_suffix(".partial")
        generate(partial, facts, seed)
        partial.rename(path)
    return path


def report(path: Path, runs: dict[str, list[dict[str, object]]], rounds: int,
           wall_s: float, load_before: Load, load_after: Load) -> str:
    file_mb = path.stat().st_size / 1_000_000
    first = runs["tgsparql"][0]

    def med(way: str, step: str, index: int) -> float:
        return median([run["steps"][step][index] for run in runs[way]])  # type: ignore[index]

    peak = {way: med(way, "label index", 1) for way in WAYS}
    if file_mb >= TARGET_FILE_MB:
        verdict = "pass" if peak["tgsparql"] <= TARGET_PEAK_MB else "**FAIL**"
    else:
        verdict = f"not judged: the file is under {TARGET_FILE_MB:.0f} MB"
    lines = [
        *head("Load benchmark", "python -m benchmarks.load_bench"),
        f"- file: {file_mb:,.1f} MB of N-Triples, {first['quads']:,} triples, "
        f"{first['labels']:,} labels indexed",
        f"- rounds: {rounds}, the two ways alternating, each load in a fresh child process "
        "into a fresh on-disk store; medians over rounds",
        f"- run: {wall_s:.1f} s wall; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after",
        "",
        "Ways: " + "; ".join(f"**{way}**: {text.format(batch=BULK_BATCH)}"
                             for way, text in WAYS.items()) + ".",
        "",
        "Peak resident set size (MB) of the loading process at the end of each step, and the "
        "time (s) from its start to there:",
        "",
        "| step | " + " | ".join(f"{way} {unit}" for way in WAYS for unit in ("peak MB", "s"))
        + " |",
        "|---|" + "---:|" * (2 * len(WAYS)),
    ]
    for step in STEPS:
        cells = [f"{med(way, step, index):,.{1 if index == 0 else 0}f}"
                 for way in WAYS for index in (1, 0)]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| measure | value |",
        "|---|---:|",
        f"| peak / file size, tgsparql | {peak['tgsparql'] / file_mb:.2f} |",
        f"| peak / file size, before | {peak['before'] / file_mb:.2f} |",
        f"| peak, tgsparql / before | {peak['tgsparql'] / peak['before']:.2f} |",
        f"| time, tgsparql / before | "
        f"{med('tgsparql', 'label index', 0) / med('before', 'label index', 0):.2f} |",
        f"| target: a {TARGET_FILE_MB:.0f} MB file loads in ≤ {TARGET_PEAK_MB:.0f} MB peak "
        f"(tgsparql) | {verdict} |",
        "",
    ]
    return "\n".join(lines)


def run(megabytes: float, rounds: int, work: Path, out: Path, seed: int) -> str:
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    path = kg_file(megabytes, work, seed, log)
    load_before, started = load_average(), time.perf_counter()
    runs: dict[str, list[dict[str, object]]] = {way: [] for way in WAYS}
    for index in range(rounds):
        order = list(WAYS) if index % 2 == 0 else list(reversed(WAYS))
        for way in order:
            log(f"round {index + 1}: {way}")
            runs[way].append(run_child(way, path, work))
    return write(out, report(path, runs, rounds, time.perf_counter() - started, load_before,
                             load_average()), log)


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.load_bench", __doc__.splitlines()[0], SIZES,
                         out="load.md", seed=DEFAULT_SEED,
                         work="the generated file and the scratch stores")
    parser.add_argument("--child", choices=sorted(WAYS), help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    args = parser.parse(argv)
    if args.child:
        print(json.dumps(child(args.child, args.file, args.store)))
        return 0
    print(run(args.megabytes, args.rounds, args.work, args.out, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
