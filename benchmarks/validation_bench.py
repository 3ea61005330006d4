"""Validation benchmark: tgsparql's validator against pyshacl, `shacl` and pyrudof on one record.

Builds (once, cached under the work directory) an explainability graph of N recorded sessions
with a known number of seeded violations of each kind, plus the KG facts they reference and the
librarian texts, as TriG with the IRIs and record shape of `tgsparql.asking.provenance` — once in the
`rdf12` dialect (triple terms) and once in the `reification` dialect (rdf:Statement IRIs), for
engines built on rdflib, which cannot represent triple terms. Both are bulk-loaded into on-disk
pyoxigraph stores. Then each engine validates in its own subprocess, so its peak memory is its
own:

- tgsparql: `Validator.validate(store, default_graph="union")` on the on-disk store;
- pyshacl: on an rdflib ConjunctiveGraph over the on-disk store through oxrdflib (reification);
- `shacl` and pyrudof: in memory from an N-Triples dump of the union, dump time included.

Run: python -m benchmarks.validation_bench [--tiny] [--sessions N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pyoxigraph as ox

from benchmarks.harness import BenchParser, Load, Size, head, load_average, load_line, write
from tgsparql.rdf.vocab import DC, PROV, RDF, RDFS, SH, TG, XSD
from tgsparql.validation.cache import CACHE_ENVIRONMENT

HERE = Path(__file__).resolve().parent
T = TypeVar("T")
SHAPES = HERE / "validation_shapes.ttl"
SIZES = {
    "sessions": Size(10_000, 200, "recorded sessions in the store"),
    "runs": Size(3, 1, "runs of each engine, of which the median is kept"),
    "samples": Size(25, 3, "sessions timed one by one for validate --session"),
    "cli-samples": Size(5, 2, "whole `tgsparql validate --session` processes timed per store"),
}
DEFAULT_SEED = 20240602
BUILD_FORMAT = 1
SLOW_S = 60.0
"""An engine whose run takes longer than this is run once, not `--runs` times (not tgsparql and
the floor, whose ratio is the measure, and which a loaded machine can slow past it)."""
BEFORE = "tgsparql before"
"""tgsparql of the --baseline source tree, its own engine run, beside this tree's."""
ALWAYS_RERUN = ("tgsparql", "floor", BEFORE)
DIALECTS = ("rdf12", "reification")
ENGINES_BY_DIALECT = {
    "rdf12": ("tgsparql", "shacl", "pyrudof"),
    "reification": ("tgsparql", "pyshacl", "shacl", "pyrudof"),
}
EXPLAINABILITY = "urn:graph:explainability"
LIBRARY = "urn:graph:library"
ENTITY = "https://trustgraph.ai/e/"
RELATION = "https://trustgraph.ai/r/"

SEEDED = {
    "missing-query": "MinCount",
    "string-start-time": "Datatype",
    "failed-without-error": "Or",
    "complete-without-answer": "SPARQL",
    "wrong-edge-count": "SPARQL",
    "negative-invalid-count": "MinInclusive",
    "two-reasons": "MaxCount",
    "edge-not-retrieved": "SPARQL",
    "edge-not-a-fact": "SPARQL",
    "answer-iri-pattern": "Pattern",
    "sha256-mismatch": "SPARQL",
}
"""Each kind of seeded violation and the constraint component of the one result it causes."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---- the record, written as TriG -------------------------------------------------------------


def lit(text: str, datatype: str = XSD + "string") -> str:
    return str(ox.Literal(text, datatype=ox.NamedNode(datatype)))


class Writer:
    """TriG lines of the record in one dialect; reification also describes every statement."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.lines: list[str] = []
        self.described: set[str] = set()

    def edge(self, triple: ox.Triple) -> str:
        if self.dialect == "rdf12":
            return f"<<( {triple.subject} {triple.predicate} {triple.object} )>>"
        digest = hashlib.sha256(f"{triple} .".encode()).hexdigest()
        iri = f"<urn:trustgraph:stmt:{digest}>"
        if iri not in self.described:
            self.described.add(iri)
            self.lines.append(
                f"{iri} <{RDF}type> <{RDF}Statement> ; <{RDF}subject> {triple.subject} ; "
                f"<{RDF}predicate> {triple.predicate} ; <{RDF}object> {triple.object} ."
            )
        return iri

    def add(self, subject: str, pairs: Sequence[tuple[str, str]]) -> None:
        body = " ; ".join(f"{p} {o}" for p, o in pairs)
        self.lines.append(f"{subject} {body} .")


@dataclass
class Kg:
    facts: list[ox.Triple]
    fact_set: set[ox.Triple]
    entities: list[ox.NamedNode]


