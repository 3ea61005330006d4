"""Pipeline benchmark: grounding, retrieval, recording and the whole GraphRAG query on a large KG.

Builds (once, cached under the work directory) a synthetic knowledge graph of N facts with
rdfs:labels in an on-disk pyoxigraph store, then measures per question, with the offline
backend and the package's own functions:

- grounding (`tgsparql.asking.grounding.ground`),
- subgraph retrieval (`tgsparql.asking.retrieval.retrieve_subgraph`) and label fetch
  (`tgsparql.asking.labels.get_labelgraph`); side by side with retrieval by the old unranked query
  (`UNRANKED_QUERY`, kept here only as the baseline: each node's first `triple_limit` edges in
  whatever order the store returns them), alternating which runs first, for the cost of the
  ranking; and apart, on the questions that name one of the two hubs (entities given
  n_facts/100 and n_facts/10 edges: 10 000 and 100 000 at 1 M facts),
- recording: every write of one session, as the pipeline makes them (`Recorder.write` of
  session + retrieval, of the selection, and of the librarian's text + the answer),
- the whole pipeline (`GraphRag.query`, consumed fully) with recording on and off, run
  question by question in alternating order so the ratio is measured under the same conditions.

Run: python -m benchmarks.pipeline_bench --facts 1000000 --questions 200
"""

from __future__ import annotations

import cProfile
import datetime as dt
import hashlib
import json
import math
import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pyoxigraph as ox

from benchmarks.harness import BenchParser, Size, head, load_average, utc_now, write
from tgsparql.asking.grounding import (
    INDEX_VERSION, STOPWORDS, Grounding, ground, update_label_index,
)
from tgsparql.asking.labels import get_labelgraph
from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.llm.base import SelectionRequest
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.provenance import Recorder, now
from tgsparql.asking.retrieval import (
    RANK_WHOLE_UP_TO, RankedQuery, RetrievalLimits, retrieve_subgraph, walk,
)
from tgsparql.asking.selection import parse_selection
from tgsparql.asking.sources import facts_sources
from tgsparql.data.loader import load_file
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.rdf.templates import Templates
from tgsparql.rdf.text import normalize_label
from tgsparql.stores.store import EmbeddedStore, WithTemplates, open_store

SIZES = {"facts": Size(1_000_000, 2000, "KG facts"),
         "questions": Size(200, 5, "questions measured")}
DEFAULT_SEED = 20240601
WARMUP_QUESTIONS = 5
BUILD_FORMAT = 4
"""Bumped whenever the generator or the label index changes, so an old cached store is not
reused (2: the label index holds label words for name grounding; 3: hubs, and stems in the
index; 4: an agent noun's stem is its verb's)."""

KG = "http://example.org/kg/"
ENTITY = KG + "entity/"
PROP = KG + "prop/"
CLASS = KG + "class/"
RDF_TYPE = vocab.RDF + "type"
RDFS_LABEL = vocab.RDFS + "label"
XSD = vocab.XSD

BENCH_COLLECTION = vocab.Collection("benchmark")
"""The collection the recording measurement writes to, apart from the pipeline's."""
LITE_COLLECTION = vocab.Collection("benchmark-lite")
"""The same writes with `record_retrieved_edges=False`."""
LITE_PIPELINE_COLLECTION = vocab.Collection("explainability-lite")
FLOOR_COLLECTION = vocab.Collection("benchmark-floor")
"""The same writes again, as quads handed to pyoxigraph's own `Store.extend`."""

TARGET_RECORDING_MS = 3.0
TARGET_RETRIEVAL_MS = 15.0
TARGET_OVERHEAD = 1.10

# ---------------------------------------------------------------------------------------------
# The synthetic knowledge graph
# ---------------------------------------------------------------------------------------------

ENTITY_PREDICATES = [
    "place of birth", "place of death", "employer", "member of", "located in",
    "capital of", "spouse", "sibling", "parent", "child", "student of", "doctoral advisor",
    "founded by", "headquarters location", "owned by", "subsidiary of", "award received",
    "nominated for", "notable work", "author", "director", "field of work", "genre",
    "publisher", "influenced by", "twinned with", "shares border with", "part of",
    "successor", "predecessor", "country of citizenship", "educated at", "mouth of the watercourse",
    "tributary", "sponsor", "partner", "manufacturer", "architect", "conferred by", "residence",
]
LITERAL_PREDICATES = [
    ("date of birth", "date"), ("date of death", "date"), ("inception", "date"),
    ("population", "integer"), ("height", "decimal"), ("area", "decimal"),
    ("nickname", "string"), ("motto", "string"), ("number of employees", "integer"),
    ("official website", "uri"),
]
LITERAL_SHARE = 0.15
"""Share of the non-type facts whose object is a literal."""

KINDS = [
    # class label, share of entities, label patterns ({w} is a generated word)
    ("Human", 0.50, ["{w} {w}", "{w} {w} {w}"]),
    ("Settlement", 0.12, ["{w}", "Port {w}", "{w} Falls", "{w} Springs", "New {w}"]),
    ("Company", 0.10, ["{w} Industries", "{w} Systems", "{w} {w} Holdings", "{w} Works"]),
    ("Creative Work", 0.13, ["The {w} of {w}", "{w} {w}", "Songs of {w}"]),
    ("University", 0.03, ["University of {w}", "{w} Institute of Technology"]),
    ("Prize", 0.02, ["{w} Prize", "{w} Medal"]),
    ("River", 0.04, ["{w} River"]),
    ("Region", 0.06, ["{w} Province", "{w} Valley"]),
]

ONSETS = "b c d f g h j k l m n p r s t v z br dr gr kr pl st tr th sh".split()
VOWELS = "a e i o u a e i o ai ei ou ia".split()
CODAS = ["", "", "", "n", "r", "s", "l", "th", "nd", "rk", "m"]
HUB_SHARES = (100, 10)
"""Two hubs of n_facts/100 and n_facts/10 edges, out of the facts' budget."""
HUB_PREDICATES = (3, 4, 27)
""""member of", "located in", "part of": what a hub's many edges say."""
HUB_FACTS = 5
"""Facts each hub has by predicates it uses once, each asked about by one question."""
HUB_QUESTION_EVERY = 10
"""A hub question every this many questions of the pool."""
HUB_EXPONENT = 3.0
"""Entity rank = E·u^3 for uniform u: about 10 % of edge ends fall on the top 0.1 % of
entities, so a few hubs have thousands of edges while most entities have a handful."""


@dataclass
class Question:
    text: str
    kind: str
    mentions: list[str]


@dataclass
class BuildInfo:
    facts: int
    entities: int
    predicates: int
    labels: int
    quads_loaded: int
    labels_indexed: int
    generate_s: float
    load_s: float
    index_s: float
    built_at: str
    cached: bool = False
    questions: list[Question] = field(default_factory=list)

    @property
    def build_s(self) -> float:
        return self.generate_s + self.load_s + self.index_s


