"""Remote benchmark: the same KG and questions on the embedded store, an Oxigraph server and
Virtuoso, side by side in one run; per session the wall time and the store requests, by stage.

The KG is the pipeline benchmark's (its generator, same seed), written as N-Triples and loaded
into each store the way `tgsparql load` does. The servers are started as the remote-store tests
start them (`tests/remote/conftest.py`): Oxigraph server 0.5 (`rdf12`, Graph Store Protocol
loads) and a private Virtuoso 7 (`reification`, the KG in a named graph); one that is not
installed is left out and said so. Every store call of a session is counted and put in a stage
by the opening comment of its template (grounding, retrieval, selection, recording, sources); on
a server each call is one HTTP request, which `RemoteStore.requests` confirms.

Run: python -m benchmarks.remote_bench --facts 40000 --questions 50
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pyoxigraph as ox

from benchmarks.harness import BenchParser, Load, Size, head, load_average, load_line, write
from benchmarks.pipeline_bench import DEFAULT_SEED, generate, median, p95
from tests.remote.conftest import Server, serve_oxigraph, serve_virtuoso, virtuoso_binaries
from tests.servers import oxigraph_binary
from tgsparql.asking.grounding import update_label_index
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.data.loader import load_file
from tgsparql.rdf import vocab
from tgsparql.rdf.terms import Dialect
from tgsparql.record.trace import trace
from tgsparql.stores.remote import RemoteStore
from tgsparql.stores.store import (
    DataGraph, EmbeddedStore, Solution, Store, WithTemplates, open_store,
)

SIZES = {
    "facts": Size(40_000, 2000, "KG facts"),
    "questions": Size(50, 5, "questions measured per store"),
}
"""40 k facts make about 4,000 labels: Virtuoso's SPARQL parser gives up ("memory exhausted")
on an INSERT DATA of 5,000 statements or more, which `update_label_index` sends (INDEX_BATCH)
past that."""
WARMUP_QUESTIONS = 3
TARGET_REQUESTS = 6
"""Grounding, retrieval and recording of one session together (issue 5)."""
TARGET_TRACE_REQUESTS = 1

STAGES = ("grounding", "retrieval", "selection", "recording", "sources", "other")
_READ_STAGES = {"Grounding": "grounding", "Retrieval": "retrieval", "Labels": "retrieval",
                "Selection": "selection", "Recording": "recording", "Trace": "sources",
                "Explain": "sources"}
"""A read's stage by the first word of its template's opening comment (`# Grounding: …`)."""


def stage_of(text: str, *, update: bool) -> str:
    """Every update of a session is its recording; a read is placed by its template."""
    if update:
        return "recording"
    first = text.lstrip().split("\n", 1)[0]
    word = first.lstrip("# ").split(":", 1)[0].split(",", 1)[0] if first.startswith("#") else ""
    return _READ_STAGES.get(word, "other")


class CountingStore(WithTemplates):
    """A Store that counts its calls by stage, around the store that answers them."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.dialect: Dialect = inner.dialect
        self.round_trips = inner.round_trips
        self.calls: Counter[str] = Counter()

    def select(self, query: str, *, default_graph: DataGraph = None) -> list[Solution]:
        self.calls[stage_of(query, update=False)] += 1
        return self.inner.select(query, default_graph=default_graph)

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        self.calls[stage_of(query, update=False)] += 1
        return self.inner.ask(query, default_graph=default_graph)

    def construct(self, query: str) -> list[ox.Triple]:
        self.calls[stage_of(query, update=False)] += 1
        return self.inner.construct(query)

    def update(self, update: str) -> None:
        self.calls[stage_of(update, update=True)] += 1
        self.inner.update(update)

    def bulk_load(self, source: BinaryIO, format: ox.RdfFormat, *,
                  graph: ox.NamedNode | None = None) -> None:
        self.inner.bulk_load(source, format, graph=graph)

    def close(self) -> None:
        self.inner.close()


@dataclass
class Side:
    """One store under test and what was measured on it."""

    name: str
    store: CountingStore
    load_s: float = 0.0
    wall_ns: list[int] = field(default_factory=list)
    calls: list[Counter[str]] = field(default_factory=list)
    http: list[int] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)
    not_facts: int = 0
    """Retrieved edges that are not facts of the KG as the embedded store holds it (must stay 0;
    the embedded store, like the servers, keeps numbers in canonical form: 12.50 becomes 12.5)."""
    trace_ns: list[int] = field(default_factory=list)
    trace_calls: list[int] = field(default_factory=list)
    answers: list[tuple[str, list[str]]] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def remote(self) -> RemoteStore | None:
        inner = self.store.inner
        return inner if isinstance(inner, RemoteStore) else None

    def http_requests(self) -> int:
        return self.remote.requests if self.remote is not None else 0


def load(side: Side, nt: Path) -> None:
    start = time.perf_counter()
    load_file(side.store, nt)
    update_label_index(side.store)
    side.load_s = time.perf_counter() - start


