"""The facts rows of the growth table: each step of a question and of keeping the store, at
sizes of the pipeline benchmark's KG (1 M and 10 M facts at full size).

Each step runs in a child process of its own (`python -m benchmarks.growth_facts --child STEP`),
which reports its wall time, its CPU time and its peak resident set size (VmHWM, which exec
resets: no step inherits another's peak, nor the parent's):

- **load**: `tgsparql.data.loader.load_file` of the KG's N-Triples into a fresh on-disk store: the
  whole-file check, then the file streamed in batches (what `tgsparql load` does before its
  label index);
- **label index**: `tgsparql index` on that store, which indexes every label;
- **index**: `tgsparql index` again, on the store up to date: what finding no label to add
  costs;
- **reading every label**: a process that opens the store read-only and reads every
  `rdfs:label` as text, as the label index's read does: the store's own memory for that read,
  which grows with the KG (its caches), and so the floor under the label index's peak;
- **grounding**, **retrieval**, **recording**: per question of the pipeline benchmark's pool
  (`ground`; `retrieve_subgraph` after grounding; the three writes of one session after the
  offline backend answered), the step alone timed;
- **trace** (`tgsparql.record.trace.trace`) and **validate --session**
  (`tgsparql.record.conformance.validate_session`) of each session the recording step wrote;
- **migrate**: `tgsparql migrate` on the store with those sessions.

The store is built once per size and seed, in the pipeline benchmark's cache folder (so
`pipeline_bench` reuses it), with the load's and the index's measurements kept beside it; a
rerun reuses them and says so.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.growth_rows import GrowthRow
from benchmarks.harness import load_average, utc_now
from benchmarks.load_bench import peak_mb
from benchmarks.pipeline_bench import (
    WARMUP_QUESTIONS, answered_offline, clear_records, generate, kg_directory, percentile,
    read_into_page_cache, session_writes,
)

READING_LABELS = "reading every label"
STEPS = ("grounding", "retrieval", "recording", "trace", "validate --session", "index",
         READING_LABELS, "migrate")
"""The steps measured on every run, in this order (recording writes the sessions the later
steps read)."""
BUILD_STEPS = ("load", "label index")
"""The steps that build the store, measured once per store."""
INDEX_WRITE = 3
"""Bumped when the way the label index is written changes (2: the pending names read into a
temporary file first, then written by the bulk path; 3: the store reopened between the two, so
what the read cached goes): a cached store whose label index was
measured with an older way is built again, so its build steps are today's. (Removing the index
from a copy to measure it alone costs more than the build: in one transaction 990 MB at 1 M
facts, in batches 40 minutes at 10 M.)"""
EVERY_LABEL = ("SELECT ?entity ?label WHERE "
               "{ ?entity <http://www.w3.org/2000/01/rdf-schema#label> ?label }")
"""What the label index's read decodes, every label with its entity, without the index's own
lookups."""
MEASUREMENTS = "growth-build.json"
STEP_LIMIT_S = 300
"""A step measured on every run that takes longer is stopped, and its row says so: the run
ends, and the other steps are measured."""
VALIDATED = 3
"""Sessions validate --session is timed on (the first of those recording wrote): it took 12 s
a session on the KG of 1 M facts."""


@dataclass(frozen=True)
class Measured:
    """What a child reports of one step."""

    wall_s: float
    cpu_s: float
    peak_mb: float
    samples_ns: list[int]
    load: float
    sessions: list[str]
    quads: int = 0
    stopped: bool = False
    """Stopped unfinished after STEP_LIMIT_S."""


# ---------------------------------------------------------------------------------------------
# The children: one step each
# ---------------------------------------------------------------------------------------------


def _questions(folder: Path, count: int) -> tuple[list[str], list[str]]:
    """The measured questions and the warm-up ones, as the pipeline benchmark takes them."""
    pool = [q["text"] for q in json.loads((folder / "build.json").read_text("utf-8"))["questions"]]
    if len(pool) < count + WARMUP_QUESTIONS:
        raise SystemExit(f"the KG yields {len(pool)} questions; ask for at most "
                         f"{len(pool) - WARMUP_QUESTIONS}")
    return pool[:count], pool[-WARMUP_QUESTIONS:]


def child(step: str, folder: Path, count: int) -> dict[str, Any]:
    """Run one step in this process; what it took."""
    from tgsparql.asking.grounding import ground
    from tgsparql.asking.librarian import StoreLibrarian
    from tgsparql.asking.llm.offline import OfflineBackend
    from tgsparql.asking.provenance import Recorder
    from tgsparql.asking.retrieval import RetrievalLimits, retrieve_subgraph
    from tgsparql.cli import main as cli
    from tgsparql.data.loader import load_file
    from tgsparql.rdf import vocab
    from tgsparql.rdf.iris import SessionIds
    from tgsparql.record.conformance import bundled_validator, validate_session
    from tgsparql.record.trace import trace
    from tgsparql.stores.store import open_store

    started_wall, started_cpu = time.perf_counter(), time.process_time()
    samples: list[int] = []
    sessions: list[str] = []
    quads = 0
    store_path = folder / "store"
    if step in ("index", "label index", "migrate"):
        command = ["migrate"] if step == "migrate" else ["index"]
        cli.main([*command, "--store", str(store_path)], standalone_mode=False)
    elif step == READING_LABELS:
        import pyoxigraph

        opened = pyoxigraph.Store.read_only(str(store_path))
        quads = sum(1 for _ in opened.query(EVERY_LABEL))
        del opened
    elif step == "load":
        store = open_store(store_path)
        try:
            quads = load_file(store, folder / "kg.nt")
        finally:
            store.close()
    else:
        store = open_store(store_path)
        try:
            limits = RetrievalLimits()
            backend = OfflineBackend()
            recorder = Recorder(store, vocab.DEFAULT_COLLECTION)
            librarian = StoreLibrarian(store)
            measured, warmup = _questions(folder, count)
            recorded = json.loads((folder / "sessions.json").read_text("utf-8")) if step in (
                "trace", "validate --session") else []

            def timed(action: Callable[[], Any], into: list[int] | None) -> Any:
                start = time.perf_counter_ns()
                result = action()
                if into is not None:
                    into.append(time.perf_counter_ns() - start)
                return result

            def question(text: str, into: list[int] | None) -> None:
                grounding = timed(lambda: ground(store, text, limits.entity_limit),
                                  into if step == "grounding" else None)
                if step == "grounding":
                    return
                subgraph = timed(lambda: retrieve_subgraph(
                    store, grounding.seeds, limits, grounding.schema_predicates,
                    grounding.stems), into if step == "retrieval" else None)
                if step == "retrieval":
                    return
                answered = answered_offline(store, backend, text, grounding, subgraph)
                ids = SessionIds.new()
                writes = session_writes(recorder, librarian, ids, answered)
                total = 0
                for write in writes:
                    start = time.perf_counter_ns()
                    write()
                    total += time.perf_counter_ns() - start
                if into is not None:
                    into.append(total)
                    sessions.append(ids.session.value)

            if step == "trace":
                trace(store, vocab.DEFAULT_COLLECTION, recorded[-1])
                for session in recorded:
                    timed(lambda: trace(store, vocab.DEFAULT_COLLECTION, session), samples)
            elif step == "validate --session":
                bundled_validator(store.dialect)  # built once a process, untimed
                for session in recorded[:VALIDATED]:
                    timed(lambda: validate_session(store, session), samples)
            else:
                if step == "recording":
                    clear_records(store)
                for text in warmup:
                    question(text, None)
                for text in measured:
                    question(text, samples)
        finally:
            store.close()
    return {
        "wall_s": time.perf_counter() - started_wall,
        "cpu_s": time.process_time() - started_cpu,
        "peak_mb": peak_mb(),
        "samples_ns": samples,
        "load": load_average()[0],
        "sessions": sessions,
        "quads": quads,
    }


def run_child(step: str, folder: Path, count: int, limit_s: float | None = None) -> Measured:
    """One step in a fresh process (niced as the parent is), stopped after `limit_s`."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.growth_facts", "--child", step, "--folder",
             str(folder), "--count", str(count)],
            capture_output=True, text=True, check=False, timeout=limit_s,
        )
    except subprocess.TimeoutExpired:
        return Measured(limit_s or 0.0, math.nan, math.nan, [], load_average()[0], [],
                        stopped=True)
    if done.returncode != 0:
        raise RuntimeError(f"{step} in {folder} failed: {done.stderr.strip()[-2000:]}")
    return Measured(**json.loads(done.stdout.strip().splitlines()[-1]))