def make_kg(rng: random.Random, sessions: int) -> Kg:
    entities = [ox.NamedNode(f"{ENTITY}entity-{i}") for i in range(max(100, sessions // 2))]
    relations = [ox.NamedNode(f"{RELATION}relation-{i}") for i in range(20)]
    facts: dict[ox.Triple, None] = {}
    while len(facts) < sessions * 5:
        subject = rng.choice(entities)
        if rng.random() < 0.85:
            obj: ox.Term = rng.choice(entities)
        else:
            obj = ox.Literal(str(rng.randrange(1800, 2030)), datatype=ox.NamedNode(XSD + "integer"))
        facts[ox.Triple(subject, rng.choice(relations), obj)] = None
    return Kg(list(facts), set(facts), entities)


def session_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def write_session(
    out: Writer, library: list[str], rng: random.Random, kg: Kg, index: int, fault: str | None
) -> None:
    """One session as `Recorder` writes it (queries/record_*.rq), with at most one fault."""
    u = session_uuid(rng)
    session, retrieval = f"<urn:trustgraph:session:{u}>", f"<urn:trustgraph:prov:retrieval:{u}>"
    selection, answer = f"<urn:trustgraph:prov:selection:{u}>", f"<urn:trustgraph:prov:answer:{u}>"
    document = f"<urn:trustgraph:answer:{u}>"
    if fault == "answer-iri-pattern":
        document = f"<urn:trustgraph:document:{u}>"
    started = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=index * 7)
    start_text = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    end_text = (started + dt.timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    failed = index % 20 == 7 or fault == "failed-without-error"

    pairs = [(f"<{RDF}type>", f"<{PROV}Activity>"), (f"<{RDFS}label>", lit("GraphRAG query session"))]
    pairs.append(
        (f"<{PROV}startedAtTime>", lit(start_text) if fault == "string-start-time" else lit(start_text, XSD + "dateTime"))
    )
    if fault != "missing-query":
        pairs.append((f"<{TG}query>", lit(f"What is known about entity {index}?")))
    pairs += [(f"<{PROV}endedAtTime>", lit(end_text, XSD + "dateTime"))]
    if failed:
        pairs.append((f"<{TG}status>", lit("failed")))
        if fault != "failed-without-error":
            pairs.append((f"<{TG}error>", lit("selection failed: the LLM did not answer")))
    else:
        pairs.append((f"<{TG}status>", lit("complete")))
    out.add(session, pairs)

    retrieved = rng.sample(kg.facts, rng.randint(20, 80))
    selected = retrieved[:3]
    if fault == "edge-not-retrieved":
        outside = next(f for f in (rng.choice(kg.facts) for _ in iter(int, 1)) if f not in retrieved)
        selected = [outside, *selected[1:]]
    if fault == "edge-not-a-fact":
        invented = next(
            t
            for t in (ox.Triple(rng.choice(kg.entities), ox.NamedNode(RELATION + "invented"), rng.choice(kg.entities)) for _ in iter(int, 1))
            if t not in kg.fact_set
        )
        retrieved = [*retrieved, invented]
        selected = [invented, *selected[1:]]
    count = len(retrieved) + (1 if fault == "wrong-edge-count" else 0)
    pairs = [
        (f"<{RDF}type>", f"<{PROV}Entity>"),
        (f"<{RDFS}label>", lit("Retrieved edges")),
        (f"<{PROV}wasGeneratedBy>", session),
        (f"<{TG}concept>", lit(f"entity {index}")),
        (f"<{TG}entity>", str(retrieved[0].subject)),
    ]
    pairs += [(f"<{TG}retrievedEdge>", out.edge(t)) for t in retrieved]
    pairs.append((f"<{TG}edgeCount>", lit(str(count), XSD + "integer")))
    out.add(retrieval, pairs)
    if failed:
        return

    edges = [f"<urn:trustgraph:prov:edge:{u}:{i}>" for i in range(len(selected))]
    invalid = "-1" if fault == "negative-invalid-count" else "0"
    pairs = [
        (f"<{RDF}type>", f"<{PROV}Entity>"),
        (f"<{RDFS}label>", lit("Selected edges")),
        (f"<{PROV}wasDerivedFrom>", retrieval),
    ]
    pairs += [(f"<{TG}selectedEdge>", e) for e in edges]
    pairs.append((f"<{TG}invalidIdCount>", lit(invalid, XSD + "integer")))
    out.add(selection, pairs)
    for i, (edge, triple) in enumerate(zip(edges, selected)):
        pairs = [
            (f"<{RDF}type>", f"<{TG}EdgeSelection>"),
            (f"<{TG}edge>", out.edge(triple)),
            (f"<{TG}reasoning>", lit(f"offline selector: edge {i} matches the question; score 0.9")),
        ]
        if fault == "two-reasons" and i == 0:
            pairs.append((f"<{TG}reasoning>", lit("a second, contradicting reason")))
        out.add(edge, pairs)

    text = f"Answer {index}: " + "; ".join(str(t.object) for t in selected)
    if fault != "complete-without-answer":
        out.add(
            answer,
            [
                (f"<{RDF}type>", f"<{PROV}Entity>"),
                (f"<{RDFS}label>", lit("GraphRAG answer")),
                (f"<{PROV}wasDerivedFrom>", selection),
                (f"<{TG}document>", document),
            ],
        )
    digest = hashlib.sha256((text + " (edited)" if fault == "sha256-mismatch" else text).encode()).hexdigest()
    library.append(
        f"{document} <{DC}title> {lit('GraphRAG answer ' + u)} ; <{TG}content> {lit(text)} ; "
        f"<{TG}mimeType> {lit('text/plain')} ; <{TG}contentSha256> {lit(digest)} ."
    )


def faults(sessions: int, rng: random.Random) -> tuple[dict[int, str], int]:
    """Which session carries which seeded violation: `per_kind` sessions for each kind."""
    per_kind = max(2, sessions // 1000)
    complete = [i for i in range(sessions) if i % 20 != 7]
    chosen = rng.sample(complete, per_kind * len(SEEDED))
    return {i: kind for i, kind in zip(chosen, [k for k in SEEDED for _ in range(per_kind)])}, per_kind


def generate(sessions: int, seed: int) -> Iterator[tuple[str, str]]:
    """(dialect, TriG text) for both dialects, from the same draws."""
    kg = make_kg(random.Random(seed), sessions)
    plan, _ = faults(sessions, random.Random(seed + 1))
    kg_lines = [f"{t} ." for t in kg.facts] + [
        f"{e} <{RDFS}label> {lit('entity ' + e.value.rsplit('-', 1)[1])} ." for e in kg.entities
    ]
    for dialect in DIALECTS:
        rng = random.Random(seed + 2)
        out, library = Writer(dialect), []
        for index in range(sessions):
            write_session(out, library, rng, kg, index, plan.get(index))
        yield dialect, "\n".join(
            [*kg_lines, f"<{EXPLAINABILITY}> {{", *out.lines, "}", f"<{LIBRARY}> {{", *library, "}", ""]
        )


@dataclass
class Build:
    directory: Path
    sessions: int
    per_kind: int
    quads: dict[str, int]
    build_s: float
    reused: bool


def build(sessions: int, seed: int, work: Path) -> Build:
    directory = work / f"validation-{sessions}-seed{seed}-v{BUILD_FORMAT}"
    info = directory / "build.json"
    if info.exists():
        log(f"using the cached stores in {directory}")
        data = json.loads(info.read_text(encoding="utf-8"))
        return Build(directory, sessions, data["per_kind"], data["quads"], data["build_s"], True)
    start = time.perf_counter()
    quads = {}
    for dialect, text in generate(sessions, seed):
        target = directory / dialect
        target.mkdir(parents=True, exist_ok=True)
        trig = target / "record.trig"
        trig.write_text(text, encoding="utf-8")
        store = ox.Store(str(target / "store"))
        store.bulk_load(path=str(trig), format=ox.RdfFormat.TRIG)
        store.optimize()
        quads[dialect] = len(store)
        del store
        trig.unlink()
        log(f"built the {dialect} store: {quads[dialect]:,} quads")
    _, per_kind = faults(sessions, random.Random(seed + 1))
    build_s = time.perf_counter() - start
    info.write_text(json.dumps({"per_kind": per_kind, "quads": quads, "build_s": build_s}), encoding="utf-8")
    return Build(directory, sessions, per_kind, quads, build_s, False)


# ---- the engines, each in its own process ----------------------------------------------------


def shapes_files(dialect: str) -> list[Path]:
    return [SHAPES, HERE / f"validation_shapes_{dialect}.ttl"]


def shapes_text(dialect: str) -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in shapes_files(dialect))


def dump_union(store_dir: Path, target: Path) -> None:
    """The union of all graphs as N-Triples: what an in-memory engine is given."""
    store = ox.Store.read_only(str(store_dir))
    triples = store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", use_default_graph_as_union=True)
    triples.serialize(str(target), ox.RdfFormat.N_TRIPLES)


QUERY_THREAD_CPU: dict[int, float] = {}
"""CPU seconds spent answering queries, by thread (of tgsparql's store.select and the floor's
queries): what two idle CPUs could overlap."""


def on_query_thread(answer: Callable[..., T]) -> Callable[..., T]:
    """`answer` with the CPU time of each call added to its thread's in QUERY_THREAD_CPU."""
    def timed(*args: object, **kwargs: object) -> T:
        start = time.thread_time()
        try:
            return answer(*args, **kwargs)
        finally:
            thread = threading.get_ident()
            QUERY_THREAD_CPU[thread] = QUERY_THREAD_CPU.get(thread, 0.0) + time.thread_time() - start
    return timed


def run_tgsparql(store_dir: Path, dialect: str, scratch: Path) -> str:
    from tgsparql.stores.store import EmbeddedStore
    from tgsparql.validation import Shapes, Validator

    store = EmbeddedStore(store_dir)
    store.select = on_query_thread(store.select)  # type: ignore[method-assign]
    validator = Validator(Shapes.from_files(shapes_files(dialect)), dialect=dialect)
    return validator.validate(store, default_graph="union").to_turtle()


def run_pyshacl(store_dir: Path, dialect: str, scratch: Path) -> str:
    import pyshacl
    import rdflib
    from oxrdflib import OxigraphStore

    if dialect != "reification":
        raise SystemExit("pyshacl (rdflib) cannot read triple terms")
    data = rdflib.ConjunctiveGraph(store=OxigraphStore(store=ox.Store.read_only(str(store_dir))))
    shapes = rdflib.Graph().parse(data=shapes_text(dialect), format="turtle")
    _, report, _ = pyshacl.validate(data, shacl_graph=shapes, inference="none", inplace=True)
    return report.serialize(format="turtle")


def run_shacl(store_dir: Path, dialect: str, scratch: Path) -> str:
    import shacl

    dump = scratch / "union.nt"
    dump_union(store_dir, dump)
    shapes = shacl.Shapes.from_text(shapes_text(dialect), "turtle")
    return shapes.validate_file(str(dump)).serialize("turtle")


def run_pyrudof(store_dir: Path, dialect: str, scratch: Path) -> str:
    import pyrudof

    dump = scratch / "union.nt"
    dump_union(store_dir, dump)
    rudof = pyrudof.Rudof(pyrudof.RudofConfig())
    rudof.read_data(str(dump), format=pyrudof.RDFFormat.NTriples, reader_mode=pyrudof.ReaderMode.Strict)
    rudof.read_shacl(shapes_text(dialect), format=pyrudof.ShaclFormat.Turtle)
    rudof.validate_shacl(mode=pyrudof.ShaclValidationMode.Native)
    return rudof.serialize_shacl_validation_results(format=pyrudof.ResultShaclValidationFormat.Turtle)


FLOOR_QUERIES = """
PREFIX sh: <http://www.w3.org/ns/shacl#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT DISTINCT ?kind ?target ?path ?select WHERE {
  { ?node ?kind ?target FILTER(?kind IN (sh:targetClass, sh:targetSubjectsOf))
    ?node (sh:property|sh:or/rdf:rest*/rdf:first) ?property . ?property sh:path ?path }
  UNION { ?constraint sh:select ?select }
}"""
"""What the floor reads, from the shapes graph: each property shape's path with the targets of
its node shape (sh:property, or a member of sh:or), and each SHACL-SPARQL query."""


def floor_queries(dialect: str) -> list[str]:
    """The least any validator on pyoxigraph runs for the benchmark's shapes: each SHACL-SPARQL
    query as written (its own first pattern finds the focus nodes), and, for each property
    shape, one read of every value of every focus node, counted in the engine (no rows to
    Python, nothing compared)."""
    shapes = ox.Store()
    shapes.load(shapes_text(dialect).encode(), ox.RdfFormat.TURTLE)
    queries = []
    for row in shapes.query(FLOOR_QUERIES):  # type: ignore[union-attr]
        if row["select"] is not None:
            queries.append(row["select"].value)
            continue
        kind, target, path = row["kind"].value, row["target"], row["path"]
        focus = f"?this a {target}" if kind == SH + "targetClass" else f"?this {target} ?t"
        queries.append(f"SELECT (COUNT(*) AS ?n) WHERE {{ {{ SELECT DISTINCT ?this WHERE {{ {focus} }} }} "
                       f"OPTIONAL {{ ?this {path} ?value }} }}")
    return queries


def run_floor(store_dir: Path, dialect: str, scratch: Path) -> None:
    """The floor's queries on the on-disk store, two at a time (as tgsparql runs them on two
    CPUs), each answer read to its end."""
    from concurrent.futures import ThreadPoolExecutor

    store = ox.Store.read_only(str(store_dir))

    @on_query_thread
    def answer(query: str) -> int:
        return len(list(store.query(query, use_default_graph_as_union=True)))  # type: ignore[arg-type]

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(answer, floor_queries(dialect)))


RUNNERS: dict[str, Callable[[Path, str, Path], str | None]] = {
    "tgsparql": run_tgsparql,
    "pyshacl": run_pyshacl,
    "shacl": run_shacl,
    "pyrudof": run_pyrudof,
    "floor": run_floor,
}


def results_of(report: str) -> list[list[str | None]]:
    """(focus, path, value, component, severity) of every top-level result, as N-Triples text."""
    triples = list(ox.parse(report, ox.RdfFormat.TURTLE))
    by_subject: dict[ox.Term, dict[str, ox.Term]] = {}
    results = []
    for t in triples:
        by_subject.setdefault(t.subject, {})[t.predicate.value] = t.object
        if t.predicate.value == SH + "result":
            results.append(t.object)

    def text(node: ox.Term, name: str) -> str | None:
        value = by_subject[node].get(SH + name)
        return None if value is None else str(value)

    rows = [
        [text(r, "focusNode"), text(r, "resultPath"), text(r, "value"), text(r, "sourceConstraintComponent"), text(r, "resultSeverity")]
        for r in results
    ]
    return sorted(rows, key=lambda row: [cell or "" for cell in row])


SESSIONS_QUERY = (
    f"SELECT ?s WHERE {{ GRAPH <{EXPLAINABILITY}> {{ ?s a <{PROV}Activity> }} "
    'FILTER(STRSTARTS(STR(?s), "urn:trustgraph:session:")) } ORDER BY ?s'
)


def spread(sessions: list[str], samples: int, shift: int = 0) -> list[str]:
    """`samples` sessions spread evenly over the store; `shift` > 0 takes the ones halfway
    between, so a baseline and this code each time sessions no other run has read (cold)."""
    step = max(1, len(sessions) // samples)
    return sessions[(step // 2 if shift else 0):: step][:samples]


def run_scoped(store_dir: Path, dialect: str, samples: int) -> dict[str, object]:
    """`validate --session` as `query --validate` and CI run it: `validate_session` with the
    bundled shapes, on sessions spread over the store; the validator is built (once per
    process) by an untimed first session. (A baseline source tree runs its own version of
    this function, which takes the sessions at the step's start; this one takes those halfway.)"""
    from tgsparql.record.conformance import validate_session
    from tgsparql.stores.store import EmbeddedStore

    store = EmbeddedStore(store_dir)
    store.dialect = dialect  # type: ignore[misc]
    sessions = [row["s"].value for row in store.select(SESSIONS_QUERY)]
    chosen = spread(sessions, samples, shift=1)
    validate_session(store, sessions[-1])
    asked = _count_requests(store)
    walls, cpus, requests, results = [], [], [], 0
    for session in chosen:
        before = len(asked)
        wall, cpu = time.perf_counter(), time.process_time()
        results += len(validate_session(store, session).results)
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
        requests.append(len(asked) - before)
    walls.sort()
    return {
        "queries": statistics.median(requests),
        "load": os.getloadavg()[0],
        "timed": len(chosen),
        "p50_ms": 1000 * statistics.median(walls),
        "p90_ms": 1000 * walls[int(0.9 * (len(walls) - 1))],
        "cpu_p50_ms": 1000 * statistics.median(cpus),
        "results": results,
    }


def _count_requests(store: object) -> list[None]:
    """From now on, one item appended for each query `store` answers (SELECT or ASK, from any
    thread: list.append is atomic)."""
    asked: list[None] = []

    def counted(answer: Callable[..., object]) -> Callable[..., object]:
        def counting(*args: object, **kwargs: object) -> object:
            asked.append(None)
            return answer(*args, **kwargs)
        return counting

    for verb in ("select", "ask"):
        setattr(store, verb, counted(getattr(store, verb)))
    return asked


@dataclass
class Scoped:
    sessions: int
    dialect: str
    quads: int
    measured: dict[str, object] | None
    error: str | None = None
    baseline: dict[str, object] | None = None
    """The same measures of the baseline source tree (--baseline), in the same run."""


def source_env(source: Path | None) -> dict[str, str]:
    """The environment that runs `source`'s tgsparql (a source tree first on the path)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    return env


def measure_scoped(
    build: Build, dialect: str, samples: int, timeout: float, cli_samples: int, work: Path,
    baseline: Path | None = None,
) -> Scoped:
    """In one process, `validate_session` per session; then `tgsparql validate --session`
    whole processes and the floor under them (Python started, pyoxigraph imported, the store
    opened), the baseline source tree's too when there is one, interleaved."""
    store = build.directory / dialect / "store"
    scoped = Scoped(build.sessions, dialect, build.quads[dialect], None)
    if baseline and not (templates := templates_of(baseline)).is_relative_to(baseline.resolve()):
        scoped.error = f"the baseline reads the query templates in {templates}, not its own"
        return scoped
    sources = ([baseline] if baseline else []) + [None]
    for source in sources:
        command = [sys.executable, "-m", "benchmarks.validation_bench", "--scoped", str(samples),
                   "--dialect", dialect, "--store", str(store)]
        try:
            done = subprocess.run(command, cwd=source or HERE.parent, env=source_env(source),
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            scoped.error = f"no result within {timeout:.0f} s"
            return scoped
        if done.returncode != 0:
            scoped.error = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:200]
            return scoped
        measured = json.loads(done.stdout.strip().splitlines()[-1])
        log(f"validate --session on {build.sessions:,} sessions ({dialect}, "
            f"{'baseline' if source else 'this code'}): in process p50 {measured['p50_ms']:.1f} ms")
        if source:
            scoped.baseline = measured
        else:
            scoped.measured = measured
    if dialect == "rdf12":  # the command reads an on-disk store in its only dialect
        commands = measure_cli(store, cli_samples, sources, work)
        for source, measured in zip(sources, commands):
            (scoped.baseline if source else scoped.measured).update(measured)  # type: ignore[union-attr]
        log(f"validate --session on {build.sessions:,} sessions: whole command p50 "
            + " → ".join(f"{m['cli_p50_ms']:.1f}" for m in commands)
            + f" ms, floor {commands[-1]['floor_p50_ms']:.1f} ms")
    return scoped


def templates_of(source: Path) -> Path:
    """Where `source`'s package finds its query templates (an editable install of another tree
    maps them to that tree's)."""
    done = subprocess.run(
        [sys.executable, "-c", "from importlib.resources import files; print(files('tgsparql.queries'))"],
        cwd=source, env=source_env(source), capture_output=True, text=True, check=True,
    )
    return Path(done.stdout.strip()).resolve()


COMMAND_FLOOR = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
import click, pyoxigraph
store = pyoxigraph.Store.read_only(sys.argv[1])
queries = json.loads(open(sys.argv[2], encoding="utf-8").read())
def run(query):
    answer = store.query(query[0], use_default_graph_as_union=query[1])
    return bool(answer) if isinstance(answer, pyoxigraph.QueryBoolean) else list(answer)
for query in queries[:FIRST]:
    run(query)
with ThreadPoolExecutor(2) as pool:
    list(pool.map(run, queries[FIRST:]))
"""
"""The least a `validate --session` command could do: start Python, import click (the command
line) and pyoxigraph, open the store, and send the queries this code's validation of the session
sends (read from a file, already written), the first FIRST one after another (the session's
nodes, what they reach, whether the store keeps lexical records: each needs the one before), the
others two at a time."""


def session_queries(store_dir: Path, session: str) -> list[tuple[str, bool]]:
    """The requests this code's `validate --session` sends the store for `session`, in order:
    (text, whether it reads the union of all graphs)."""
    from tgsparql.record.conformance import validate_session
    from tgsparql.stores.store import EmbeddedStore

    store = EmbeddedStore(store_dir, read_only=True)
    sent: list[tuple[str, bool]] = []

    def recorded(answer: Callable[..., object]) -> Callable[..., object]:
        def recording(query: str, **options: object) -> object:
            sent.append((query, options.get("default_graph") == "union"))
            return answer(query, **options)
        return recording

    for verb in ("select", "ask"):
        setattr(store, verb, recorded(getattr(store, verb)))
    try:
        validate_session(store, session)
    finally:
        store.close()
    return sent


def measure_cli(
    store: Path, samples: int, sources: list[Path | None], work: Path
) -> list[dict[str, float]]:
    """`tgsparql validate --session S` as CI runs it, one process per session (sessions other
    than those timed in process), for each source tree in turn and then the floor, a process
    that only starts Python, imports pyoxigraph and opens the store: wall and CPU (user and
    system) of each, interleaved so that the machine's load falls alike on all. Each runs as an
    installed package does: its modules' bytecode compiled (by an untimed first command, whose
    wall is `cli_first_ms`: the cache of validators still empty), in a cache directory of this
    run's own (benchmarks/cache, as the user's would be)."""
    import pyoxigraph

    opened = pyoxigraph.Store.read_only(str(store))
    sessions = [row["s"].value for row in opened.query(SESSIONS_QUERY)]  # type: ignore[index,union-attr]
    del opened
    runs = []
    for index, source in enumerate(sources):
        kept = work / f"commands-{os.getpid()}-{index}"
        shutil.rmtree(kept, ignore_errors=True)
        env = {**source_env(source), "PYTHONPYCACHEPREFIX": str(kept / "bytecode"),
               CACHE_ENVIRONMENT: str(kept / "validators")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        chosen = spread(sessions, max(1, samples), shift=0 if source else 1)[1:] or sessions[:1]
        runs.append((source, env, chosen))
    cli = [sys.executable, "-c", "from tgsparql.cli import main; main()", "validate",
           "--store", str(store), "--session"]
    floor = [sys.executable, "-c", "import sys, pyoxigraph; pyoxigraph.Store(sys.argv[1]).flush()", str(store)]
    sent = []  # the queries of each session this code's commands validate, for the command floor
    for index, session in enumerate(runs[-1][2]):
        path = work / f"commands-{os.getpid()}-queries-{index}.json"
        path.write_text(json.dumps(session_queries(store, session)), encoding="utf-8")
        sent.append(path)
    least = [sys.executable, "-c", COMMAND_FLOOR.replace("FIRST", "3"), str(store)]

    def timed(command: list[str], source: Path | None, env: dict[str, str]) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=source or HERE.parent, env=env, capture_output=True, text=True)
        wall = 1000 * (time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{command[3:5]}: exit {done.returncode}: {done.stderr.strip()[-200:]}")
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return wall, 1000 * cpu

    first = [timed(cli + [sessions[-1]], source, env)[0] for source, env, _ in runs]
    commands: list[list[tuple[float, float]]] = [[] for _ in runs]
    floors, leasts = [], []
    for sample in range(max(len(chosen) for _, _, chosen in runs)):
        for found, (source, env, chosen) in zip(commands, runs):
            found.append(timed(cli + [chosen[sample % len(chosen)]], source, env))
        floors.append(timed(floor, None, runs[-1][1]))
        leasts.append(timed(least + [str(sent[sample % len(sent)])], None, runs[-1][1]))
    for path in sent:
        path.unlink()
    for index in range(len(runs)):  # the bytecode and validators the commands kept
        shutil.rmtree(work / f"commands-{os.getpid()}-{index}", ignore_errors=True)
    return [{
        "cli_p50_ms": statistics.median(wall for wall, _ in found),
        "cli_cpu_p50_ms": statistics.median(cpu for _, cpu in found),
        "cli_first_ms": once,
        "floor_p50_ms": statistics.median(wall for wall, _ in floors),
        "floor_cpu_p50_ms": statistics.median(cpu for _, cpu in floors),
        "least_p50_ms": statistics.median(wall for wall, _ in leasts),
        "least_cpu_p50_ms": statistics.median(cpu for _, cpu in leasts),
    } for found, once in zip(commands, first)]


def engine_main(engine: str, store_dir: Path, dialect: str, scratch: Path) -> None:
    """Run one engine once and print one JSON line: wall time, CPU time (every thread of the
    process), its critical path (see Measured.paths), results, peak memory."""
    start, cpu = time.perf_counter(), time.process_time()
    report = RUNNERS[engine](store_dir, dialect, scratch)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queries = QUERY_THREAD_CPU.values()
    path = cpu - sum(queries) + max(queries) if queries else None
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "path_s": path, "peak_mb": peak_kb / 1024,
                      "results": None if report is None else results_of(report)}))


@dataclass
class Measured:
    engine: str
    dialect: str
    walls: list[float]
    peak_mb: float
    results: list[list[str | None]] | None
    error: str | None = None
    cpus: list[float] = field(default_factory=list)
    load: float | None = None
    """The 1-minute load average when the last run ended."""
    paths: list[float] = field(default_factory=list)
    """Each run's CPU critical path: its CPU time outside the threads answering queries plus
    that of the busiest of them, the wall time two idle CPUs would take (contention for
    memory and Python's lock aside), for engines that run queries on two threads. On a loaded
    machine this, not the wall time, says whether the wall target is within reach."""

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float | None:
        return statistics.median(self.cpus) if self.cpus else None

    @property
    def path(self) -> float | None:
        return statistics.median(self.paths) if self.paths else None


def measure(engines: list[str], dialect: str, build: Build, runs: int, timeout: float,
            baseline: Path | None = None) -> list[Measured]:
    """Each engine's runs on one dialect, interleaved (a round runs each engine once), so a
    change of the machine's load falls on all of them alike; an engine that failed, or took
    more than SLOW_S (or is pyshacl), runs no more rounds, unless it is one of ALWAYS_RERUN.
    BEFORE is the `baseline` tree's own tgsparql run."""
    measured = {engine: Measured(engine, dialect, [], 0.0, None) for engine in engines}
    scratch = build.directory / "scratch"
    scratch.mkdir(exist_ok=True)
    for round_ in range(runs):
        for engine, m in measured.items():
            slow = engine == "pyshacl" or (max(m.walls, default=0) > SLOW_S and engine not in ALWAYS_RERUN)
            if m.error is not None or (round_ and slow):
                continue
            source = baseline if engine == BEFORE else None
            command = [
                sys.executable, "-m", "benchmarks.validation_bench",
                "--engine", "tgsparql" if source else engine,
                "--dialect", dialect, "--store", str(build.directory / dialect / "store"),
                "--scratch", str(scratch),
            ]
            try:
                done = subprocess.run(command, cwd=source or HERE.parent, env=source_env(source),
                                      capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                m.error = f"no result within {timeout:.0f} s"
                continue
            if done.returncode != 0:
                m.error = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:200]
                continue
            line = json.loads(done.stdout.strip().splitlines()[-1])
            m.walls.append(line["wall_s"])
            m.cpus.append(line["cpu_s"])
            if line.get("path_s") is not None:
                m.paths.append(line["path_s"])
            m.peak_mb = max(m.peak_mb, line["peak_mb"])
            m.results = line["results"]
            m.load = os.getloadavg()[0]
            log(f"{engine} on {dialect}: {line['wall_s']:.2f} s wall, {line['cpu_s']:.2f} s CPU, "
                f"{line.get('path_s') or 0:.2f} s CPU critical path, "
                f"{'—' if m.results is None else len(m.results)} results, load {m.load:.1f}")
    return list(measured.values())


# ---- the report ------------------------------------------------------------------------------


def by_component(results: list[list[str | None]]) -> Counter[str]:
    return Counter(str(r[3]).rsplit("#", 1)[-1].removesuffix(">").removesuffix("ConstraintComponent") for r in results)


def expected_components(per_kind: int) -> Counter[str]:
    return Counter({c: n * per_kind for c, n in Counter(SEEDED.values()).items()})


SCOPED_TARGET_MS = 50.0
COMMAND_TARGET = 2.0
"""The whole `validate --session` command at most this many times the floor's wall time."""
RATE_TARGET = 200_000
"""Quads per second of wall time a full-store tgsparql run reaches (issue 34), on 2 CPUs."""


def scoped_report(scoped: list[Scoped], measured: list[Measured], main_sessions: int) -> list[str]:
    """One session's validation beside the full-store run, on stores of growing size, beside
    the baseline source tree when one was given."""
    if not scoped:
        return []
    with_baseline = any(row.baseline for row in scoped)
    both = (lambda key, row: f"{_ms(row.baseline, key)} → {_ms(row.measured, key)}") if with_baseline \
        else (lambda key, row: _ms(row.measured, key))

    def ratios(key: str, floor: str, row: Scoped) -> str:
        """The command over the floor, the baseline's → this code's."""
        found = [m for m in (row.baseline, row.measured) if m is not None and key in m]
        return " → ".join(f"{float(m[key]) / float(m[floor]):.1f}" for m in found) or "—"  # type: ignore[arg-type]

    def queries(row: Scoped) -> str:
        """Store requests per session (median); a baseline that does not count them shows —."""
        counts = [m.get("queries") for m in (row.baseline, row.measured) if m is not None]
        return " → ".join("—" if n is None else f"{float(n):.0f}" for n in counts)  # type: ignore[arg-type]
    lines = [
        "## validate --session: one session",
        "",
        "In process: `validate_session` (what `validate --session` and `query --validate` run) with "
        "the bundled shapes, on sessions spread over the store, each timed alone in one process after "
        "an untimed first session builds the validator; wall and CPU (this process) per session. "
        "Command: `tgsparql validate --store DIR --session S`, one whole process per session, wall "
        "and CPU (user and system); floor: a process that only starts Python, imports pyoxigraph and "
        "opens the store, the least any command on the store costs, timed between the commands; "
        "each process as an installed package runs (its modules' bytecode compiled by an untimed "
        "first command: `first command`, the cache of validators still empty, in a directory of the "
        "run's own). Command floor: the least such a command could do, timed between them: a process "
        "that starts Python, imports click and pyoxigraph, opens the store and sends the queries this "
        "code's validation of the session sends, read from a file, two at a time where they do not "
        "depend on each other. Load: the machine's 1-minute load average (2 CPUs)."
        + (" Each cell: the baseline → this code, measured in the same run, each on sessions no "
           "other run had read." if with_baseline else "")
        + " Queries per session: the SELECT and ASK requests one session's validation sends to the "
        "store (median).",
        "",
        "| store sessions | dialect | quads | sessions timed | in process p50 ms | p90 ms | CPU p50 ms "
        "| command p50 ms | floor p50 ms | command / floor | command CPU p50 ms | floor CPU p50 ms "
        "| CPU command / floor | first command ms | command floor p50 ms | command floor CPU p50 ms "
        "| command / command floor | full-store run s | load | queries per session |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(scoped, key=lambda r: (r.sessions, r.dialect)):
        full = next((m for m in measured if m.engine == "tgsparql" and m.dialect == row.dialect
                     and m.walls and row.sessions == main_sessions), None)
        full_s = f"{full.wall:.2f}" if full else "—"
        m = row.measured
        if m is None:
            lines.append(f"| {row.sessions:,} | {row.dialect} | {row.quads:,} | — | — | — | — | — | — | — "
                         f"| — | — | — | — | — | — | — | {full_s} | failed: {row.error} | — |")
            continue
        lines.append(
            f"| {row.sessions:,} | {row.dialect} | {row.quads:,} | {m['timed']} | {both('p50_ms', row)} | "
            f"{both('p90_ms', row)} | {both('cpu_p50_ms', row)} | {both('cli_p50_ms', row)} | "
            f"{_ms(m, 'floor_p50_ms')} | {ratios('cli_p50_ms', 'floor_p50_ms', row)} | "
            f"{both('cli_cpu_p50_ms', row)} | {_ms(m, 'floor_cpu_p50_ms')} | "
            f"{ratios('cli_cpu_p50_ms', 'floor_cpu_p50_ms', row)} | {both('cli_first_ms', row)} | "
            f"{_ms(m, 'least_p50_ms')} | {_ms(m, 'least_cpu_p50_ms')} | "
            f"{ratios('cli_p50_ms', 'least_p50_ms', row)} | {full_s} | {float(m['load']):.1f} | {queries(row)} |"  # type: ignore[arg-type]
        )
    worst = max((float(r.measured["p50_ms"]) for r in scoped if r.measured), default=None)  # type: ignore[arg-type]
    if worst is not None:
        met = "met" if worst <= SCOPED_TARGET_MS else "missed"
        lines += ["", f"largest in-process p50: {worst:.1f} ms (target ≤ {SCOPED_TARGET_MS:.0f} ms: {met})"]
    commands = [float(r.measured["cli_p50_ms"]) / float(r.measured["floor_p50_ms"])  # type: ignore[arg-type]
                for r in scoped if r.measured and "cli_p50_ms" in r.measured]
    if commands:
        met = "met" if max(commands) <= COMMAND_TARGET else "missed"
        lines += [f"largest command / floor: {max(commands):.2f} (target ≤ {COMMAND_TARGET:.0f}: {met})"]
        least = [float(r.measured["least_p50_ms"]) / float(r.measured["floor_p50_ms"])  # type: ignore[arg-type]
                 for r in scoped if r.measured and "least_p50_ms" in r.measured]
        lines += [f"largest command floor / floor: {max(least):.2f} (the least a command can cost, "
                  "against the process floor)"]
    return [*lines, ""]


def _ms(measured: dict[str, object] | None, key: str) -> str:
    return "—" if measured is None or key not in measured else f"{float(measured[key]):.1f}"  # type: ignore[arg-type]


def report(build: Build, measured: list[Measured], runs: int, load_before: Load) -> str:
    lines = [
        *head("Validation benchmark", "python -m benchmarks.validation_bench"),
        load_line(load_before),
        f"- record: {build.sessions:,} sessions, {build.per_kind} seeded violations of each of "
        f"{len(SEEDED)} kinds ({build.per_kind * len(SEEDED)} expected results); "
        + ", ".join(f"{d} {n:,} quads" for d, n in build.quads.items())
        + ", on-disk stores",
        f"- build: {build.build_s:.1f} s" + (", reused from the cache for this run" if build.reused else ""),
        "- shapes: benchmarks/validation_shapes.ttl + validation_shapes_{dialect}.ttl",
        f"- runs: median of {runs} per engine (1 for pyshacl and for any other than tgsparql and "
        f"the floor whose run took over {SLOW_S:.0f} s), interleaved, "
        "each in its own process; "
        f"peak memory = that process's ru_maxrss",
        "",
    ]
    expected = expected_components(build.per_kind)
    for dialect in DIALECTS:
        rows = [m for m in measured if m.dialect == dialect]
        ours = next((m for m in rows if m.engine == "tgsparql" and m.error is None), None)
        engines = [m for m in rows if m.engine not in ("floor", BEFORE)]
        fastest = min((m.wall for m in engines if m.error is None and m.walls), default=None)
        lines += [
            f"## {dialect}",
            "",
            "| engine | wall s | results | same results as tgsparql | as seeded | peak MB "
            "| × tgsparql time | CPU s | k quads/s | CPU critical path s | k quads/s on it | load |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m in rows:
            if m.error is not None and not m.walls:
                lines.append(f"| {m.engine} | — | — | — | — | — | failed: {m.error} | — | — | — | — | — |")
                continue
            ratio = f"{m.wall / ours.wall:.1f}" if ours else "—"
            rate = f"{build.quads[dialect] / m.wall / 1000:.0f}"
            cpu = "—" if m.cpu is None else f"{m.cpu:.2f}"
            path = "— | —" if m.path is None else \
                f"{m.path:.2f} | {build.quads[dialect] / m.path / 1000:.0f}"
            load = "—" if m.load is None else f"{m.load:.1f}"
            if m.results is None:  # the floor: no report
                lines.append(f"| {m.engine} | {m.wall:.2f} | — | — | — | {m.peak_mb:.0f} | {ratio} "
                             f"| {cpu} | {rate} | {path} | {load} |")
                continue
            same = "yes" if ours and m.results == ours.results else "**no**"
            seeded = "yes" if by_component(m.results or []) == expected else "**no**"
            lines.append(
                f"| {m.engine} | {m.wall:.2f} | {len(m.results or [])} | {same} | {seeded} | {m.peak_mb:.0f} "
                f"| {ratio} | {cpu} | {rate} | {path} | {load} |"
            )
        if ours and fastest:
            lines += ["", f"tgsparql / fastest: {ours.wall / fastest:.2f} (target ≤ 2)"]
            pyshacl = next((m for m in rows if m.engine == "pyshacl" and m.walls), None)
            if pyshacl:
                lines.append(f"pyshacl / tgsparql: {pyshacl.wall / ours.wall:.1f} (target ≥ 20)")
            rate = build.quads[dialect] / ours.wall
            lines.append(f"tgsparql: {rate / 1000:.0f} k quads/s wall (target ≥ {RATE_TARGET // 1000} k)")
            if ours.path:
                lines.append(f"tgsparql on its CPU critical path (two idle CPUs): "
                             f"{build.quads[dialect] / ours.path / 1000:.0f} k quads/s")
            before = next((m for m in rows if m.engine == BEFORE and m.walls), None)
            if before and before.cpu and ours.cpu:
                lines.append(f"tgsparql / tgsparql before: {ours.wall / before.wall:.2f} wall, "
                             f"{ours.cpu / before.cpu:.2f} CPU")
            floor = next((m for m in rows if m.engine == "floor" and m.walls), None)
            if floor and floor.cpu and ours.cpu:
                lines.append(f"tgsparql / floor: {ours.wall / floor.wall:.2f} wall, "
                             f"{ours.cpu / floor.cpu:.2f} CPU"
                             + (f", {ours.path / floor.path:.2f} CPU critical path"
                                if ours.path and floor.path else ""))
        lines.append("")
    return "\n".join(lines)


def session_sizes(args: argparse.Namespace) -> list[int]:
    """The store sizes validate --session is measured on: the main one, then --scoped-sessions."""
    return [args.sessions, *(int(n) for n in args.scoped_sessions.split(",") if n.strip())]


def session_head(args: argparse.Namespace, load_before: Load) -> str:
    return "\n".join([
        *head("Validation benchmark: validate --session",
              "python -m benchmarks.validation_bench --session-only"),
        load_line(load_before),
        "- stores: " + ", ".join(f"{n:,}" for n in sorted(session_sizes(args))) + " sessions"
        + (", baseline: an earlier source tree" if args.baseline else "")
        + "; the data is that of the validation benchmark",
        "",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.validation_bench", __doc__.split("\n\n")[0], SIZES,
                         out="validation.md", seed=DEFAULT_SEED, work="cache of built stores")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per engine run")
    parser.add_argument("--engines", default="tgsparql,pyshacl,shacl,pyrudof")
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--dialect", help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scoped", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--scoped-sessions", default="",
                        help="more store sizes (comma-separated session counts) on which only "
                        "validate --session is measured, to show its cost does not grow with the store")
    parser.add_argument("--baseline", type=Path,
                        help="a source tree of another tgsparql version (e.g. `git worktree add "
                        "DIR main`, with DIR/queries and DIR/shapes copied into DIR/tgsparql/) "
                        "whose validate --session, and full-store run, are measured beside this "
                        "one's")
    parser.add_argument("--session-only", action="store_true",
                        help="measure only validate --session (no engines, no full-store runs)")
    args = parser.parse(argv)
    if args.scoped:
        print(json.dumps(run_scoped(args.store, args.dialect, args.scoped)))
        return 0
    if args.engine:
        engine_main(args.engine, args.store, args.dialect, args.scratch)
        return 0
    sessions = args.sessions
    load_before = load_average()
    built = build(sessions, args.seed, args.work)
    wanted = args.engines.split(",")
    measured = [] if args.session_only else [
        m for dialect in DIALECTS
        for m in measure([e for e in ENGINES_BY_DIALECT[dialect] if e in wanted]
                         + (["floor"] if "tgsparql" in wanted else [])
                         + ([BEFORE] if "tgsparql" in wanted and args.baseline else []),
                         dialect, built, args.runs, args.timeout, args.baseline)
    ]
    scoped = []
    for size in session_sizes(args):
        store = built if size == sessions else build(size, args.seed, args.work)
        scoped += [measure_scoped(store, dialect, args.samples, args.timeout, args.cli_samples,
                                  args.work, args.baseline) for dialect in DIALECTS]
    first = (session_head(args, load_before) if args.session_only
             else report(built, measured, args.runs, load_before))
    print(write(args.out, "\n".join([first, *scoped_report(scoped, measured, sessions)]), log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
