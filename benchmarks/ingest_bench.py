"""Ingestion benchmark: `tgsparql.data.ingest` throughput with the LLM's time taken out.

Writes N synthetic plain-text documents (pages split by form feeds, one fact per sentence) and
ingests them with `tgsparql.data.ingest.ingest_files`, the product path, through a scripted backend
whose `extract` returns precomputed JSONL for each chunk at once: every fact whose sentence lies
in the chunk, with that sentence as evidence. Each round ingests all documents into a fresh
in-memory store and a fresh on-disk store, alternating which goes first.

Reported: facts and provenance triples (quads of `urn:graph:source`) per second of ingestion,
and where the time goes. Stage times come from wrapping, for the measured run only, the
functions ingestion calls: `chunk_document` and `parse_facts` (by name in `tgsparql.data.ingest`),
`Templates.render` / `render_block`, the backend's `extract`, `update_label_index`, and the
store's `ask` / `select` / `update`. A stage's time excludes the stages it calls (the label index
renders and writes too, and those count as rendering and writes); what is left is "other".

Run: python -m benchmarks.ingest_bench --documents 100 --rounds 3
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import pyoxigraph as ox

import tgsparql.data.ingest
from benchmarks.harness import BenchParser, Size, head, load_average, write
from benchmarks.pipeline_bench import ENTITY_PREDICATES, _Words, median, p95
from tgsparql.asking.llm.base import ExtractionOutput, ExtractionRequest, SelectionOutput
from tgsparql.data.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, chunk_document
from tgsparql.rdf import vocab
from tgsparql.rdf.templates import Templates
from tgsparql.rdf.terms import Dialect
from tgsparql.stores.store import EmbeddedStore, Solution, WithTemplates, open_store

SIZES = {
    "documents": Size(100, 3, "documents ingested per run", least=2),
    "rounds": Size(3, 1, "runs per store kind"),
}
DEFAULT_SEED = 20240601
PAGES = 3
SENTENCES_PER_PAGE = 40
PEOPLE = 2000
"""Distinct subject and object names over all documents, so entities recur across documents."""

STAGES = [
    "chunking (chunk_document)",
    "extraction (scripted backend)",
    "parsing (parse_facts)",
    "rendering (Templates.render, render_block)",
    "store reads (ask, select)",
    "store writes (update)",
    "label index (update_label_index, own work)",
    "other (IRIs, spans, labels, bookkeeping)",
]
T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# Documents and the scripted backend
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    paths: list[Path]
    replies: dict[str, str]
    """Chunk text → the JSONL the backend answers with."""
    sentences: int


def write_corpus(directory: Path, documents: int, seed: int) -> Corpus:
    """`documents` text files of sentences stating one fact each, and the replies per chunk."""
    rng = random.Random(seed)
    words = _Words(rng)
    people = [f"{words.word()} {words.word()}" for _ in range(PEOPLE)]
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    replies: dict[str, str] = {}
    sentences = 0
    for number in range(documents):
        facts: list[tuple[str, dict[str, Any]]] = []
        pages = []
        for _ in range(PAGES):
            page = []
            for _ in range(SENTENCES_PER_PAGE):
                subject, predicate = rng.choice(people), rng.choice(ENTITY_PREDICATES)
                if rng.random() < 0.2:
                    year = rng.randrange(1700, 2020)
                    sentence = f"The {predicate} of {subject} was recorded in {year}."
                    fact = {"s": subject, "p": f"{predicate} year", "o": year}
                else:
                    target = rng.choice(people)
                    sentence = f"The {predicate} of {subject} is {target}."
                    fact = {"s": subject, "p": predicate, "o": target}
                fact["evidence"] = sentence
                facts.append((sentence, fact))
                page.append(sentence)
            pages.append(" ".join(page))
        text = f"Document {number}\n\n" + "\f".join(pages)
        path = directory / f"document-{number:05d}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
        sentences += len(facts)
        _, chunks = chunk_document(text, DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)
        for chunk in chunks:
            replies[chunk.text] = "\n".join(
                json.dumps(fact) for sentence, fact in facts if sentence in chunk.text
            )
    return Corpus(paths, replies, sentences)


class ScriptedBackend:
    """Answers each chunk with its precomputed facts, instantly: no LLM time is measured."""

    name = "scripted"

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies

    def select(self, request: Any) -> SelectionOutput:
        raise NotImplementedError("the ingestion benchmark only extracts")

    def answer(self, question: str, facts: Any, *, stream: bool) -> Any:
        raise NotImplementedError("the ingestion benchmark only extracts")

    def extract(self, request: ExtractionRequest) -> ExtractionOutput:
        return ExtractionOutput(self.replies[request.text], None)


# ---------------------------------------------------------------------------------------------
# Stage clock
# ---------------------------------------------------------------------------------------------


class StageClock:
    """Exclusive time per stage: a stage called from inside another is taken out of it."""

    def __init__(self) -> None:
        self.totals: dict[str, int] = {stage: 0 for stage in STAGES}
        self._stack: list[int] = []
        """Per open stage, the time of the stages it called so far."""

    def wrap(self, stage: str, function: Callable[..., T]) -> Callable[..., T]:
        def timed(*args: Any, **kwargs: Any) -> T:
            self._stack.append(0)
            start = time.perf_counter_ns()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter_ns() - start
                inner = self._stack.pop()
                self.totals[stage] += elapsed - inner
                if self._stack:
                    self._stack[-1] += elapsed

        return timed


class TimedStore(WithTemplates):
    """The store, with its reads and writes on the stage clock."""

    def __init__(self, store: EmbeddedStore, clock: StageClock) -> None:
        self.store = store
        self.dialect: Dialect = store.dialect
        self.round_trips = store.round_trips
        self.select: Callable[..., list[Solution]] = clock.wrap(STAGES[4], store.select)
        self.ask: Callable[..., bool] = clock.wrap(STAGES[4], store.ask)
        self.update: Callable[[str], None] = clock.wrap(STAGES[5], store.update)

    def construct(self, query: str) -> list[ox.Triple]:
        return self.store.construct(query)

    def bulk_load(self, source: BinaryIO, format: ox.RdfFormat, *,
                  graph: ox.NamedNode | None = None) -> None:
        self.store.bulk_load(source, format, graph=graph)

    def close(self) -> None:
        self.store.close()


@contextlib.contextmanager
def timed_stages(clock: StageClock, backend: ScriptedBackend) -> Iterator[None]:
    """Route what ingestion calls through the clock, and restore it afterwards."""
    patches: list[tuple[Any, str, Any]] = [
        (tgsparql.data.ingest, "chunk_document", STAGES[0]),
        (backend, "extract", STAGES[1]),
        (tgsparql.data.ingest, "parse_facts", STAGES[2]),
        (Templates, "render", STAGES[3]),
        (Templates, "render_block", STAGES[3]),
        (tgsparql.data.ingest, "update_label_index", STAGES[6]),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, stage in patches:
            setattr(owner, name, clock.wrap(stage, getattr(owner, name)))
        yield
    finally:
        for owner, name, original in saved:
            if owner is backend:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


# ---------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    kind: str
    wall_ns: int
    facts: int
    chunks: int
    provenance: int
    library: int
    kg: int
    stages: dict[str, int]
    per_document_ns: list[int] = field(default_factory=list)


def ingest_once(kind: str, corpus: Corpus, work: Path) -> Run:
    """Ingest the corpus into a fresh store of this kind; the stores' contents are counted."""
    store = open_store(work / "store") if kind == "on disk" else open_store()
    clock = StageClock()
    backend = ScriptedBackend(corpus.replies)
    timed = TimedStore(store, clock)
    starts: list[int] = []

    def progress(path: Path, chunks: int) -> None:
        starts.append(time.perf_counter_ns())

    try:
        with timed_stages(clock, backend):
            start = time.perf_counter_ns()
            report = tgsparql.data.ingest.ingest_files(
                timed, backend, corpus.paths, progress=progress  # type: ignore[arg-type]
            )
            wall = time.perf_counter_ns() - start
        if report.failed:
            raise SystemExit(f"ingestion failed: {next(iter(report.failed.values()))}")
        per_document = [b - a for a, b in zip(starts, starts[1:])]
        stages = dict(clock.totals)
        stages[STAGES[-1]] = wall - sum(stages.values())
        return Run(
            kind=kind,
            wall_ns=wall,
            facts=sum(document.facts for document in report.documents),
            chunks=sum(document.chunks for document in report.documents),
            provenance=_quads(store, vocab.GRAPH_SOURCE),
            library=_quads(store, vocab.GRAPH_LIBRARY),
            kg=_quads(store, ox.DefaultGraph()),
            stages=stages,
            per_document_ns=per_document,
        )
    finally:
        store.close()
        if kind == "on disk":
            shutil.rmtree(work / "store")