def kg_facts(embedded: Side) -> set[ox.Triple]:
    inner = embedded.store.inner
    assert isinstance(inner, EmbeddedStore)
    return {q.triple for q in inner.oxigraph.quads_for_pattern(None, None, None, ox.DefaultGraph())}


def ask(side: Side, rag: GraphRag, question: str, kg: set[ox.Triple], record: bool) -> None:
    """One session, consumed whole, then the trace of it; counted and timed if `record`."""
    side.store.calls.clear()
    http = side.http_requests()
    start = time.perf_counter_ns()
    messages = list(rag.query(question))
    wall = time.perf_counter_ns() - start
    calls, sent = Counter(side.store.calls), side.http_requests() - http
    failed = [m.error.message for m in messages if m.error is not None]
    session = next((m.explain_id for m in messages if m.explain_id), None)
    if failed or session is None:
        side.errors.append(f"{question!r}: {failed[0] if failed else 'no session'}")
        return
    side.store.calls.clear()
    start = time.perf_counter_ns()
    trace(side.store, rag.collection, session)
    trace_ns = time.perf_counter_ns() - start
    if not record:
        return
    explains = [m for m in messages if m.message_type == "explain"]
    selected = sorted(str(t.object) for t in explains[2].explain_triples
                      if t.predicate == vocab.TG_EDGE)
    side.wall_ns.append(wall)
    side.calls.append(calls)
    side.http.append(sent)
    retrieved = [t.object for t in explains[1].explain_triples
                 if t.predicate == vocab.TG_RETRIEVED_EDGE]
    side.edges.append(len(retrieved))
    side.not_facts += sum(1 for edge in retrieved if edge not in kg)
    side.trace_ns.append(trace_ns)
    side.trace_calls.append(sum(side.store.calls.values()))
    side.answers.append(("".join(m.response for m in messages), selected))
    side.questions.append(question)


@contextlib.contextmanager
def sides(work: Path, log: Callable[[str], None]) -> Iterator[tuple[list[Side], list[str]]]:
    """The embedded store and every server that is installed; the names of those that are not."""
    missing: list[str] = []
    with contextlib.ExitStack() as stack:
        found = [Side("embedded", CountingStore(open_store(work / "embedded")))]
        servers: list[tuple[str, Callable[[], Iterator[Server]] | None]] = []
        binary = oxigraph_binary()
        servers.append(("Oxigraph 0.5 server", None if binary is None else
                        lambda: serve_oxigraph(binary, work / "oxigraph", "rdf12")))
        virtuoso = virtuoso_binaries()
        (work / "virtuoso").mkdir()
        servers.append(("Virtuoso 7", None if virtuoso is None else
                        lambda: serve_virtuoso(*virtuoso, work / "virtuoso")))
        for name, serve in servers:
            if serve is None:
                missing.append(name)
                continue
            log(f"starting {name} ...")
            server = stack.enter_context(contextlib.contextmanager(serve)())
            found.append(Side(name, CountingStore(server.store(read_timeout=300))))
        for side in found:
            stack.callback(side.store.close)
        yield found, missing


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _ms(ns: float) -> float:
    return ns / 1e6


def _counts(values: Sequence[int]) -> str:
    return f"{median(values):g} ({min(values)}–{max(values)})" if values else "–"


def _times(values: Sequence[int]) -> str:
    return f"{_ms(median(values)):.1f} / {_ms(p95(values)):.1f}" if values else "–"


