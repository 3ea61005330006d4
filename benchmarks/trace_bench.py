"""Trace benchmark: the saved trace queries on a large KG with provenance and recorded sessions.

Builds (once, cached under the work directory) an on-disk store holding:

- the synthetic KG of `benchmarks.pipeline_bench` (N facts with their rdfs:labels);
- extraction provenance for every fact (docs/spec.md §8), rendered by the `ingest_document` template
  that ingestion writes with, and the document and chunk texts in the librarian: documents of
  10 pages of 10 chunks, 10 facts per chunk, each chunk's text one sentence per fact at exact
  offsets; every tenth chunk also states a fact stated elsewhere, so some facts have two sources;
- S recorded sessions, written by `tgsparql.asking.provenance.Recorder` (the pipeline's own recorder)
  with 10 selected edges of real KG facts each, and their answers in the librarian.

Then measures, with the package's own functions (`tgsparql.record.trace`), per measured session:
session → sources (`session_sources`, the saved query of a session's sources),
edge selection → sources (`edge_sources`), fact → sources (`fact_sources`), each on its first
touch, the kinds rotating their order from item to item; then, warm, the session's sources
again and `tgsparql.record.trace.trace` of the session and of an edge selection, with the store
requests each trace makes; and per measured document its trace (`document_sessions`).

Run: python -m benchmarks.trace_bench --facts 1000000 --sessions 100000 --measure 200
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import pyoxigraph as ox

from benchmarks.harness import BenchParser, Size, head, load_average, utc_now, write
from benchmarks.pipeline_bench import generate, median, p95
from tgsparql.asking.grounding import Grounding
from tgsparql.asking.labels import label_of
from tgsparql.asking.provenance import Recorder
from tgsparql.asking.selection import SelectedEdge
from tgsparql.data.ingest import AGENT_LABEL, ChunkRow, PageRow, SubgraphRow
from tgsparql.data.loader import load_file
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import INGEST_AGENT, ExtractionIds, SessionIds, sha256_hex
from tgsparql.rdf.templates import Templates
from tgsparql.rdf.terms import DEFAULT_DIALECT, Dialect
from tgsparql.record.trace import DocumentTrace, edge_sources, fact_sources, session_sources, trace
from tgsparql.stores.store import DataGraph, EmbeddedStore, Solution, WithTemplates, open_store

SIZES = {
    "facts": Size(1_000_000, 2000, "KG facts"),
    "sessions": Size(100_000, 200, "recorded sessions"),
    "retrieved-edges": Size(20, 20, "tg:retrievedEdge per session, the selected ones included"),
    "measure": Size(200, 20, "sessions traced"),
    "documents": Size(100, 2, "documents traced"),
}
DEFAULT_SEED = 20240601
WARMUP = 5
REPEATS = 3
"""Runs of each warm measurement, of which the median is kept."""
BUILD_FORMAT = 1
"""Bumped whenever the generator changes, so an old cached store is not reused."""

FACTS_PER_CHUNK = 10
CHUNKS_PER_PAGE = 10
PAGES_PER_DOCUMENT = 10
RESTATED_EVERY = 10
"""Every tenth chunk also states one fact of another chunk: a fact extracted twice."""
SELECTED_PER_SESSION = 10
POOL = 1000
"""Sessions and documents kept in build.json as candidates for measuring."""
COLLECTION = vocab.DEFAULT_COLLECTION
STARTED = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
TARGET_SESSION_MS = 5.0


# ---------------------------------------------------------------------------------------------
# Generating provenance and sessions
# ---------------------------------------------------------------------------------------------


@dataclass
class SampledSession:
    uuid: str
    edges: list[str]
    """The selected edges in order, as N-Triples terms."""


@dataclass
class TraceBuild:
    facts: int
    documents: int
    pages: int
    chunks: int
    restated: int
    sessions: int
    retrieved_per_session: int
    quads: int
    generate_s: float
    load_s: float
    built_at: str
    pool_sessions: list[SampledSession] = field(default_factory=list)
    pool_documents: list[str] = field(default_factory=list)
    cached: bool = False

    @property
    def build_s(self) -> float:
        return self.generate_s + self.load_s


class _Discard(WithTemplates):
    """A store that keeps nothing: the recorder's writes are taken from what it returns."""

    dialect: Dialect = DEFAULT_DIALECT

    def update(self, update: str) -> None:
        del update