# ---------------------------------------------------------------------------------------------
# The store, built once
# ---------------------------------------------------------------------------------------------


def build(facts: int, work: Path, seed: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The store of this KG with the measurements of its load and label index, built (each
    step in its child) unless the cache holds both."""
    folder = kg_directory(work, facts, seed)
    kept = folder / MEASUREMENTS
    if kept.is_file() and (folder / "build.json").is_file():
        measurements = json.loads(kept.read_text("utf-8"))
        if measurements.get("index_write", 1) >= INDEX_WRITE:
            log(f"using the cached store in {folder}")
            return {**measurements, "cached": True}
        log(f"the cached store in {folder} was indexed the older way: building it again")
    if folder.exists():
        shutil.rmtree(folder)  # built without these measurements, or interrupted
    folder.mkdir(parents=True)
    log(f"generating {facts:,} facts ...")
    started = time.perf_counter()
    entities, predicates, labels, questions = generate(folder / "kg.nt", facts, seed)
    generate_s = time.perf_counter() - started
    steps: dict[str, Measured] = {}
    for step in BUILD_STEPS:
        log(f"  {step} ...")
        steps[step] = run_child(step, folder, 0)
    file_mb = (folder / "kg.nt").stat().st_size / 1e6
    (folder / "kg.nt").unlink()
    measurements = {
        "built_at": utc_now(),
        "index_write": INDEX_WRITE,
        "file_mb": file_mb,
        "steps": {step: measured.__dict__ for step, measured in steps.items()},
    }
    pipeline_meta = {
        "facts": facts, "entities": entities, "predicates": predicates, "labels": labels,
        "quads_loaded": steps["load"].quads, "labels_indexed": labels, "generate_s": generate_s,
        "load_s": steps["load"].wall_s, "index_s": steps["label index"].wall_s,
        "built_at": measurements["built_at"], "questions": [q.__dict__ for q in questions],
    }
    (folder / "build.json").write_text(json.dumps(pipeline_meta, indent=1), encoding="utf-8")
    kept.write_text(json.dumps(measurements, indent=1), encoding="utf-8")
    return {**measurements, "cached": False}


# ---------------------------------------------------------------------------------------------
# The rows
# ---------------------------------------------------------------------------------------------


def _row(facts: int, step: str, measured: Measured, note: str) -> GrowthRow:
    if measured.stopped:
        return GrowthRow("facts", facts, step, note=f"stopped unfinished after "
                         f"{measured.wall_s:.0f} s; load {measured.load:.1f}")
    times = [ns / 1e6 for ns in measured.samples_ns]
    cpu = (f"{measured.cpu_s:.1f} s CPU of {measured.wall_s:.1f} s wall in its process, "
           f"load {measured.load:.1f}")
    note = f"{note}; {cpu}" if note else cpu
    if not times:
        return GrowthRow("facts", facts, step, seconds=measured.wall_s,
                         peak_mb=measured.peak_mb, note=note)
    return GrowthRow("facts", facts, step, percentile(times, 0.5), percentile(times, 0.95),
                     percentile(times, 0.99), peak_mb=measured.peak_mb,
                     note=f"{len(times)} timed; {note}")


def measure(sizes: list[int], work: Path, seed: int, questions: int = 200,
            log: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)
            ) -> list[GrowthRow]:
    """Every step at every size: the stores built (or reused) first, then step by step each
    size in turn, so the sizes of a step are measured minutes apart."""
    builds = {facts: build(facts, work, seed, log) for facts in sizes}
    rows: list[GrowthRow] = []
    for facts in sizes:
        info = builds[facts]
        reused = f"built {info['built_at']}" + (", reused from the cache" if info["cached"]
                                                 else "")
        note = f"{info['file_mb']:,.0f} MB of N-Triples, {reused}"
        for step in BUILD_STEPS:
            rows.append(_row(facts, step, Measured(**info["steps"][step]), note))
    for step in STEPS:
        for facts in sizes:
            folder = kg_directory(work, facts, seed)
            log(f"{step} at {facts:,} facts ...")
            read_into_page_cache(folder / "store")
            measured = run_child(step, folder, questions, STEP_LIMIT_S)
            if step == "recording":
                (folder / "sessions.json").write_text(json.dumps(measured.sessions), "utf-8")
            rows.append(_row(facts, step, measured, ""))
            log(f"  {rows[-1]}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """A child's entry: one step, its measurement as one line of JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth_facts",
                                     description="one step of the growth table's facts rows")
    parser.add_argument("--child", choices=BUILD_STEPS + STEPS, required=True)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--count", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(child(args.child, args.folder, args.count)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