def _quads(store: EmbeddedStore, graph: ox.NamedNode | ox.DefaultGraph) -> int:
    """The quads of one graph, counted without keeping a handle on the database: one left in
    a local would keep it open, its background threads writing into the folder being removed."""
    return sum(1 for _ in store.oxigraph.quads_for_pattern(None, None, None, graph))


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _per_second(count: int, ns: int) -> float:
    return count / (ns / 1e9) if ns else 0.0


def report(documents: int, corpus: Corpus, runs: list[Run], rounds: int, wall_s: float,
           load: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    kinds = ["in memory", "on disk"]
    by_kind = {kind: [run for run in runs if run.kind == kind] for kind in kinds}
    first = by_kind["in memory"][0]

    def throughput(name: str, count: Callable[[Run], int]) -> str:
        cells = [median([_per_second(count(run), run.wall_ns) for run in by_kind[kind]])
                 for kind in kinds]
        ratio = cells[1] / cells[0] if cells[0] else 0.0
        return f"| {name} | {cells[0]:,.0f} | {cells[1]:,.0f} | {ratio:.2f} |"

    def per_document(kind: str) -> list[int]:
        return [ns for run in by_kind[kind] for ns in run.per_document_ns]

    stage_rows = []
    for stage in STAGES:
        cells = []
        for kind in kinds:
            ms = median([run.stages[stage] / 1e6 for run in by_kind[kind]])
            share = median([run.stages[stage] / run.wall_ns * 100 for run in by_kind[kind]])
            cells.append(f"{ms:,.0f} | {share:.1f} %")
        stage_rows.append(f"| {stage} | {' | '.join(cells)} |")
    walls = [median([run.wall_ns / 1e6 for run in by_kind[kind]]) for kind in kinds]
    lines = [
        *head("Ingestion benchmark", "python -m benchmarks.ingest_bench"),
        f"- corpus: {documents:,} plain-text documents of {PAGES} pages, {corpus.sentences:,} "
        f"sentences (one fact each), {first.chunks:,} chunks (size {DEFAULT_CHUNK_SIZE}, "
        f"overlap {DEFAULT_CHUNK_OVERLAP}); scripted backend, no LLM time",
        f"- written per run: {first.facts:,} distinct facts, {first.kg:,} default-graph "
        f"triples (facts and labels), {first.provenance:,} provenance quads "
        f"(`urn:graph:source`), {first.library:,} librarian quads",
        f"- rounds: {rounds}, each ingesting everything into a fresh in-memory and a fresh "
        f"on-disk store, alternating which goes first; medians over rounds",
        f"- run: {wall_s:.1f} s wall; load average {load[0][0]:.2f} before, "
        f"{load[1][0]:.2f} after",
        "",
        "| throughput | in memory | on disk | on disk / in memory |",
        "|---|---:|---:|---:|",
        throughput("facts / s", lambda run: run.facts),
        throughput("provenance triples / s", lambda run: run.provenance),
        throughput("chunks / s", lambda run: run.chunks),
        "",
        "| per document | in memory | on disk |",
        "|---|---:|---:|",
        f"| median (ms) | {median(per_document('in memory')) / 1e6:.1f} "
        f"| {median(per_document('on disk')) / 1e6:.1f} |",
        f"| p95 (ms) | {p95(per_document('in memory')) / 1e6:.1f} "
        f"| {p95(per_document('on disk')) / 1e6:.1f} |",
        "",
        "| stage | in memory (ms) | share | on disk (ms) | share |",
        "|---|---:|---:|---:|---:|",
        *stage_rows,
        f"| total | {walls[0]:,.0f} | 100 % | {walls[1]:,.0f} | 100 % |",
        "",
        "Per document: the time from one document's first chunk to the next's (reading, "
        "chunking, extraction, parsing, rendering and writing it), over every round. Stage "
        "times are exclusive: rendering and writes made by the label index count as rendering "
        "and writes.",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def run(documents: int, rounds: int, work: Path, out: Path, *, seed: int = DEFAULT_SEED,
        log: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)
        ) -> str:
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ingest-", dir=work) as scratch:
        root = Path(scratch)
        log(f"writing {documents:,} documents ...")
        corpus = write_corpus(root / "documents", documents, seed)
        runs: list[Run] = []
        load_before = load_average()
        start = time.perf_counter_ns()
        for round_number in range(rounds):
            order = ["in memory", "on disk"]
            if round_number % 2:
                order.reverse()
            for kind in order:
                log(f"round {round_number + 1}: {kind} ...")
                runs.append(ingest_once(kind, corpus, root))
        wall_s = (time.perf_counter_ns() - start) / 1e9
        table = report(documents, corpus, runs, rounds, wall_s, (load_before, load_average()))
    return write(out, table, log)


def main(argv: Sequence[str] | None = None) -> int:
    args = BenchParser("benchmarks.ingest_bench", __doc__.split("\n\n")[0], SIZES,
                       out="ingest.md", seed=DEFAULT_SEED,
                       work="scratch space for documents and the on-disk store").parse(argv)
    print(run(args.documents, args.rounds, args.work, args.out, seed=args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