def _banned_words() -> set[str]:
    text = " ".join(ENTITY_PREDICATES + [p for p, _ in LITERAL_PREDICATES])
    text += " " + " ".join(k for k, _, _ in KINDS)
    text += " " + " ".join(" ".join(patterns) for _, _, patterns in KINDS)
    text += " what who whose is the of does have and connected related how"
    return set(normalize_label(text).split()) | set(STOPWORDS)


class _Words:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.banned = _banned_words()

    def word(self) -> str:
        rng = self.rng
        while True:
            syllables = rng.choice((2, 2, 2, 3))
            text = "".join(
                rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(syllables)
            ) + rng.choice(CODAS)
            if len(text) >= 4 and text not in self.banned:
                return text.capitalize()


def _entity_label(words: _Words, patterns: Sequence[str], taken: set[str]) -> str:
    rng = words.rng
    for _ in range(50):
        pattern = rng.choice(patterns)
        label = pattern
        while "{w}" in label:
            label = label.replace("{w}", words.word(), 1)
        key = normalize_label(label)
        if key not in taken:
            taken.add(key)
            return label
    return label  # a homonym now and then, as in real KGs


def _literal(rng: random.Random, kind: str, words: _Words) -> str:
    if kind == "date":
        day = dt.date(1700, 1, 1) + dt.timedelta(days=rng.randrange(115_000))
        return f'"{day.isoformat()}"^^<{XSD}date>'
    if kind == "integer":
        return f'"{int(10 ** rng.uniform(1, 7))}"^^<{XSD}integer>'
    if kind == "decimal":
        return f'"{rng.uniform(0.5, 5000):.2f}"^^<{XSD}decimal>'
    if kind == "uri":
        return f'"https://{words.word().lower()}.example"^^<{XSD}anyURI>'
    return f'"{words.word()} the {words.word()}"@en'