def _read_kg(path: Path) -> tuple[list[ox.Triple], dict[ox.NamedNode, str]]:
    """The facts of the generated N-Triples (everything but the labels) and the labels."""
    facts: list[ox.Triple] = []
    labels: dict[ox.NamedNode, str] = {}
    with path.open("rb") as source:
        for quad in ox.parse(source, ox.RdfFormat.N_TRIPLES):
            triple = quad.triple
            if triple.predicate == vocab.RDFS_LABEL:
                labels[triple.subject] = triple.object.value  # type: ignore[index]
            else:
                facts.append(triple)
    return facts, labels


def _sentence(fact: ox.Triple, labels: dict[ox.NamedNode, str]) -> str:
    parts = (label_of(t, labels) for t in (fact.subject, fact.predicate, fact.object))
    return " ".join(parts) + "."


def _library_quads(iri: ox.NamedNode, text: str, title: str) -> list[ox.Quad]:
    """What `library_put.rq` writes for one text."""
    graph = vocab.GRAPH_LIBRARY
    return [
        ox.Quad(iri, vocab.TG_CONTENT, ox.Literal(text), graph),
        ox.Quad(iri, vocab.TG_MIME_TYPE, ox.Literal("text/plain"), graph),
        ox.Quad(iri, vocab.TG_CONTENT_SHA256, ox.Literal(sha256_hex(text)), graph),
        ox.Quad(iri, vocab.DC_TITLE, ox.Literal(title), graph),
    ]