def report(found: list[Side], missing: list[str], facts: int, questions: int,
           load_info: str, load_before: Load) -> str:
    reference = found[0].answers

    def stage(name: str) -> Callable[[Side], str]:
        return lambda side: _counts([c[name] for c in side.calls])

    def core(side: Side) -> list[int]:
        return [c["grounding"] + c["retrieval"] + c["recording"] for c in side.calls]

    def verdict(values: list[int], target: int) -> str:
        return "pass" if values and max(values) <= target else "**FAIL**"

    rows: list[tuple[str, Callable[[Side], str]]] = [
        ("load (bulk load + label index), s", lambda side: f"{side.load_s:.1f}"),
        ("session wall time, ms p50 / p95", lambda side: _times(side.wall_ns)),
        ("requests: grounding", stage("grounding")),
        ("requests: retrieval (hops, labels)", stage("retrieval")),
        ("requests: selection (what the KG says a node is)", stage("selection")),
        ("requests: recording (see below)", stage("recording")),
        ("requests: sources of the answer", stage("sources")),
        ("requests: other", stage("other")),
        ("requests: grounding + retrieval + recording",
         lambda side: _counts(core(side))),
        (f"— target ≤ {TARGET_REQUESTS} HTTP requests every session",
         lambda side: verdict(core(side), TARGET_REQUESTS) if side.remote is not None
         else "– (no HTTP)"),
        ("requests per session, all", lambda side: _counts([sum(c.values()) for c in side.calls])),
        ("HTTP requests per session (RemoteStore.requests)",
         lambda side: _counts(side.http) if side.remote is not None else "–"),
        ("edges retrieved per session", lambda side: _counts(side.edges)),
        ("retrieved edges that are not KG facts", lambda side: str(side.not_facts)),
        ("trace of a session, ms p50 / p95", lambda side: _times(side.trace_ns)),
        ("trace of a session, requests", lambda side: _counts(side.trace_calls)),
        (f"— target {TARGET_TRACE_REQUESTS}",
         lambda side: verdict(side.trace_calls, TARGET_TRACE_REQUESTS)),
        ("answers and selected edges equal to embedded",
         lambda side: f"{sum(a == b for a, b in zip(side.answers, reference))} / "
                      f"{len(reference)}"),
        ("failed sessions", lambda side: str(len(side.errors))),
    ]
    columns = "| measure | " + " | ".join(side.name for side in found) + " |"
    lines = [
        *head("Remote benchmark", "python -m benchmarks.remote_bench"),
        load_line(load_before),
        f"- KG: {facts:,} facts of the pipeline benchmark's generator ({load_info})",
        f"- questions: {questions} measured per store (after {WARMUP_QUESTIONS} warm-up), the "
        "stores in turn for each question; offline backend; default retrieval limits",
        "- not run: " + (", ".join(missing) + " (not installed)" if missing else "none"),
        "",
        columns,
        "|---|" + "---:|" * len(found),
        *("| " + name + " | " + " | ".join(cell(side) for side in found) + " |"
          for name, cell in rows),
        "",
        "Counts are per session: median (min–max). Times are wall-clock milliseconds of the "
        "whole `GraphRag.query` (all messages consumed), and of `tgsparql.record.trace.trace` on the "
        "session just recorded. A store call is one HTTP request on a server (no retries "
        "happened when the two count rows agree); on the embedded store it is a call into "
        "pyoxigraph. Recording over HTTP is two updates: the session with its retrieval and "
        "selection, then the answer with its librarian text; the embedded store writes the "
        "session and its retrieval apart, while the LLM selects (`write_retrieval_early`), "
        "since its calls cost no round trip. Retrieval ranks each node's edges before its "
        "per-node limit, ties broken by the terms' strings (in Python for the nodes it reads "
        "whole, in `retrieve_ranked.rq` for bigger seeds), so every engine keeps the same "
        "edges; an answer that differs from the embedded store's is a defect to look into, "
        "and is listed below.",
        "",
    ]
    for side in found:
        lines += [f"- {side.name} failed: {e}" for e in side.errors[:5]]
        lines += [
            f"- {side.name} differs on {question!r}: answered {answer[:120]!r}, selected "
            f"{', '.join(sorted(set(selected) ^ set(expected[1]))) or 'the same edges'} "
            f"(symmetric difference); embedded answered {expected[0][:120]!r}"
            for question, (answer, selected), expected
            in zip(side.questions, side.answers, reference)
            if (answer, selected) != expected
        ][:5]
    return "\n".join(lines) + ("\n" if lines[-1] else "")


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def run(facts: int, questions: int, out: Path, *, seed: int = DEFAULT_SEED,
        log: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)
        ) -> str:
    with tempfile.TemporaryDirectory(prefix="tgsparql-remote-bench-") as scratch:
        work = Path(scratch)
        nt = work / "kg.nt"
        log(f"generating {facts:,} facts ...")
        _, _, labels, pool = generate(nt, facts, seed)
        if len(pool) < questions + WARMUP_QUESTIONS:
            raise SystemExit(f"the KG of {facts:,} facts yields {len(pool)} questions; "
                             f"ask for at most {len(pool) - WARMUP_QUESTIONS}")
        measured = [q.text for q in pool[:questions]]
        warmup = [q.text for q in pool[-WARMUP_QUESTIONS:]]
        with sides(work, log) as (found, missing):
            rags: dict[str, GraphRag] = {}
            for side in found:
                log(f"loading into {side.name} ...")
                load(side, nt)
                rags[side.name] = GraphRag(side.store, OfflineBackend(), index_labels=False)
            kg = kg_facts(found[0])
            log(f"measuring {questions} questions ...")
            load_before = load_average()
            for i, text in enumerate(warmup + measured):
                turn = found[i % len(found):] + found[:i % len(found)]
                for side in turn:
                    ask(side, rags[side.name], text, kg, record=i >= WARMUP_QUESTIONS)
            table = report(found, missing, facts, questions,
                           f"{facts + labels:,} triples with the labels", load_before)
    return write(out, table, log)


def main(argv: Sequence[str] | None = None) -> int:
    args = BenchParser("benchmarks.remote_bench", __doc__.split("\n\n")[0], SIZES,
                       out="remote.md", seed=DEFAULT_SEED).parse(argv)
    print(run(args.facts, args.questions, args.out, seed=args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
