"""Drift benchmark: `tgsparql drift` on S recorded sessions after a change that touches 1 % of
the facts, beside the engine's floor for what it has to read.

Builds (once, cached under the work directory) an on-disk store: a KG of F facts stated by
F / 100 documents (document → page → chunk → subgraph, each document's text in the librarian
under its content-addressed IRI, ingested before every session), and S sessions as the current
templates write them, each selecting K facts (a fact's popularity follows a Zipf law, as
questions do) with the documents that state them (tg:factDocument, tg:sourceDocument).
Records are generated as TriG text and bulk loaded, like benchmarks/serve_bench.py does.

Each run copies the cached store, deletes 1 % of the facts (`--change`) and ingests 1 % of the
documents again after every session (their extraction activity's time moved past the last
session), then times, side by side in turn and repeated: `find_drift` (what `tgsparql drift`
runs, its three queries and the labels), the saved query stale_sessions over every session
(a `limit` of 1,000,000, every session: it then lists what drift lists), and three floors of
the engine — one scan of tg:edge (every edge selection's reference read once), the distinct
selected edges (that scan and a DISTINCT), and the lookup of every distinct selected edge in
the KG (`drift_edges`' first step alone, which drift cannot do without) — and the check drift
does not do: every edge selection looked up in the KG (one lookup per session's edge). Medians
over the repeats; every ratio is taken within one run.

Run: python -m benchmarks.drift_bench --sessions 100000
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import random
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from benchmarks.harness import (
    BenchParser, Size, bulk_loaded_store, head, load_average, load_line, write,
)
from tgsparql.rdf import vocab
from tgsparql.rdf.templates import Templates
from tgsparql.record.drift import find_drift
from tgsparql.serve.saved import saved_queries
from tgsparql.stores.store import EmbeddedStore

SIZES = {
    "sessions": Size(100_000, 200, "recorded sessions in the store"),
    "facts": Size(100_000, 2_000, "facts of the KG (a document states 100)"),
    "selected": Size(5, 5, "edges each session selects"),
    "repeats": Size(5, 1, "runs of each measurement, of which the median is kept"),
}
FORMAT = 2
"""The cached store's shape; a store of another is built again (2: each day says it holds
sessions, tg:date, as the templates write it)."""
FACTS_PER_DOCUMENT = 10 * 10  # chunks of 10 facts
ZIPF = 1.0
"""The exponent of the facts' popularity: the r-th most asked-about fact is selected ~1 / r."""
TG = vocab.TG


def store_directory(work: Path, args: argparse.Namespace) -> Path:
    return work / (f"drift-{args.sessions}-{args.facts}-{args.selected}-seed{args.seed}"
                   f"-v{FORMAT}")


def fact(n: int, facts: int) -> str:
    return (f"<http://example.org/e/E{n}> <http://example.org/p/P{n % 20}> "
            f"<http://example.org/e/E{(n * 7 + 1) % facts}>")


def document_text(d: int) -> str:
    return f"Document {d}: " + " ".join(f"sentence {d}.{n}." for n in range(FACTS_PER_DOCUMENT))


def document_iri(d: int) -> str:
    return "urn:trustgraph:doc:" + hashlib.sha256(document_text(d).encode("utf-8")).hexdigest()