def write_provenance(
    facts: Sequence[ox.Triple],
    labels: dict[ox.NamedNode, str],
    rng: random.Random,
    trig: BinaryIO,
    library: list[ox.Quad],
) -> tuple[int, int, int, int, list[str]]:
    """Every fact's provenance as TriG; returns (documents, pages, chunks, restated, IRIs)."""
    templates = Templates("rdf12")
    order = list(range(len(facts)))
    rng.shuffle(order)
    per_document = FACTS_PER_CHUNK * CHUNKS_PER_PAGE * PAGES_PER_DOCUMENT
    documents: list[str] = []
    pages = chunks = restated = 0
    for first in range(0, len(order), per_document):
        members = order[first : first + per_document]
        number = len(documents) + 1
        title = f"Synthetic document {number}"
        # Chunk texts first: the document's IRIs derive from its whole text.
        chunk_facts: list[list[ox.Triple]] = []
        for start in range(0, len(members), FACTS_PER_CHUNK):
            group = [facts[i] for i in members[start : start + FACTS_PER_CHUNK]]
            if (chunks + len(chunk_facts)) % RESTATED_EVERY == RESTATED_EVERY - 1:
                group.append(facts[rng.randrange(len(facts))])
            chunk_facts.append(group)
        texts = [" ".join(_sentence(f, labels) for f in group) for group in chunk_facts]
        page_texts = [
            " ".join(texts[i : i + CHUNKS_PER_PAGE])
            for i in range(0, len(texts), CHUNKS_PER_PAGE)
        ]
        text = "\f".join(page_texts)
        ids = ExtractionIds(sha256_hex(text))
        page_rows = [PageRow(ids.page(n), n) for n in range(1, len(page_texts) + 1)]
        chunk_rows: list[ChunkRow] = []
        subgraphs: list[SubgraphRow] = []
        offset = 0
        for i, (chunk_text, group) in enumerate(zip(texts, chunk_facts)):
            end = offset + len(chunk_text)
            assert text[offset:end] == chunk_text
            row = ChunkRow(ids.chunk(offset, end), page_rows[i // CHUNKS_PER_PAGE].iri,
                           i % CHUNKS_PER_PAGE, offset, len(chunk_text))
            chunk_rows.append(row)
            subgraphs.append(SubgraphRow(ids.subgraph(offset, end, None), row.iri, None, group))
            library.extend(_library_quads(row.iri, chunk_text, title))
            offset = end + 1  # the space between chunks, or the form feed between pages
        params: dict[str, Any] = dict(
            document=ids.document,
            activity=ids.activity,
            agent=INGEST_AGENT,
            agent_label=AGENT_LABEL,
            title=title,
            mime_type="text/plain",
            started=STARTED,
            model=None,
            in_tokens=None,
            out_tokens=None,
            pages=page_rows,
            chunks=chunk_rows,
            subgraphs=subgraphs,
            facts=[],
            labels=[],
            mentions=[],
            link_mode="names",
        )
        trig.write(templates.render_block("ingest_document", "prologue", **params).encode())
        trig.write(templates.render_block("ingest_document", "quads", **params).encode())
        library.extend(_library_quads(ids.document, text, title))
        documents.append(ids.document.value)
        pages += len(page_rows)
        chunks += len(chunk_rows)
        restated += sum(len(group) > FACTS_PER_CHUNK for group in chunk_facts)
    return len(documents), pages, chunks, restated, documents


def write_sessions(
    facts: Sequence[ox.Triple],
    labels: dict[ox.NamedNode, str],
    rng: random.Random,
    count: int,
    retrieved: int,
    trig: BinaryIO,
    library: list[ox.Quad],
) -> list[SampledSession]:
    """`count` sessions recorded by the pipeline's Recorder; returns a sample of them."""
    recorder = Recorder(_Discard(), COLLECTION)  # type: ignore[arg-type]
    pool = set(rng.sample(range(count), min(POOL, count)))
    sampled: list[SampledSession] = []
    for n in range(count):
        ids = SessionIds(str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        chosen = [facts[i] for i in rng.sample(range(len(facts)), SELECTED_PER_SESSION)]
        others = [facts[rng.randrange(len(facts))] for _ in range(retrieved - len(chosen))]
        subgraph = list(dict.fromkeys(chosen + others))
        first = chosen[0]
        subject, predicate = label_of(first.subject, labels), label_of(first.predicate, labels)
        question = f"What is the {predicate} of {subject}?"
        started = STARTED + dt.timedelta(seconds=n)
        seeds = [first.subject] if isinstance(first.subject, ox.NamedNode) else []
        grounding = Grounding([subject.casefold(), predicate], seeds)
        edges = [
            SelectedEdge(f"{i:08x}", fact, f"offline selector: this edge matches "
                         f"'{label_of(fact.predicate, labels)}'; score {rng.random():.2f}")
            for i, fact in enumerate(chosen)
        ]
        answer = "From the knowledge graph: " + "; ".join(
            _sentence(fact, labels)[:-1] for fact in chosen
        ) + "."
        writes = [
            recorder.session(ids, question, started),
            recorder.retrieval(ids, grounding, subgraph),
            # no documents named: the trace walks read the extraction provenance, not them
            recorder.selection(ids, edges, 0, None, {}),
            recorder.answer(ids, None, started + dt.timedelta(milliseconds=80), started=started,
                            selected=len(edges)),
        ]
        for record in writes:
            trig.write(record.trig.encode())
        library.extend(_library_quads(ids.answer_document, answer, f"GraphRAG answer {ids.uuid}"))
        if n in pool:
            sampled.append(SampledSession(ids.uuid, [str(f) for f in chosen]))
    rng.shuffle(sampled)
    return sampled


def build(
    n_facts: int,
    n_sessions: int,
    retrieved: int,
    work: Path,
    seed: int,
    log: Callable[[str], None],
) -> TraceBuild:
    """The cached store for these sizes, built first if it is not there yet."""
    directory = store_directory(work, n_facts, n_sessions, retrieved, seed)
    meta_path = directory / "build.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta["pool_sessions"] = [SampledSession(**s) for s in meta["pool_sessions"]]
        log(f"using the cached store in {directory}")
        return TraceBuild(**meta, cached=True)
    if retrieved < SELECTED_PER_SESSION:
        raise SystemExit(f"--retrieved-edges must be at least {SELECTED_PER_SESSION}")
    if directory.exists():
        shutil.rmtree(directory)  # an interrupted build
    directory.mkdir(parents=True)
    nt, trig_path, library_path = (directory / name for name in ("kg.nt", "records.trig",
                                                                 "library.nq"))
    rng = random.Random(seed)

    log(f"generating {n_facts:,} facts, their provenance and {n_sessions:,} sessions ...")
    t0 = time.perf_counter_ns()
    generate(nt, n_facts, seed)
    facts, labels = _read_kg(nt)
    library: list[ox.Quad] = []
    with trig_path.open("wb") as trig:
        documents, pages, chunks, restated, document_iris = write_provenance(
            facts, labels, rng, trig, library
        )
        sampled = write_sessions(facts, labels, rng, n_sessions, retrieved, trig, library)
    ox.serialize(library, library_path, ox.RdfFormat.N_QUADS)
    del library
    t1 = time.perf_counter_ns()
    log(f"  {(t1 - t0) / 1e9:.1f} s; loading into {directory / 'store'} ...")
    store = open_store(directory / "store")
    quads = load_file(store, nt)
    for path in (trig_path, library_path):
        with path.open("rb") as source:
            store.bulk_load(source, ox.RdfFormat.TRIG if path.suffix == ".trig"
                            else ox.RdfFormat.N_QUADS)
    quads = len(store.oxigraph)
    store.close()
    t2 = time.perf_counter_ns()
    log(f"  {(t2 - t1) / 1e9:.1f} s, {quads:,} quads")
    for path in (nt, trig_path, library_path):
        path.unlink()

    sample_documents = random.Random(seed + 1).sample(document_iris, min(POOL, documents))
    info = TraceBuild(
        facts=len(facts),
        documents=documents,
        pages=pages,
        chunks=chunks,
        restated=restated,
        sessions=n_sessions,
        retrieved_per_session=retrieved,
        quads=quads,
        generate_s=(t1 - t0) / 1e9,
        load_s=(t2 - t1) / 1e9,
        built_at=utc_now(),
        pool_sessions=sampled,
        pool_documents=sample_documents,
    )
    meta = {k: v for k, v in info.__dict__.items() if k != "cached"}
    meta["pool_sessions"] = [s.__dict__ for s in sampled]
    meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return info


def store_directory(work: Path, facts: int, sessions: int, retrieved: int, seed: int) -> Path:
    return work / f"trace-{facts}-{sessions}x{retrieved}-seed{seed}-v{BUILD_FORMAT}"


# ---------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------


class CountingStore(EmbeddedStore):
    """The on-disk store, counting the reads made of it: on a server each is one request."""

    requests = 0

    def select(self, query: str, *, default_graph: DataGraph = None) -> list[Solution]:
        self.requests += 1
        return super().select(query, default_graph=default_graph)

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        self.requests += 1
        return super().ask(query, default_graph=default_graph)

    def construct(self, query: str) -> list[ox.Triple]:
        self.requests += 1
        return super().construct(query)


@dataclass
class Samples:
    session: list[int] = field(default_factory=list)
    session_again: list[int] = field(default_factory=list)
    session_unrecorded: list[int] = field(default_factory=list)
    session_trace: list[int] = field(default_factory=list)
    edge_trace: list[int] = field(default_factory=list)
    edge: list[int] = field(default_factory=list)
    fact: list[int] = field(default_factory=list)
    document: list[int] = field(default_factory=list)
    session_requests: list[int] = field(default_factory=list)
    edge_requests: list[int] = field(default_factory=list)
    document_requests: list[int] = field(default_factory=list)
    session_rows: list[int] = field(default_factory=list)
    traced_edges: list[int] = field(default_factory=list)
    fact_rows: list[int] = field(default_factory=list)
    document_sessions: list[int] = field(default_factory=list)
    document_edges: list[int] = field(default_factory=list)


def _triple(text: str) -> ox.Triple:
    [quad] = ox.parse(text + " .", ox.RdfFormat.N_TRIPLES)
    return quad.triple


def _timed(samples: list[int], step: Callable[[], Any]) -> Any:
    start = time.perf_counter_ns()
    result = step()
    samples.append(time.perf_counter_ns() - start)
    return result


def _warm(samples: list[int], step: Callable[[], Any]) -> None:
    """The median of REPEATS runs of a step whose data has been read once already."""
    times: list[int] = []
    for _ in range(REPEATS):
        _timed(times, step)
    samples.append(int(median(times)))


def _requests(store: CountingStore, samples: list[int], step: Callable[[], Any]) -> Any:
    before = store.requests
    result = step()
    samples.append(store.requests - before)
    return result


def _rotated(steps: list[Callable[[], None]], index: int) -> Iterator[Callable[[], None]]:
    """The steps starting at a different one for each item, so none always runs first."""
    shift = index % len(steps)
    return iter(steps[shift:] + steps[:shift])


def measure_session(
    store: CountingStore, index: int, sampled: SampledSession,
    samples: Samples,
) -> None:
    ids = SessionIds(sampled.uuid)
    triples = [_triple(edge) for edge in sampled.edges]
    edges = {ids.edge_selection(i): t for i, t in enumerate(triples)}
    k = index % len(triples)

    def session() -> None:
        found = _timed(samples.session,
                       lambda: session_sources(store, COLLECTION, ids, edges))
        samples.session_rows.append(len(found))
        samples.traced_edges.append(len({source.edge_selection for source in found}))

    def edge() -> None:
        _timed(samples.edge,
               lambda: edge_sources(store, COLLECTION, ids.edge_selection(k)))

    def fact() -> None:
        found = _timed(samples.fact, lambda: fact_sources(store, triples[k]))
        samples.fact_rows.append(len(found))

    for step in _rotated([session, edge, fact], index):
        step()
    _warm(samples.session_again,
          lambda: session_sources(store, COLLECTION, ids, edges))
    unrecorded = SessionIds(str(uuid.UUID(int=index)))
    _warm(samples.session_unrecorded,
          lambda: session_sources(store, COLLECTION, unrecorded, {}))
    _trace(store, ids.session.value, samples.session_trace, samples.session_requests)
    _trace(store, ids.edge_selection(k).value, samples.edge_trace,
           samples.edge_requests)


def _trace(store: CountingStore, iri: str, times: list[int], requests: list[int]) -> None:
    """`tgsparql trace IRI` as the CLI runs it: its store requests, then its warm time."""
    _requests(store, requests, lambda: trace(store, COLLECTION, iri))
    _warm(times, lambda: trace(store, COLLECTION, iri))


def measure_document(store: CountingStore, document: str, samples: Samples) -> None:
    found = _requests(store, samples.document_requests, lambda: _timed(
        samples.document, lambda: trace(store, COLLECTION, document)))
    assert isinstance(found, DocumentTrace)
    samples.document_sessions.append(len(found.sessions))
    samples.document_edges.append(sum(len(use.session.selected) for use in found.sessions))


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

ROW_NAMES = [
    "session → sources (session_sources)",
    "session → sources, same session again",
    "session → sources of an unrecorded session",
    "trace of a session (trace), warm",
    "trace of an edge selection (trace), warm",
    "edge selection → sources (edge_sources)",
    "fact → sources (fact_sources)",
    "trace of a document (document_sessions)",
    "store requests per trace of a session",
    "store requests per trace of an edge selection",
    "store requests per trace of a document",
    "sources per session",
    "selected edges traced per session",
    "sources per fact",
    "sessions per document",
    "edge selections per document",
]
TIMING_ROWS = 8


@dataclass
class RunInfo:
    measured_sessions: int
    measured_documents: int
    wall_s: float
    cpu_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


def report(info: TraceBuild, samples: Samples, run: RunInfo) -> str:
    def timing(name: str, values: list[int], target: float | None = None) -> str:
        p50 = median(values) / 1e6
        if target is None:
            goal = verdict = ""
        else:
            goal, verdict = f"≤ {target:g} ms p50", "pass" if p50 <= target else "**FAIL**"
        return f"| {name} | {p50:.2f} | {p95(values) / 1e6:.2f} | {goal} | {verdict} |"

    def count(name: str, values: list[int]) -> str:
        return f"| {name} | {median(values):g} | {p95(values):g} | | |"

    targets = {0: TARGET_SESSION_MS, 1: TARGET_SESSION_MS}
    timings = [samples.session, samples.session_again, samples.session_unrecorded,
               samples.session_trace, samples.edge_trace, samples.edge, samples.fact,
               samples.document]
    counts = [samples.session_requests, samples.edge_requests, samples.document_requests,
              samples.session_rows, samples.traced_edges, samples.fact_rows,
              samples.document_sessions, samples.document_edges]
    rows = [timing(ROW_NAMES[i], values, targets.get(i)) for i, values in enumerate(timings)]
    rows += [count(name, values) for name, values in zip(ROW_NAMES[TIMING_ROWS:], counts)]
    build_line = (
        f"{info.build_s:.1f} s (generate {info.generate_s:.1f} s, load {info.load_s:.1f} s), "
        f"built {info.built_at}" + (", reused from the cache for this run" if info.cached else "")
    )
    lines = [
        *head("Trace benchmark", "python -m benchmarks.trace_bench"),
        f"- KG: {info.facts:,} facts with provenance: {info.documents:,} documents, "
        f"{info.pages:,} pages, {info.chunks:,} chunks and subgraphs ({FACTS_PER_CHUNK} facts "
        f"each, {info.restated:,} chunks restating a fact of another chunk)",
        f"- sessions: {info.sessions:,} recorded, {SELECTED_PER_SESSION} selected edges and "
        f"{info.retrieved_per_session} retrieved edges each",
        f"- store: {info.quads:,} quads, on disk",
        f"- build: {build_line}",
        f"- measured: {run.measured_sessions} sessions (after {WARMUP} warm-up), "
        f"{run.measured_documents} documents of {FACTS_PER_CHUNK * CHUNKS_PER_PAGE} chunks",
        f"- run: {run.wall_s:.1f} s wall, {run.cpu_s:.1f} s CPU of this process; load average "
        f"{run.load_before[0]:.2f} before, {run.load_after[0]:.2f} after",
        "",
        "| measure | median (ms) | p95 (ms) | target | result |",
        "|---|---:|---:|---|---|",
        *rows,
        "",
        f"Counts (last {len(ROW_NAMES) - TIMING_ROWS} rows) are per session, fact or document, "
        "not milliseconds. Each session, fact and document is traced on its first touch since "
        "the store was opened (the three session queries rotating their order from session to "
        "session); then, warm, the session's sources once more (what the pipeline sees, "
        "tracing the session it has just written), the sources of a session that is not "
        "recorded (the query's parsing and planning, with nothing to read), "
        "`tgsparql.record.trace.trace` of the session and "
        f"of one of its edge selections, each the median of {REPEATS} repeats. A document is "
        "traced once, with `trace`. A store request is one call of the store (one HTTP request "
        "on a server). Times include rendering the template and reading the rows into "
        "`tgsparql.record.trace` results.",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def run(
    facts: int,
    sessions: int,
    retrieved: int,
    measure: int,
    documents: int,
    work: Path,
    out: Path,
    *,
    seed: int = DEFAULT_SEED,
    log: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True),
) -> str:
    info = build(facts, sessions, retrieved, work, seed, log)
    pool = info.pool_sessions
    if len(pool) < measure + WARMUP:
        raise SystemExit(f"{len(pool)} sessions sampled; measure at most {len(pool) - WARMUP}")
    documents = min(documents, len(info.pool_documents))
    store = CountingStore(store_directory(work, facts, sessions, retrieved, seed) / "store")
    try:
        for i, sampled in enumerate(pool[-WARMUP:]):
            measure_session(store, i, sampled, Samples())
        samples = Samples()
        log(f"measuring {measure} sessions and {documents} documents ...")
        load_before = load_average()
        cpu_start = time.process_time_ns()
        start = time.perf_counter_ns()
        for i, sampled in enumerate(pool[:measure]):
            measure_session(store, i, sampled, samples)
        for document in info.pool_documents[:documents]:
            measure_document(store, document, samples)
        result = RunInfo(
            measured_sessions=measure,
            measured_documents=documents,
            wall_s=(time.perf_counter_ns() - start) / 1e9,
            cpu_s=(time.process_time_ns() - cpu_start) / 1e9,
            load_before=load_before,
            load_after=load_average(),
        )
    finally:
        store.close()
    return write(out, report(info, samples, result), log)


def main(argv: Sequence[str] | None = None) -> int:
    args = BenchParser("benchmarks.trace_bench", __doc__.split("\n\n")[0], SIZES,
                       out="trace.md", seed=DEFAULT_SEED, work="cache of built stores").parse(argv)
    print(run(args.facts, args.sessions, args.retrieved_edges, args.measure, args.documents,
              args.work, args.out, seed=args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