def generate(
    path: Path, n_facts: int, seed: int
) -> tuple[int, int, int, list[Question]]:
    """Write the KG as N-Triples; returns (entities, predicates, labels, question pool)."""
    rng = random.Random(seed)
    words = _Words(rng)
    n_entities = max(20, n_facts // 10)
    if n_facts < 2 * n_entities:
        raise ValueError(f"--facts must be at least {2 * n_entities}")
    shares = [share for _, share, _ in KINDS]
    kind_of = rng.choices(range(len(KINDS)), weights=shares, k=n_entities)
    taken: set[str] = set()
    labels = [_entity_label(words, KINDS[k][2], taken) for k in kind_of]
    # Hubs are spread over the id space and over the kinds.
    hub_order = list(range(n_entities))
    rng.shuffle(hub_order)

    def pick() -> int:
        return hub_order[min(n_entities - 1, int(n_entities * rng.random() ** HUB_EXPONENT))]

    n_ent_preds = len(ENTITY_PREDICATES)
    n_preds = n_ent_preds + len(LITERAL_PREDICATES)
    pred_weights = [1.0 / (1 + i) ** 0.8 for i in range(n_ent_preds)]
    lit_weights = [1.0 / (1 + i) ** 0.5 for i in range(len(LITERAL_PREDICATES))]
    pred_labels = ENTITY_PREDICATES + [label for label, _ in LITERAL_PREDICATES]

    reservoir_size = min(20_000, n_facts // 2)
    reservoir: list[tuple[int, int, int | None]] = []
    first_out: list[tuple[int, int] | None] = [None] * n_entities
    seen: set[int] = set()
    hub_lines, hub_questions = _hubs(rng, n_facts, n_entities, n_preds, labels, pred_labels, seen)
    relational = n_facts - n_entities - len(hub_lines)
    written = 0

    with path.open("w", encoding="ascii", newline="\n") as out:
        write = out.write
        for p, label in enumerate(pred_labels):
            write(f'<{PROP}P{p}> <{RDFS_LABEL}> "{label}"@en .\n')
        for k, (name, _, _) in enumerate(KINDS):
            write(f'<{CLASS}C{k}> <{RDFS_LABEL}> "{name}"@en .\n')
        for e in range(n_entities):
            write(f'<{ENTITY}E{e}> <{RDFS_LABEL}> "{labels[e]}"@en .\n')
            write(f"<{ENTITY}E{e}> <{RDF_TYPE}> <{CLASS}C{kind_of[e]}> .\n")
        write("".join(hub_lines))
        chunk: list[str] = []
        while written < relational:
            s = pick()
            if rng.random() < LITERAL_SHARE:
                p = n_ent_preds + rng.choices(range(len(LITERAL_PREDICATES)), lit_weights)[0]
                key = (s * n_preds + p) * (n_entities + 1) + n_entities
                if key in seen:
                    continue
                obj_text = _literal(rng, LITERAL_PREDICATES[p - n_ent_preds][1], words)
                o: int | None = None
            else:
                p = rng.choices(range(n_ent_preds), pred_weights)[0]
                o = pick()
                key = (s * n_preds + p) * (n_entities + 1) + o
                if o == s or key in seen:
                    continue
                obj_text = f"<{ENTITY}E{o}>"
                if first_out[s] is None:
                    first_out[s] = (p, o)
            seen.add(key)
            chunk.append(f"<{ENTITY}E{s}> <{PROP}P{p}> {obj_text} .\n")
            if len(chunk) >= 10_000:
                write("".join(chunk))
                chunk.clear()
            if len(reservoir) < reservoir_size:
                reservoir.append((s, p, o))
            else:
                slot = rng.randrange(written + 1)
                if slot < reservoir_size:
                    reservoir[slot] = (s, p, o)
            written += 1
        write("".join(chunk))

    questions = _questions(rng, reservoir, first_out, labels, pred_labels)
    for i, question in enumerate(hub_questions):
        questions.insert(i * HUB_QUESTION_EVERY, question)
    n_labels = n_entities + n_preds + len(KINDS)
    return n_entities, n_preds, n_labels, questions


def _hubs(
    rng: random.Random,
    n_facts: int,
    n_entities: int,
    n_preds: int,
    labels: list[str],
    pred_labels: list[str],
    seen: set[int],
) -> tuple[list[str], list[Question]]:
    """The hubs' edges as N-Triples lines (their keys added to `seen`), and a question about
    each hub fact: the entities are the last ones, which the power law gives few edges of
    their own."""
    lines, questions = [], []
    rare = [p for p in range(len(ENTITY_PREDICATES)) if p not in HUB_PREDICATES][-HUB_FACTS:]
    for h, share in enumerate(HUB_SHARES):
        hub = n_entities - 1 - h
        others = [o for o in range(n_entities - len(HUB_SHARES))]
        slots = len(HUB_PREDICATES) * len(others)
        edges = min(n_facts // share, slots - HUB_FACTS)
        chosen = rng.sample(range(slots), edges + HUB_FACTS)
        for index, slot in enumerate(chosen):
            o = others[slot % len(others)]
            p = rare[index - edges] if index >= edges else HUB_PREDICATES[slot // len(others)]
            key = (hub * n_preds + p) * (n_entities + 1) + o
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"<{ENTITY}E{hub}> <{PROP}P{p}> <{ENTITY}E{o}> .\n")
            if index >= edges:
                questions.append(Question(
                    f"What is the {pred_labels[p]} of {labels[hub]}?", "hub", [labels[hub]]
                ))
    return lines, questions


def _questions(
    rng: random.Random,
    facts: list[tuple[int, int, int | None]],
    first_out: list[tuple[int, int] | None],
    labels: list[str],
    pred_labels: list[str],
) -> list[Question]:
    """Questions naming one or two entities and one or two predicates of sampled facts."""
    pool: dict[str, Question] = {}
    for s, p, o in facts:
        kind = rng.choices(("about", "whose", "is", "hop"), (35, 15, 25, 25))[0]
        if kind in ("whose", "is", "hop") and o is None:
            kind = "about"
        if kind == "hop" and (first_out[o] is None or first_out[o][1] == s):
            kind = "is"
        subject, predicate = labels[s], pred_labels[p]
        if kind == "about":
            question = Question(f"What is the {predicate} of {subject}?", kind, [subject])
        elif kind == "whose":
            question = Question(f"Whose {predicate} is {labels[o]}?", kind, [labels[o]])
        elif kind == "is":
            question = Question(
                f"Is {labels[o]} the {predicate} of {subject}?", kind, [labels[o], subject]
            )
        else:
            second = pred_labels[first_out[o][0]]
            question = Question(
                f"What is the {second} of the {predicate} of {subject}?", kind, [subject]
            )
        pool.setdefault(question.text, question)
    questions = list(pool.values())
    rng.shuffle(questions)
    return questions


def kg_directory(work: Path, n_facts: int, seed: int) -> Path:
    """The cache folder of the KG of (n_facts, seed): its store in `store`. Named by the
    label index's version too: a store indexed by an older one is built again, not reused."""
    return work / f"kg-{n_facts}-seed{seed}-v{BUILD_FORMAT}-index{INDEX_VERSION}"


def build(n_facts: int, work: Path, seed: int, log: Callable[[str], None]) -> BuildInfo:
    """The cached store for (n_facts, seed), built first if it is not there yet."""
    directory = kg_directory(work, n_facts, seed)
    meta_path = directory / "build.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta["questions"] = [Question(**q) for q in meta["questions"]]
        log(f"using the cached store in {directory}")
        return BuildInfo(**meta, cached=True)
    if directory.exists():
        shutil.rmtree(directory)  # an interrupted build
    directory.mkdir(parents=True)
    nt = directory / "kg.nt"

    log(f"generating {n_facts:,} facts ...")
    t0 = time.perf_counter_ns()
    n_entities, n_preds, n_labels, questions = generate(nt, n_facts, seed)
    t1 = time.perf_counter_ns()
    log(f"  {_s(t1 - t0):.1f} s; loading into {directory / 'store'} ...")
    store = open_store(directory / "store")
    quads = load_file(store, nt)
    t2 = time.perf_counter_ns()
    log(f"  {_s(t2 - t1):.1f} s; indexing labels ...")
    indexed = update_label_index(store)
    t3 = time.perf_counter_ns()
    log(f"  {_s(t3 - t2):.1f} s")
    store.close()
    del store
    nt.unlink()

    info = BuildInfo(
        facts=n_facts,
        entities=n_entities,
        predicates=n_preds,
        labels=n_labels,
        quads_loaded=quads,
        labels_indexed=indexed,
        generate_s=_s(t1 - t0),
        load_s=_s(t2 - t1),
        index_s=_s(t3 - t2),
        built_at=utc_now(),
        questions=questions,
    )
    meta = {k: v for k, v in info.__dict__.items() if k != "cached"}
    meta["questions"] = [q.__dict__ for q in questions]
    meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return info


# ---------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------

T = TypeVar("T")


def _timed(samples: list[int], step: Callable[[], T], cpu: list[int] | None = None) -> T:
    """Runs the step, appending its wall time to `samples` (and the thread's CPU time to
    `cpu`: what the step cost, whatever else the machine was doing)."""
    start_cpu = time.thread_time_ns()
    start = time.perf_counter_ns()
    result = step()
    samples.append(time.perf_counter_ns() - start)
    if cpu is not None:
        cpu.append(time.thread_time_ns() - start_cpu)
    return result


UNRANKED_QUERY = """
SELECT ?node ?s ?p ?o WHERE {{
{blocks}
}}"""
UNRANKED_NODE = """  {{
    SELECT ?node ?s ?p ?o WHERE {{
      {{ VALUES ?s {{ {node} }} ?s ?p ?o FILTER(!isBlank(?o)) }}
      UNION
      {{ VALUES ?o {{ {node} }} ?s ?p ?o FILTER(!isBlank(?s)) }}
      {excluded}
      BIND({node} AS ?node)
    }}
    LIMIT {limit}
  }}"""
"""The retrieval query before ranking (as a SELECT that names each edge's node), kept only as
this benchmark's baseline: each node's first `triple_limit` edges in the store's order."""


@dataclass
class UnrankedQuery:
    """The old hop query, for `tgsparql.asking.retrieval.walk`: nodes' edges as the store returns
    them, taken in term order."""

    store: EmbeddedStore
    excluded: Sequence[ox.NamedNode]
    seeds: Sequence[ox.NamedNode]
    candidates: dict[ox.NamedNode, int] = field(default_factory=dict)
    predicates: dict[object, list[str]] = field(default_factory=dict)
    """None: the old walk ranked nothing by the question."""

    def ranked(
        self, nodes: Sequence[ox.NamedNode], per_node: int
    ) -> dict[ox.NamedNode, list[ox.Triple]]:
        excluded = (
            f"FILTER(?p NOT IN ({', '.join(str(p) for p in self.excluded)}))"
            if self.excluded else ""
        )
        blocks = "\n  UNION\n".join(
            UNRANKED_NODE.format(node=str(node), excluded=excluded, limit=int(per_node))
            for node in nodes
        )
        found: dict[ox.NamedNode, list[ox.Triple]] = {node: [] for node in nodes}
        for row in self.store.select(UNRANKED_QUERY.format(blocks=blocks)):
            node = row["node"]
            if node in found:
                found[node].append(ox.Triple(row["s"], row["p"], row["o"]))  # type: ignore[arg-type]
        return {node: sorted(edges, key=str) for node, edges in found.items()}


FLOOR_QUERY = """SELECT ?s ?p ?o WHERE {{
{blocks}
}}"""
FLOOR_NODE = """  {{ SELECT ?s ?p ?o WHERE {{ {{ {node} ?p ?o }} UNION {{ ?s ?p {node} }} }} LIMIT {limit} }}"""
"""The retrieval floor: per hop one request that reads, for each node, as many of its edges as
the ranked walk kept there, in the store's order, each row giving only what it must (the
neighbour and the predicate). No walk that returns those edges reads less."""
COUNT_NODE = """  {{ SELECT (COUNT(*) AS ?n) WHERE {{ SELECT ?p WHERE {{ {{ {node} ?p ?o }} UNION {{ ?s ?p {node} }} }} LIMIT {limit} }} }}"""
WHOLE_NODE = """  {{ SELECT ?s ?p ?o WHERE {{ {{ {node} ?p ?o }} UNION {{ ?s ?p {node} }} }} }}"""
"""The ranking floor: per hop one request that counts every frontier node's edges up to
RANK_WHOLE_UP_TO + 1 and reads all the edges of those with at most RANK_WHOLE_UP_TO (which are
known beforehand, untimed), rows iterated and nothing else: what ranking must read before it
can choose (a node is ranked from all of its edges; a bigger one needs that count to be known
as bigger). A bigger node's matches, which ranking reads besides, are left out, so the true
least is higher."""
REFERENCE = "pipeline-subgraphs.json"
"""Beside the results table: per question, a digest of the ranked subgraph as retrieval
returned it when the file was written (`--write-reference`), for this KG. A faster retrieval
must return the same edges in the same order."""


@dataclass
class _Hops:
    """The ranked walk's query, remembering the frontier of each hop it is asked for."""

    query: RankedQuery
    frontiers: list[list[ox.NamedNode]] = field(default_factory=list)

    @property
    def seeds(self) -> Sequence[ox.NamedNode]:
        return self.query.seeds

    @property
    def candidates(self) -> dict[ox.NamedNode, int]:
        return self.query.candidates

    @property
    def predicates(self) -> dict[object, list[str]]:
        return self.query.predicates

    def ranked(
        self, nodes: Sequence[ox.NamedNode], per_node: int
    ) -> dict[ox.NamedNode, list[ox.Triple]]:
        if not self.frontiers or nodes[0] not in self.frontiers[-1]:
            self.frontiers.append(list(nodes))
        return self.query.ranked(nodes, per_node)


def floor_queries(
    store: EmbeddedStore, seeds: Sequence[ox.NamedNode],
    limits: RetrievalLimits, excluded: Sequence[ox.NamedNode], stems: Sequence[str],
) -> tuple[list[str], list[str]]:
    """The floor's requests for the walk ranked retrieval makes (each kept edge counted at the
    first node of the first hop it touches), and the ranking floor's (every node of each hop's
    frontier)."""
    hops = _Hops(RankedQuery(store, sorted(excluded, key=str), sorted(set(stems)),
                             list(dict.fromkeys(seeds)), limits.triple_limit))
    edges = walk(hops, limits).edges
    kept: list[dict[ox.NamedNode, int]] = [dict.fromkeys(f, 0) for f in hops.frontiers]
    for edge in edges:
        for counts in kept:
            node = next((n for n in (edge.subject, edge.object) if n in counts), None)
            if node is not None:
                counts[node] += 1  # type: ignore[index]
                break
    return [
        FLOOR_QUERY.format(blocks="\n  UNION\n".join(
            FLOOR_NODE.format(node=str(node), limit=count)
            for node, count in counts.items() if count
        ))
        for counts in kept if any(counts.values())
    ], [
        "SELECT ?n ?s ?p ?o WHERE {\n" + "\n  UNION\n".join(
            [COUNT_NODE.format(node=str(node), limit=RANK_WHOLE_UP_TO + 1) for node in frontier]
            + [WHOLE_NODE.format(node=str(node)) for node in frontier if _small(store, node)]
        ) + "\n}"
        for frontier in hops.frontiers
    ]


def _small(store: EmbeddedStore, node: ox.NamedNode) -> bool:
    """Whether the node has at most RANK_WHOLE_UP_TO edges, so ranking reads it whole."""
    query = "SELECT ?n WHERE {" + COUNT_NODE.format(node=str(node), limit=RANK_WHOLE_UP_TO + 1) + "}"
    (row,) = store.oxigraph.query(query)  # type: ignore[misc]
    return int(row["n"].value) <= RANK_WHOLE_UP_TO


def digest(edges: Sequence[ox.Triple]) -> str:
    """A subgraph's fingerprint: its edges in order."""
    return hashlib.sha256("\n".join(map(str, edges)).encode("utf-8")).hexdigest()


def reference_digests(path: Path, facts: int, seed: int, questions: int) -> list[str] | None:
    """The reference subgraphs' digests for this KG and these questions, if recorded."""
    if not path.is_file():
        return None
    recorded = json.loads(path.read_text(encoding="utf-8"))
    if (recorded["facts"], recorded["seed"]) != (facts, seed) or len(recorded["digests"]) < questions:
        return None
    return recorded["digests"][:questions]


def bare(store: EmbeddedStore, queries: Sequence[str]) -> int:
    """ns that pyoxigraph takes to answer the queries, rows iterated and nothing else."""
    total = 0
    for query in queries:
        start = time.perf_counter_ns()
        for _ in store.oxigraph.query(query):  # type: ignore[union-attr]
            pass
        total += time.perf_counter_ns() - start
    return total


@dataclass
class Samples:
    grounding: list[int] = field(default_factory=list)
    retrieval: list[int] = field(default_factory=list)
    retrieval_unranked: list[int] = field(default_factory=list)
    retrieval_floor: list[int] = field(default_factory=list)
    retrieval_ranking_floor: list[int] = field(default_factory=list)
    retrieval_cpu: list[int] = field(default_factory=list)
    retrieval_unranked_cpu: list[int] = field(default_factory=list)
    retrieval_store_cpu: list[int] = field(default_factory=list)
    retrieval_render_cpu: list[int] = field(default_factory=list)
    retrieval_python_cpu: list[int] = field(default_factory=list)
    retrieval_hub: list[int] = field(default_factory=list)
    retrieval_hub_unranked: list[int] = field(default_factory=list)
    retrieval_cold: list[int] = field(default_factory=list)
    retrieval_cold_unranked: list[int] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    offline_llm: list[int] = field(default_factory=list)
    recording: list[int] = field(default_factory=list)
    rec_start: list[int] = field(default_factory=list)
    rec_selection: list[int] = field(default_factory=list)
    rec_answer: list[int] = field(default_factory=list)
    recording_lite: list[int] = field(default_factory=list)
    recording_floor: list[int] = field(default_factory=list)
    pipeline_on: list[int] = field(default_factory=list)
    pipeline_off: list[int] = field(default_factory=list)
    pipeline_lite: list[int] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)
    requests_unranked: list[int] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    selected: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)


def _consume(messages: Iterator[Any]) -> list[Any]:
    return list(messages)


class _CapturedUpdates:
    """Keeps the updates a recorder would send, so their quads can be written another way."""

    def __init__(self, templates: Templates) -> None:
        self.templates = templates
        self.updates: list[str] = []

    def update(self, update: str) -> None:
        self.updates.append(update)


class _CpuTime:
    """Adds up the CPU time of this thread that the wrapped object's calls take."""

    cpu = 0

    def _timed(self, step: Callable[[], T]) -> T:
        start = time.thread_time_ns()
        try:
            return step()
        finally:
            self.cpu += time.thread_time_ns() - start


class _Counting(WithTemplates, _CpuTime):
    """The store, counting the SELECT requests retrieval sends it, with their CPU time
    (pyoxigraph parsing, planning and evaluating them, their rows made Python)."""

    def __init__(self, store: EmbeddedStore, rendering: Any = None) -> None:
        self.store = store
        self.dialect = store.dialect
        self.rendering = rendering
        self.requests = 0

    @property
    def templates(self) -> Any:
        """The store's templates, or a stand-in that times their rendering."""
        return self.rendering or self.store.templates

    def select(self, query: str, **kwargs: Any) -> Any:
        self.requests += 1
        return self._timed(lambda: self.store.select(query, **kwargs))


class _TimedTemplates(_CpuTime):
    """The templates, with the CPU time of their rendering."""

    def __init__(self, templates: Templates) -> None:
        self.templates = templates

    def render(self, name: str, /, **params: Any) -> str:
        return self._timed(lambda: self.templates.render(name, **params))


@dataclass(frozen=True)
class Answered:
    """What one question's session records: its grounding, subgraph, selection and answer."""

    text: str
    grounding: Grounding
    subgraph: list[ox.Triple]
    parsed: Any
    usage: Any
    found: Any
    answer_usage: Any
    answer_text: str


def offline_answer(backend: OfflineBackend, text: str, labelgraph: Any,
                   seeds: Sequence[ox.NamedNode]) -> tuple[Any, Any, Any, str]:
    """The offline backend's selection (its output and the parsed edges) and answer (the
    answer and its text)."""
    request = SelectionRequest(text, labelgraph.labeled_edges, seeds)
    output = backend.select(request) if request.edges else None
    parsed = parse_selection(output.text if output else "", labelgraph.uri_map)
    by_id = labelgraph.by_id()
    answer = backend.answer(text, [by_id[e.id] for e in parsed.edges], stream=False)
    return output, parsed, answer, "".join(answer)


def answered_offline(store: EmbeddedStore, backend: OfflineBackend, text: str,
                     grounding: Grounding, subgraph: list[ox.Triple]) -> Answered:
    """What the session of a question records, by the offline backend: what a measurement
    of the recording writes needs first."""
    labelgraph = get_labelgraph(store, subgraph)
    output, parsed, answer, answer_text = offline_answer(backend, text, labelgraph,
                                                         grounding.seeds)
    return Answered(text, grounding, subgraph, parsed, output.usage if output else None,
                    facts_sources(store, [edge.triple for edge in parsed.edges]), answer.usage,
                    answer_text)


def session_writes(recorder: Recorder, librarian: StoreLibrarian, ids: SessionIds,
                   answered: Answered) -> list[Callable[[], Any]]:
    """Every write of one session for a question's data, in the pipeline's order."""
    title = f"GraphRAG answer {ids.uuid}"
    started = now()
    parsed = answered.parsed
    return [
        lambda: recorder.write(
            recorder.session(ids, answered.text, started),
            recorder.retrieval(ids, answered.grounding, answered.subgraph),
        ),
        lambda: recorder.write(
            recorder.selection(ids, parsed.edges, len(parsed.invalid_ids), answered.usage,
                               answered.found)
        ),
        lambda: recorder.write(
            librarian.record(ids.answer_document, answered.answer_text, title=title),
            recorder.answer(ids, answered.answer_usage, now(), started=started,
                            selected=len(parsed.edges)),
        ),
    ]


class Bench:
    def __init__(self, store: EmbeddedStore) -> None:
        self.store = store
        self.limits = RetrievalLimits()
        self.backend = OfflineBackend()
        self.recorder = Recorder(store, BENCH_COLLECTION)
        self.recorder_lite = Recorder(
            store, LITE_COLLECTION, record_retrieved_edges=False
        )
        self.librarian = StoreLibrarian(store)
        self.captured = _CapturedUpdates(store.templates)
        self.recorder_floor = Recorder(self.captured, FLOOR_COLLECTION)
        self.librarian_floor = StoreLibrarian(self.captured)
        self.rag_on = GraphRag(store, OfflineBackend(), index_labels=False)
        self.rag_off = GraphRag(store, OfflineBackend(), index_labels=False, record=False)
        self.rag_lite = GraphRag(
            store,
            OfflineBackend(),
            index_labels=False,
            collection=LITE_PIPELINE_COLLECTION,
            record_retrieved_edges=False,
        )

    def store_floor(self, steps: Sequence[Callable[[], Any]]) -> int:
        """The quads of the session's writes handed to pyoxigraph's `Store.extend`, one call
        per write: no SPARQL text, no templates, no parsing. What the storage engine alone
        takes for the same records; returns the total ns."""
        total = 0
        for step in steps:
            self.captured.updates.clear()
            step()
            scratch = ox.Store()
            for update in self.captured.updates:
                scratch.update(update)
            quads = list(scratch)
            start = time.perf_counter_ns()
            self.store.oxigraph.extend(quads)
            total += time.perf_counter_ns() - start
        return total

    def retrievals(
        self, index: int, text: str, samples: Samples, cold: bool = False
    ) -> tuple[Grounding, list[ox.Triple], _Counting, _Counting, _TimedTemplates]:
        """The question grounded, then retrieved ranked and unranked in turns, so neither
        always runs on data the other has just read; with `cold`, the retrievals' times go to
        the rows of the page cache dropped first, and grounding's to none."""
        store = self.store
        grounding = _timed(
            [] if cold else samples.grounding,
            lambda: ground(store, text, self.limits.entity_limit),
        )

        rendering = _TimedTemplates(store.templates)
        counting, counting_unranked = _Counting(store, rendering), _Counting(store)

        def ranked() -> list[ox.Triple]:
            return retrieve_subgraph(
                counting, grounding.seeds, self.limits,  # type: ignore[arg-type]
                grounding.schema_predicates, grounding.stems, grounding.relations, grounding.kinds,
            )

        def unranked() -> list[ox.Triple]:
            query = UnrankedQuery(
                counting_unranked,  # type: ignore[arg-type]
                grounding.schema_predicates or (),
                grounding.seeds,
            )
            return walk(query, self.limits).edges if grounding.seeds else []

        times, times_unranked = (
            (samples.retrieval_cold, samples.retrieval_cold_unranked) if cold
            else (samples.retrieval, samples.retrieval_unranked)
        )
        cpu = None if cold else samples.retrieval_cpu
        cpu_unranked = None if cold else samples.retrieval_unranked_cpu
        if index % 2:
            _timed(times_unranked, unranked, cpu_unranked)
        subgraph = _timed(times, ranked, cpu)
        if not index % 2:
            _timed(times_unranked, unranked, cpu_unranked)
        return grounding, subgraph, counting, counting_unranked, rendering

    def question(self, index: int, text: str, samples: Samples, hub: bool = False) -> None:
        store = self.store
        grounding, subgraph, counting, counting_unranked, rendering = self.retrievals(
            index, text, samples
        )
        floor, ranking_floor = floor_queries(
            store, grounding.seeds, self.limits,
            grounding.schema_predicates or (), grounding.stems,
        ) if grounding.seeds else ([], [])
        samples.retrieval_floor.append(bare(store, floor))
        samples.retrieval_ranking_floor.append(bare(store, ranking_floor))
        samples.digests.append(digest(subgraph))
        samples.requests.append(counting.requests)
        samples.retrieval_store_cpu.append(counting.cpu)
        samples.retrieval_render_cpu.append(rendering.cpu)
        samples.retrieval_python_cpu.append(
            samples.retrieval_cpu[-1] - counting.cpu - rendering.cpu
        )
        samples.requests_unranked.append(counting_unranked.requests)
        if hub:
            samples.retrieval_hub.append(samples.retrieval[-1])
            samples.retrieval_hub_unranked.append(samples.retrieval_unranked[-1])
        labelgraph = _timed(samples.labels, lambda: get_labelgraph(store, subgraph))

        output, parsed, answer, answer_text = _timed(
            samples.offline_llm,
            lambda: offline_answer(self.backend, text, labelgraph, grounding.seeds),
        )
        usage = output.usage if output else None
        found = facts_sources(store, [edge.triple for edge in parsed.edges])

        answered = Answered(text, grounding, subgraph, parsed, usage, found, answer.usage,
                            answer_text)

        def writes(recorder: Recorder, librarian: StoreLibrarian) -> list[Callable[[], Any]]:
            return session_writes(recorder, librarian, SessionIds.new(), answered)

        def record(recorder: Recorder, parts: Sequence[list[int]]) -> int:
            """The session's writes, each timed; returns the total ns."""
            steps = writes(recorder, self.librarian)
            total = 0
            for step, bucket in zip(steps, parts):
                start = time.perf_counter_ns()
                step()
                elapsed = time.perf_counter_ns() - start
                bucket.append(elapsed)
                total += elapsed
            return total

        samples.recording.append(
            record(
                self.recorder,
                (samples.rec_start, samples.rec_selection, samples.rec_answer),
            )
        )
        samples.recording_lite.append(record(self.recorder_lite, [[] for _ in range(3)]))
        samples.recording_floor.append(
            self.store_floor(writes(self.recorder_floor, self.librarian_floor))
        )
        samples.edges.append(len(subgraph))
        samples.seeds.append(len(grounding.seeds))
        samples.selected.append(len(parsed.edges))

        # The pipelines in turn, rotating which goes first, so none always runs warmer.
        runs = [
            (self.rag_on, samples.pipeline_on),
            (self.rag_off, samples.pipeline_off),
            (self.rag_lite, samples.pipeline_lite),
        ]
        if index % 2:
            runs[0], runs[1] = runs[1], runs[0]
        shift = (index // 2) % 3
        runs = runs[shift:] + runs[:shift]
        for rag, bucket in runs:
            messages = _timed(bucket, lambda: _consume(rag.query(text)))
            failed = [m.error.message for m in messages if m.error is not None]
            if failed:
                samples.errors.append(f"{text!r}: {failed[0]}")


def drop_page_cache() -> bool:
    """Asks Linux to drop the file pages it caches, so the store's next reads come from the
    disk; False where it may not (it takes root)."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as control:
            control.write("1\n")
    except OSError:
        return False
    return True


def read_into_page_cache(directory: Path) -> int:
    """Reads every file of the store once, so the operating system holds them in its page
    cache, as it does for a store that has been serving a while: what the measured questions
    then time is the store's work, not the disk nor what earlier work left cached (a run
    that starts on a cold cache takes a third longer to retrieve). Returns the bytes read."""
    total = 0
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            with path.open("rb") as data:
                while chunk := data.read(1 << 20):
                    total += len(chunk)
    return total


def clear_records(store: EmbeddedStore) -> None:
    """Forget the records of earlier runs, so every run starts from the same store."""
    for graph in (
        vocab.DEFAULT_COLLECTION.graph,
        BENCH_COLLECTION.graph,
        LITE_COLLECTION.graph,
        LITE_PIPELINE_COLLECTION.graph,
        FLOOR_COLLECTION.graph,
        vocab.GRAPH_LIBRARY,
    ):
        store.oxigraph.remove_graph(graph)


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _s(ns: int) -> float:
    return ns / 1e9


def _ms(ns: float) -> float:
    return ns / 1e6


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (`share` 0.95 for the 95th)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(share * len(ordered)) - 1)])


def p95(values: Sequence[float]) -> float:
    return percentile(values, 0.95)


def _verdict(ok: bool) -> str:
    return "pass" if ok else "**FAIL**"


TIMING_ROWS = [
    "grounding",
    "retrieval (retrieve_subgraph)",
    "— unranked, the old query (baseline)",
    "— floor: the kept edges, one request a hop, bare",
    "— ranking floor: the frontier's counts and small nodes, one request a hop, bare",
    "— CPU time of the ranked retrieval",
    "— CPU time of the unranked",
    "— of the ranked's CPU time, in the store (its requests, rows made Python)",
    "— of the ranked's CPU time, rendering its templates",
    "— of the ranked's CPU time, the rest (ranking, the walk)",
    "— on questions naming a hub",
    "— on questions naming a hub, unranked",
    "— the page cache dropped first (other questions)",
    "— the page cache dropped first, unranked",
    "label fetch (get_labelgraph)",
    "offline selection + answer",
    "recording (all writes of one session)",
    "— session + retrieval",
    "— selection",
    "— answer + librarian",
    "recording without tg:retrievedEdge",
    "recording's store floor (the same quads by Store.extend)",
    "pipeline, recording on",
    "pipeline, recording off",
    "pipeline, recording on without tg:retrievedEdge",
]
"""The table's rows of milliseconds, in order."""
RATIO_ROWS = [
    "ranking cost (ranked / unranked retrieval)",
    "ranking cost in CPU time (ranked / unranked)",
    "ranked retrieval / floor",
    "ranked retrieval / ranking floor",
    "unranked retrieval / floor",
    "explainability overhead (on / off)",
    "overhead without tg:retrievedEdge (on / off)",
    "overhead floor (off + the store floor of its writes) / off",
]
"""Then its rows of ratios."""
COUNT_ROWS = [
    "edges retrieved per question",
    "store requests per retrieval",
    "— unranked",
    "seed entities per question",
    "edges selected per question",
]
"""Then its rows of counts per question."""
ROW_NAMES = TIMING_ROWS + RATIO_ROWS + COUNT_ROWS


@dataclass
class RunInfo:
    wall_s: float
    cpu_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    reference: list[str] | None = None
    """The reference subgraphs' digests (REFERENCE), when recorded for this KG."""
    page_cache_bytes: int = 0
    """What was read of the store's files into the page cache before measuring."""
    cold_questions: int = 0
    """Questions retrieved right after the page cache was dropped (0: not asked for)."""


def report(info: BuildInfo, samples: Samples, questions: int, run: RunInfo) -> str:
    on, off = median(samples.pipeline_on), median(samples.pipeline_off)
    lite = median(samples.pipeline_lite)
    ratio = on / off if off else math.nan
    ratio_lite = lite / off if off else math.nan
    ratios = [a / b for a, b in zip(samples.pipeline_on, samples.pipeline_off)]
    ratios_lite = [a / b for a, b in zip(samples.pipeline_lite, samples.pipeline_off)]
    # The least the overhead can be: the pipeline without recording, plus pyoxigraph's bare
    # Store.extend of the quads that recording writes.
    floor = (off + median(samples.recording_floor)) / off if off else math.nan
    floors = [(a + b) / a for a, b in zip(samples.pipeline_off, samples.recording_floor) if a]
    rec_p50 = _ms(median(samples.recording))
    ranking = median(samples.retrieval) / median(samples.retrieval_unranked)
    rankings = [a / b for a, b in zip(samples.retrieval, samples.retrieval_unranked) if b]
    ret_p50 = _ms(median(samples.retrieval))
    grounded = sum(1 for n in samples.seeds if n > 0)

    def timing(name: str, values: list[int], target: str = "", ok: bool | None = None) -> str:
        if not values:
            return f"| {name} | | | | |"
        verdict = "" if ok is None else _verdict(ok)
        return (
            f"| {name} | {_ms(median(values)):.2f} | {_ms(p95(values)):.2f} "
            f"| {target} | {verdict} |"
        )

    def ratio_row(name: str, over: list[int], under: list[int]) -> str:
        """The ratio of the medians, and the p95 of the per-question ratio."""
        if not over or not under:
            return f"| {name} | | | | |"
        each = [a / b for a, b in zip(over, under) if b]
        return f"| {name} | {median(over) / median(under):.3f} | {p95(each):.3f} | | |"

    def count(name: str, values: list[int]) -> str:
        return f"| {name} | {median(values):g} | {p95(values):g} | | |"

    rows = [
        timing("grounding", samples.grounding),
        timing(
            "retrieval (retrieve_subgraph)",
            samples.retrieval,
            f"≤ {TARGET_RETRIEVAL_MS:g} ms p50",
            ret_p50 <= TARGET_RETRIEVAL_MS,
        ),
        timing("— unranked, the old query (baseline)", samples.retrieval_unranked),
        timing("— floor: the kept edges, one request a hop, bare", samples.retrieval_floor),
        timing(
            "— ranking floor: the frontier's counts and small nodes, one request a hop, bare",
            samples.retrieval_ranking_floor,
        ),
        timing("— CPU time of the ranked retrieval", samples.retrieval_cpu),
        timing("— CPU time of the unranked", samples.retrieval_unranked_cpu),
        timing("— of the ranked's CPU time, in the store (its requests, rows made Python)",
               samples.retrieval_store_cpu),
        timing("— of the ranked's CPU time, rendering its templates",
               samples.retrieval_render_cpu),
        timing("— of the ranked's CPU time, the rest (ranking, the walk)",
               samples.retrieval_python_cpu),
        timing("— on questions naming a hub", samples.retrieval_hub),
        timing("— on questions naming a hub, unranked", samples.retrieval_hub_unranked),
        timing("— the page cache dropped first (other questions)", samples.retrieval_cold),
        timing("— the page cache dropped first, unranked", samples.retrieval_cold_unranked),
        timing("label fetch (get_labelgraph)", samples.labels),
        timing("offline selection + answer", samples.offline_llm),
        timing(
            "recording (all writes of one session)",
            samples.recording,
            f"≤ {TARGET_RECORDING_MS:g} ms p50",
            rec_p50 <= TARGET_RECORDING_MS,
        ),
        timing("— session + retrieval", samples.rec_start),
        timing("— selection", samples.rec_selection),
        timing("— answer + librarian", samples.rec_answer),
        timing("recording without tg:retrievedEdge", samples.recording_lite),
        timing("recording's store floor (the same quads by Store.extend)",
               samples.recording_floor),
        timing("pipeline, recording on", samples.pipeline_on),
        timing("pipeline, recording off", samples.pipeline_off),
        timing("pipeline, recording on without tg:retrievedEdge", samples.pipeline_lite),
        f"| ranking cost (ranked / unranked retrieval) | {ranking:.3f} | {p95(rankings):.3f} "
        "| | |",
        ratio_row("ranking cost in CPU time (ranked / unranked)",
                  samples.retrieval_cpu, samples.retrieval_unranked_cpu),
        ratio_row("ranked retrieval / floor", samples.retrieval, samples.retrieval_floor),
        ratio_row("ranked retrieval / ranking floor", samples.retrieval,
                  samples.retrieval_ranking_floor),
        ratio_row("unranked retrieval / floor", samples.retrieval_unranked,
                  samples.retrieval_floor),
        f"| explainability overhead (on / off) | {ratio:.3f} | {p95(ratios):.3f} "
        f"| ≤ {TARGET_OVERHEAD:.2f} (+{(TARGET_OVERHEAD - 1) * 100:.0f} %) "
        f"| {_verdict(ratio <= TARGET_OVERHEAD)} |",
        f"| overhead without tg:retrievedEdge (on / off) | {ratio_lite:.3f} "
        f"| {p95(ratios_lite):.3f} | | |",
        f"| overhead floor (off + the store floor of its writes) / off | {floor:.3f} "
        f"| {p95(floors):.3f} | | |",
        count("edges retrieved per question", samples.edges),
        count("store requests per retrieval", samples.requests),
        count("— unranked", samples.requests_unranked),
        count("seed entities per question", samples.seeds),
        count("edges selected per question", samples.selected),
    ]
    assert [row.split(" | ")[0][2:] for row in rows] == ROW_NAMES
    build_line = (
        f"{info.build_s:.1f} s (generate {info.generate_s:.1f} s, check + bulk load "
        f"{info.load_s:.1f} s, label index {info.index_s:.1f} s), built {info.built_at}"
        + (", reused from the cache for this run" if info.cached else "")
    )
    lines = [
        *head("Pipeline benchmark", "python -m benchmarks.pipeline_bench"),
        f"- KG: {info.facts:,} facts, {info.entities:,} entities, {info.predicates} predicates, "
        f"{info.labels:,} rdfs:labels ({info.quads_loaded:,} quads), on-disk store",
        f"- hubs: two entities with {info.facts // HUB_SHARES[0]:,} and "
        f"{info.facts // HUB_SHARES[1]:,} edges (\"member of\", \"located in\", \"part of\") "
        f"and {HUB_FACTS} facts each by predicates they use once; "
        f"{len(samples.retrieval_hub)} of the measured questions ask for one of those facts",
        f"- build: {build_line}",
        f"- questions: {questions} measured (after {WARMUP_QUESTIONS} warm-up), "
        f"{grounded} / {questions} grounded to ≥ 1 seed, {len(samples.errors)} failed; "
        f"offline backend",
        f"- run: {run.wall_s:.1f} s wall, {run.cpu_s:.1f} s CPU of this process; load average "
        f"{run.load_before[0]:.2f} before, {run.load_after[0]:.2f} after",
        f"- page cache: the store's files ({run.page_cache_bytes / 1e6:,.1f} MB) read once "
        "before the warm-up, so the measured questions time the store, not the disk; "
        + (f"the rows \"the page cache dropped first\": {run.cold_questions} other questions "
           "retrieved before that, right after the page cache was dropped"
           if run.cold_questions else
           "the rows \"the page cache dropped first\" are empty: not asked for "
           "(`--drop-page-cache`, which takes root)"),
        f"- retrieval limits: {RetrievalLimits()}",
        "- ranked subgraphs: " + (
            f"{sum(a == b for a, b in zip(samples.digests, run.reference))} / {questions} "
            f"the same edges in the same order as the reference (`{REFERENCE}`)"
            if run.reference is not None else "no reference recorded for this KG"
        ),
        "",
        "| measure | median (ms) | p95 (ms) | target | result |",
        "|---|---:|---:|---|---|",
        *rows,
        "",
        "Counts (last five rows) are per question, not milliseconds. The ranking cost is the "
        "ratio of the medians of ranked and unranked retrieval (the same walk, the old query "
        "text for each hop), measured side by side on the same store; its p95 column, of the "
        "per-question ratio. The CPU-time rows are the same runs' CPU time of this thread, "
        "which other work on the machine does not inflate. The floor is the least any "
        "retrieval of the same subgraph reads: per hop one request that reads, for each node, "
        "as many of its edges as the ranked walk kept there (in the store's order, each row "
        "the predicate and the neighbour), run by pyoxigraph alone and its rows iterated — no "
        "templates, no Python rows, no ranking — right after the ranked retrieval, on data it "
        "has just read: here "
        f"{_ms(median(samples.retrieval_floor)):.2f} ms p50, so the "
        f"{TARGET_RETRIEVAL_MS:g} ms target lies "
        + ("above" if _ms(median(samples.retrieval_floor)) < TARGET_RETRIEVAL_MS else "below")
        + " it; the unranked walk (the query before ranking, one request a hop) takes "
        f"{_ms(median(samples.retrieval_unranked)):.2f} ms p50, "
        + ("below" if _ms(median(samples.retrieval_unranked)) < TARGET_RETRIEVAL_MS
           else "above")
        + f" the {TARGET_RETRIEVAL_MS:g} ms target. The ranking floor is what ranking must read "
        "at the least on the same walk: per hop one request that counts every frontier node's "
        f"edges up to {RANK_WHOLE_UP_TO + 1} and reads all the edges of those with at most "
        f"{RANK_WHOLE_UP_TO} (a node is ranked from all of its edges; a bigger one must be "
        "known as bigger), bare, right after the ranked retrieval: "
        f"{_ms(median(samples.retrieval_ranking_floor)):.2f} ms p50."
        + " The overhead rows' p95 "
        "column is the 95th percentile of the per-question ratio; the target applies to the "
        "ratio of the medians. Rows without a target are for reading the others: "
        "`tg:retrievedEdge` (every retrieved edge on the Retrieval, on by default) is switched "
        "off with `record_retrieved_edges=False`. The store floor is what pyoxigraph's own "
        "`Store.extend` takes for the quads of the same three writes (one call each, no SPARQL, "
        "no templates): no way of sending those records to this store costs less.",
        "",
    ]
    if samples.errors:
        lines += ["Failed questions:", ""] + [f"- {e}" for e in samples.errors[:10]] + [""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def run(
    facts: int,
    questions: int,
    work: Path,
    out: Path,
    *,
    seed: int = DEFAULT_SEED,
    profile: Path | None = None,
    write_reference: bool = False,
    drop_cache: bool = False,
    log: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True),
) -> str:
    info = build(facts, work, seed, log)
    pool = info.questions
    if len(pool) < questions + WARMUP_QUESTIONS:
        raise SystemExit(
            f"the KG of {facts:,} facts yields {len(pool)} questions; "
            f"ask for at most {len(pool) - WARMUP_QUESTIONS}"
        )
    measured = pool[:questions]
    warmup = pool[-WARMUP_QUESTIONS:]

    store_path = kg_directory(work, facts, seed) / "store"
    samples = Samples()
    cold = pool[questions : min(2 * questions, len(pool) - WARMUP_QUESTIONS)]
    if drop_cache:
        if not cold:
            raise SystemExit("--drop-page-cache: the KG yields no questions besides the "
                             "measured ones to retrieve with the page cache dropped")
        if not drop_page_cache():
            raise SystemExit("--drop-page-cache: this machine's page cache cannot be dropped "
                             "from here (it takes root)")
        log(f"retrieving {len(cold)} other questions with the page cache dropped ...")
        # A store of its own, closed after, so the measured questions do not find its blocks
        # in the store's cache either.
        store = open_store(store_path)
        try:
            cold_bench = Bench(store)
            for i, question in enumerate(cold):
                cold_bench.retrievals(i, question.text, samples, cold=True)
        finally:
            store.close()
    page_cache_bytes = read_into_page_cache(store_path)
    store = open_store(store_path)
    try:
        clear_records(store)
        bench = Bench(store)
        for i, question in enumerate(warmup):
            bench.question(i, question.text, Samples())
        profiler = cProfile.Profile() if profile else None
        log(f"measuring {questions} questions ...")
        load_before = load_average()
        cpu_start = time.process_time_ns()
        start = time.perf_counter_ns()
        if profiler:
            profiler.enable()
        for i, question in enumerate(measured):
            bench.question(i, question.text, samples, hub=question.kind == "hub")
        if profiler:
            profiler.disable()
            profiler.dump_stats(str(profile))
        run = RunInfo(
            wall_s=_s(time.perf_counter_ns() - start),
            cpu_s=_s(time.process_time_ns() - cpu_start),
            load_before=load_before,
            load_after=load_average(),
            reference=reference_digests(out.parent / REFERENCE, facts, seed, questions),
            page_cache_bytes=page_cache_bytes,
            cold_questions=len(samples.retrieval_cold),
        )
        if write_reference:
            out.parent.mkdir(parents=True, exist_ok=True)
            (out.parent / REFERENCE).write_text(json.dumps(
                {"facts": facts, "seed": seed, "digests": samples.digests}, indent=0
            ) + "\n", encoding="utf-8")
    finally:
        store.close()
    return write(out, report(info, samples, questions, run), log)


def main(argv: Sequence[str] | None = None) -> int:
    parser = BenchParser("benchmarks.pipeline_bench", __doc__.split("\n\n")[0], SIZES,
                         out="pipeline.md", seed=DEFAULT_SEED, work="cache of built stores")
    parser.add_argument(
        "--profile", type=Path, default=None, help="write cProfile stats of the measured loop"
    )
    parser.add_argument(
        "--write-reference", action="store_true",
        help=f"record this run's ranked subgraphs as the reference ({REFERENCE}, beside --out)",
    )
    parser.add_argument(
        "--drop-page-cache", action="store_true",
        help="first retrieve as many other questions right after dropping the machine's page "
        "cache (takes root; slows everything else running for a while)",
    )
    args = parser.parse(argv)
    print(
        run(args.facts, args.questions, args.work, args.out, seed=args.seed, profile=args.profile,
            write_reference=args.write_reference, drop_cache=args.drop_page_cache)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