def generate(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """TriG for the KG, its provenance and texts, and the sessions; returns counts."""
    rng = random.Random(args.seed)
    documents = max(1, args.facts // FACTS_PER_DOCUMENT)
    facts = documents * FACTS_PER_DOCUMENT
    cumulative = list(itertools.accumulate(1 / (rank + 1) ** ZIPF for rank in range(facts)))
    popularity = list(range(facts))
    rng.shuffle(popularity)
    start = 1_700_000_000
    with path.open("w", encoding="utf-8") as out:
        out.write(f"@prefix tg: <{TG}> .\n@prefix prov: <{vocab.PROV}> .\n"
                  f"@prefix rdfs: <{vocab.RDFS}> .\n@prefix dc: <http://purl.org/dc/elements/1.1/> .\n"
                  f"@prefix xsd: <{vocab.XSD}> .\n")
        out.write("{\n" + "".join(f"  {fact(n, facts)} .\n" for n in range(facts)) + "}\n")
        out.write("GRAPH <urn:graph:source> {\n")
        for d in range(documents):
            doc = f"<{document_iri(d)}>"
            out.write(f"  {doc} a prov:Entity, tg:Document ; dc:title \"Document {d}\" .\n"
                      f"  <urn:activity:bench{d}> a prov:Activity ; prov:used {doc} ; "
                      f"prov:startedAtTime \"{_stamp(start - 86400)}\"^^xsd:dateTime .\n"
                      f"  <urn:page:bench{d}> a prov:Entity, tg:Page ; prov:wasDerivedFrom {doc} ;"
                      " tg:pageNumber 1 .\n")
            for c in range(FACTS_PER_DOCUMENT // 10):
                base = d * FACTS_PER_DOCUMENT + c * 10
                contained = " , ".join(f"<<( {fact(base + f, facts)} )>>" for f in range(10))
                out.write(f"  <urn:chunk:bench{d}-{c}> a prov:Entity, tg:Chunk ; "
                          f"prov:wasDerivedFrom <urn:page:bench{d}> ; tg:chunkIndex {c} .\n"
                          f"  <https://trustgraph.ai/subgraph/bench{d}-{c}> a prov:Entity, "
                          f"tg:Subgraph ; prov:wasDerivedFrom <urn:chunk:bench{d}-{c}> ; "
                          f"tg:contains {contained} .\n")
        out.write("}\nGRAPH <urn:graph:library> {\n")
        for d in range(documents):
            text = document_text(d)
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            out.write(f"  <{document_iri(d)}> tg:content \"{text}\" ; tg:mimeType \"text/plain\" ; "
                      f"tg:contentSha256 \"{digest}\" ; dc:title \"Document {d}\" .\n")
        out.write("}\nGRAPH <urn:graph:explainability> {\n")
        for s in range(args.sessions):
            u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            began = start + s * 10
            chosen = sorted({popularity[i] for i in
                             rng.choices(range(facts), cum_weights=cumulative, k=args.selected)})
            docs = sorted({n // FACTS_PER_DOCUMENT for n in chosen})
            session = f"<urn:trustgraph:session:{u}>"
            day = f"\"{_stamp(began)[:10]}\"^^xsd:date"
            out.write(f"  {session} a prov:Activity ; prov:startedAtTime "
                      f"\"{_stamp(began)}\"^^xsd:dateTime ; tg:day {day} ; "
                      f"tg:query \"question {s}\" ; tg:status \"complete\" .\n"
                      f"  <urn:trustgraph:day:{_stamp(began)[:10]}> tg:date {day} .\n"
                      f"  <urn:trustgraph:prov:retrieval:{u}> a prov:Entity ; "
                      f"prov:wasGeneratedBy {session} ; tg:edgeCount 30 .\n")
            edges = " , ".join(f"<urn:trustgraph:prov:edge:{u}:{i}>" for i in range(len(chosen)))
            sources = " , ".join(f"<{document_iri(d)}>" for d in docs)
            out.write(f"  <urn:trustgraph:prov:selection:{u}> a prov:Entity ; "
                      f"prov:wasDerivedFrom <urn:trustgraph:prov:retrieval:{u}> ; "
                      f"tg:selectedEdge {edges} ; tg:selectedEdgeCount {len(chosen)} ; "
                      f"tg:sourceDocument {sources} ; tg:sourceDocumentCount {len(docs)} .\n")
            for i, n in enumerate(chosen):
                out.write(f"  <urn:trustgraph:prov:edge:{u}:{i}> a tg:EdgeSelection ; "
                          f"tg:edge <<( {fact(n, facts)} )>> ; tg:reasoning \"matches\" ; "
                          f"tg:factDocument <{document_iri(n // FACTS_PER_DOCUMENT)}> .\n")
        out.write("}\n")
    return {"sessions": args.sessions, "facts": facts, "documents": documents,
            "last_session": _stamp(start + (args.sessions - 1) * 10)}


def _stamp(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def build(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The cached store (built if missing) and its build record."""
    directory = store_directory(args.work, args)
    record = directory / "build.json"
    if record.exists():
        print(f"using the cached store {directory}", file=sys.stderr)
        return directory / "store", json.loads(record.read_text())
    info = bulk_loaded_store(directory, lambda trig: generate(trig, args))
    record.write_text(json.dumps(info, indent=1))
    return directory / "store", info


def changed_copy(source: Path, target: Path, info: dict[str, Any], seed: int,
                 share: float) -> dict[str, int]:
    """A copy of the store with `share` of the facts deleted and of the documents ingested
    again after the last session; what changed."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    rng = random.Random(seed + 1)
    facts, documents = info["facts"], info["documents"]
    gone = rng.sample(range(facts), max(1, round(facts * share)))
    again = rng.sample(range(documents), max(1, round(documents * share)))
    later = f"\"{info['last_session'][:-1]}.5Z\"^^<{vocab.XSD}dateTime>"
    store = ox.Store(str(target))
    store.update("DELETE DATA { " + " ".join(f"{fact(n, facts)} ." for n in gone) + " }")
    for d in again:
        store.update(f"DELETE {{ GRAPH <urn:graph:source> {{ ?a <{vocab.PROV}startedAtTime> ?t }} }}"
                     f" INSERT {{ GRAPH <urn:graph:source> {{ ?a <{vocab.PROV}startedAtTime> "
                     f"{later} }} }} WHERE {{ GRAPH <urn:graph:source> {{ "
                     f"?a <{vocab.PROV}used> <{document_iri(d)}> ; "
                     f"<{vocab.PROV}startedAtTime> ?t }} }}")
    store.flush()
    del store
    return {"facts_deleted": len(gone), "documents_reingested": len(again)}


FLOORS = {
    "scan of tg:edge": f"""SELECT (COUNT(*) AS ?n) WHERE {{
        GRAPH <urn:graph:explainability> {{ ?edgeSelection <{TG}edge> ?edge }} }}""",
    "distinct selected edges": f"""SELECT (COUNT(*) AS ?n) WHERE {{ SELECT DISTINCT ?edge WHERE {{
        GRAPH <urn:graph:explainability> {{ ?edgeSelection <{TG}edge> ?edge }} }} }}""",
    "every distinct edge looked up": f"""SELECT (COUNT(*) AS ?n) WHERE {{
        {{ SELECT DISTINCT ?edge WHERE {{
            GRAPH <urn:graph:explainability> {{ ?edgeSelection <{TG}edge> ?edge }} }} }}
        BIND(SUBJECT(?edge) AS ?s) BIND(PREDICATE(?edge) AS ?p) BIND(OBJECT(?edge) AS ?o)
        FILTER NOT EXISTS {{ ?s ?p ?o }} }}""",
    "every edge selection looked up": f"""SELECT (COUNT(*) AS ?n) WHERE {{
        GRAPH <urn:graph:explainability> {{ ?edgeSelection <{TG}edge> ?edge }}
        BIND(SUBJECT(?edge) AS ?s) BIND(PREDICATE(?edge) AS ?p) BIND(OBJECT(?edge) AS ?o)
        FILTER NOT EXISTS {{ ?s ?p ?o }} }}""",
}
"""What the engine takes to read what drift has to read (the first three), and the check drift
does not make (the last): rendered SPARQL, each counting its rows."""


def run(args: argparse.Namespace) -> str:
    source, info = build(args)
    target = store_directory(args.work, args) / "changed"
    info.update(changed_copy(source, target, info, args.seed, args.change))
    before = load_average()
    store = EmbeddedStore(target, read_only=True)
    saved = saved_queries()["stale_sessions"]
    stale_text = Templates().render(saved.template, **saved.bind({"limit": ["1000000"]}))
    counts: dict[str, int] = {}

    def drift() -> None:
        found = find_drift(store, vocab.DEFAULT_COLLECTION)
        counts.update(sessions=len(found.sessions), stale_edges=found.stale_edges,
                      stale_sources=found.stale_sources, documents=len(found.documents))

    def stale() -> None:
        counts["stale_sessions rows"] = len(store.select(stale_text))

    def floor(name: str) -> Callable[[], None]:
        def measure() -> None:
            counts[name] = int(store.select(FLOORS[name])[0]["n"].value)
        return measure

    measured: dict[str, Callable[[], None]] = {
        "tgsparql drift (find_drift)": drift, "stale_sessions (saved query)": stale,
        **{name: floor(name) for name in FLOORS}}
    times: dict[str, list[float]] = {name: [] for name in measured}
    for _ in range(args.repeats + 1):  # the first round warms the store's caches, not timed
        for name, measure in measured.items():
            began = time.perf_counter()
            measure()
            times[name].append(time.perf_counter() - began)
    store.close()
    medians = {name: statistics.median(values[1:]) for name, values in times.items()}
    return report(args, info, counts, medians, before)


def report(args: argparse.Namespace, info: dict[str, Any], counts: dict[str, int],
           medians: dict[str, float], before: tuple[float, float, float]) -> str:
    drift_s = medians["tgsparql drift (find_drift)"]
    edge_selections = counts["scan of tg:edge"]
    out = [*head("Drift benchmark", "python -m benchmarks.drift_bench"), "",
           f"- store: {info['sessions']:,} sessions selecting {edge_selections:,} edges "
           f"({counts['distinct selected edges']:,} distinct), {info['facts']:,} facts, "
           f"{info['documents']:,} documents, {info['quads']:,} quads",
           f"- change: {info['facts_deleted']:,} facts deleted, "
           f"{info['documents_reingested']:,} documents ingested again after every session",
           f"- drifted: {counts['sessions']:,} sessions, {counts['stale_edges']:,} stale edges, "
           f"{counts['stale_sources']:,} stale sources of {counts['documents']:,} documents "
           f"(stale_sessions: {counts['stale_sessions rows']:,} rows)",
           load_line(before),
           f"- target: drift in at most 2 s: **{'pass' if drift_s <= 2 else 'FAIL'}** "
           f"({drift_s:.2f} s)",
           "",
           f"Medians of {args.repeats} runs after one warm-up, each measurement in turn, on a "
           "read-only copy of the changed store. Floors: what the engine takes for one scan of "
           "tg:edge, for the distinct selected edges, and for those looked up in the KG (drift's "
           "own first step); the last row is the check drift does not make, every edge "
           "selection looked up.",
           "",
           "| measured | median ms | rows | drift / this |",
           "|---|---|---|---|"]
    for name, seconds in medians.items():
        rows = counts.get(name, counts.get("sessions") if "find_drift" in name
                          else counts.get("stale_sessions rows"))
        ratio = drift_s / seconds if seconds > 0 else math.nan
        out.append(f"| {name} | {seconds * 1000:.3f} | {rows:,} | {ratio:.2f} |")
    return write(args.out, "\n".join(out) + "\n")


def main() -> None:
    parser = BenchParser("benchmarks.drift_bench", __doc__.split("\n\n")[0], SIZES,
                         out="drift.md", seed=11, work="built stores")
    parser.add_argument("--change", type=float, default=0.01,
                        help="the share of facts deleted and of documents ingested again (0.01)")
    print(run(parser.parse()))


if __name__ == "__main__":
    main()
