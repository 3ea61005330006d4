"""Evaluation on real data: 2WikiMultiHopQA questions over its gold triples among distractors.

The KG, in one in-memory embedded store: the gold evidence triples of the questions file with
their provenance in the 2Wiki corpus (`benchmarks.importers.twowiki`), plus every Re-DocRED dev
fact with its provenance (`benchmarks.importers.redocred`) as distractors. Each question runs
through `GraphRag(store, OfflineBackend())` with the default limits, and is scored on:

- retrieval recall: the share of its gold triples among the `tg:retrievedEdge`s of the
  recorded Retrieval (read from the explain message's triples);
- selection precision and recall: the `tg:edge`s of the recorded Selection against the gold
  triples (precision 0 when nothing was selected);
- answer exact match and F1 after the 2Wiki/SQuAD normalisation (lower case, punctuation and
  the articles a/an/the removed, whitespace collapsed; a yes/no/noanswer prediction scores F1 0
  unless equal), of the gold answer against the offline answer's lead: the text before the
  first ". From the knowledge graph" (empty when the answer has no lead);
- trace correctness: for each selected gold triple that the importer anchored, whether the
  `sources` of the final message (the product's one trace query per session) reach its
  paragraph (document) and sentence (chunk), and name nothing else; and, for every selected
  edge, whether those sources equal a walk over the store in Python (`walk_sources`:
  subgraphs that `tg:contains` the edge, their chunks, the chunks' documents).

Re-DocRED trace correctness: for every fact with evidence, a walk over the store in Python
(no saved fact-to-sources query exists yet): subgraphs that `tg:contains` the fact, their
chunks and the chunks' documents, compared with the dataset's evidence sentences by chunk, by
the librarian's chunk text and by document title.

Hub stress (`--hubs`): the same questions over the same KG after every entity of the 2Wiki KG
(every end of a gold triple of the questions file) is given K extra edges, K in `--hubs`
(0, 30, 100, 1000 by default), each to or from (by a coin) another entity, of one of
NOISE_KINDS (`--hub-noise`):

- made-up: an entity of a pool of NOISE_POOL noise entities, by one of NOISE_PREDICATES noise
  predicates, every noise term labelled with made-up words (so no edge shares a word with a
  question by design, but a node's facts drown in its noise edges, a few predicates used
  hundreds of times each, as on a real hub);
- real: an entity of the KG itself (an end of one of its facts), by one of the KG's own
  predicates, never one named as a predicate of a fact either end is an end of (so no noise
  edge restates what a gold fact says of an entity, yet its words are the words questions use);
- restating: the same, any predicate of the KG allowed: the harder case, where a noise edge may
  give an entity a second director or birthplace.

The noise is loaded before the facts and after them (an engine's "first" edges are
often the first loaded), into an in-memory store and an on-disk one. Per run: retrieval
recall, selection precision and recall, EM/F1, and retrieval latency (grounding + retrieval,
`tgsparql.asking.grounding.ground` and `tgsparql.asking.retrieval.retrieve`, timed apart from the pipeline)
as median and 90th percentile.

Names as people say them (`--names`): the questions that name a person by a full name, then the
same questions with that name cut short (by surname, by given name, or without the middle
names: `shortened`), as written and in lower case, and every question in lower case; scored as
above.

Run: python -m benchmarks.evaluate [--corpus F] [--questions F] [--redocred F] [--rel-info F]
     [--out benchmarks/results/evaluation.md] [--limit N]
     [--hubs [K,K,...] [--hub-noise KIND,...] [--hub-jobs N]
      [--hub-out benchmarks/results/evaluation-hubs.md]]
     [--names [--names-out benchmarks/results/evaluation-names.md]]
"""

from __future__ import annotations

import argparse
import platform
import random
import re
import statistics
import string
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pyoxigraph as ox

from benchmarks.data import data_path
from benchmarks.importers import DatasetError, load
from benchmarks.importers.redocred import DOCS, REL_INFO, ReDocRedImport, import_redocred
from benchmarks.importers.twowiki import CORPUS, QUESTIONS, Question, TwoWikiImport, import_twowiki
from tgsparql.asking.grounding import NAME_CONNECTORS, ground
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.messages import GraphRagResponse
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.retrieval import retrieve
from tgsparql.rdf import vocab
from tgsparql.stores.store import EmbeddedStore, open_store

HERE = Path(__file__).resolve().parent
DEFAULT_OUT: Final = HERE / "results" / "evaluation.md"
DEFAULT_HUB_OUT: Final = HERE / "results" / "evaluation-hubs.md"
DEFAULT_NAMES_OUT: Final = HERE / "results" / "evaluation-names.md"
HUB_SIZES: Final = (0, 30, 100, 1000)
NOISE: Final = "http://noise.example.org/"
NOISE_POOL: Final = 5000
NOISE_PREDICATES: Final = 8
NOISE_SEED: Final = 17
NOISE_KINDS: Final = ("made-up", "real", "restating")
HUB_RECALL_TARGETS: Final = {0: 0.97, 1000: 0.90}
"""Made-up noise; real-term noise's recall is reported, not a target of selection's."""
HUB_PRECISION_TARGET: Final = 0.90
"""Made-up noise, at every K."""
REAL_PRECISION_TARGETS: Final = {0: 0.93, 100: 0.90, 1000: 0.85}
"""Real-term noise (K = 0: none)."""
LEAD_END: Final = ". From the knowledge graph"
RECALL_TARGET: Final = 0.95
EM_TARGET: Final = 0.50
"""Answer exact match of the offline backend over all questions."""


# ---- answer scoring, as the 2WikiMultiHopQA evaluation script does it

def normalize_answer(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    pred, truth = normalize_answer(prediction), normalize_answer(gold)
    special = ("yes", "no", "noanswer")
    if (pred in special or truth in special) and pred != truth:
        return 0.0
    common = Counter(pred.split()) & Counter(truth.split())
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred.split()), same / len(truth.split())
    return 2 * precision * recall / (precision + recall)


def answer_lead(answer: str) -> str:
    """The entity the offline answer leads with; empty when it names none."""
    head, found, _ = answer.partition(LEAD_END)
    return head.strip() if found else ""


# ---- one question

@dataclass
class QuestionResult:
    question: Question
    gold: int
    retrieved_gold: int
    retrieved: int
    selected: int
    selected_gold: int
    exact: float
    f1: float
    prediction: str
    anchored_selected: int = 0
    trace_reached: int = 0
    trace_exact: int = 0
    unanchored_selected_with_sources: int = 0
    sources_equal_walk: int = 0
    """Selected edges whose final-message sources equal the Python walk."""
    missed: Counter[str] = field(default_factory=Counter)
    error: str | None = None

    @property
    def recall(self) -> float:
        return self.retrieved_gold / self.gold if self.gold else 1.0

    @property
    def selection_precision(self) -> float:
        return self.selected_gold / self.selected if self.selected else 0.0

    @property
    def selection_recall(self) -> float:
        return self.selected_gold / self.gold if self.gold else 1.0


MISSED_NOT_GROUNDED: Final = "neither end grounded nor reached"
MISSED_NO_SEED: Final = ("neither end grounded nor reached: the question grounded to no entity "
                         "(it names them in a form the KG has no name for)")
MISSED_BRIDGE_RENAMED: Final = ("neither end grounded nor reached: the gold chain breaks, the KG "
                                "holds its bridge entity under two IRIs (\"William E. Bell\" / "
                                "\"William Edwin Bell\")")
MISSED_ALIAS: Final = ("neither end grounded nor reached: the question names this triple's "
                       "entity by a name or spelling the KG does not carry")
MISSED_AT_SEED: Final = "an end is a seed, edge cut by triple_limit/max_subgraph_size"
MISSED_REACHED: Final = "an end reached at a later hop, edge cut by limits or path length"


def _not_grounded(triple: ox.Triple, gold: set[ox.Triple], seeds: set[ox.Term]) -> str:
    """Why a gold triple neither end of which was reached was missed."""
    if not seeds:
        return MISSED_NO_SEED
    name_words = set(_name_words(triple.subject))
    for other in gold - {triple}:
        if other.object != triple.subject and name_words & set(_name_words(other.object)):
            return MISSED_BRIDGE_RENAMED
    return MISSED_ALIAS


def _name_words(term: ox.Term) -> list[str]:
    value = term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else ""
    return [word for word in value.rsplit("/", 1)[-1].split("-") if len(word) > 2]


def _objects(messages: Iterable[GraphRagResponse], predicate: ox.NamedNode) -> list[ox.Term]:
    return [t.object for m in messages for t in m.explain_triples if t.predicate == predicate]


def walk_sources(store: EmbeddedStore, fact: ox.Triple) -> set[tuple[str, str]]:
    """(document, chunk) of every subgraph containing the fact, walked over the store in Python."""
    ox_store, source = store.oxigraph, vocab.GRAPH_SOURCE
    derived = vocab.PROV_WAS_DERIVED_FROM
    found = set()
    for contains in ox_store.quads_for_pattern(None, vocab.TG_CONTAINS, fact, source):
        for chunk in ox_store.quads_for_pattern(contains.subject, derived, None, source):
            for doc in ox_store.quads_for_pattern(chunk.object, derived, None, source):
                found.add((doc.object.value, chunk.object.value))
    return found


def run_question(rag: GraphRag, question: Question, imported: TwoWikiImport) -> QuestionResult:
    messages = list(rag.query(question.question))
    gold = set(question.evidence)
    errors = [m.error for m in messages if m.error is not None]
    retrieved = set(_objects(messages, vocab.TG_RETRIEVED_EDGE))
    seeds = set(_objects(messages, vocab.TG_ENTITY))
    selected = list(dict.fromkeys(_objects(messages, vocab.TG_EDGE)))
    answer = "".join(m.response for m in messages if m.message_type == "chunk")
    prediction = answer_lead(answer)
    result = QuestionResult(
        question, len(gold), len(gold & retrieved), len(retrieved), len(selected),
        len(gold & set(selected)), exact_match(prediction, question.answer),
        f1_score(prediction, question.answer), prediction,
        error=errors[0].message if errors else None,
    )
    reached = {node for edge in retrieved for node in (edge.subject, edge.object)}
    for triple in gold - retrieved:
        ends = {triple.subject, triple.object}
        result.missed[MISSED_AT_SEED if ends & seeds
                      else MISSED_REACHED if ends & reached
                      else _not_grounded(triple, gold, seeds)] += 1
    sourced: dict[ox.Triple, set[tuple[str, str]]] = {}
    for source in (s for m in messages for s in m.sources):
        sourced.setdefault(source.edge, set()).add((source.document, source.chunk or ""))
    for triple in selected:
        found = sourced.get(triple, set())  # type: ignore[call-overload]
        result.sources_equal_walk += found == walk_sources(rag.store, triple)  # type: ignore[arg-type]
    for triple in gold & set(selected):
        found = sourced.get(triple, set())  # type: ignore[call-overload]
        anchor = imported.anchors.get(triple)
        if anchor is None:
            result.unanchored_selected_with_sources += bool(found)
            continue
        result.anchored_selected += 1
        expected = (anchor.document.value, anchor.chunk.value)
        result.trace_reached += expected in found
        result.trace_exact += found == {expected}
    return result


# ---- Re-DocRED trace, walked in Python

@dataclass
class ReDocRedTrace:
    facts: int = 0
    exact: int = 0
    """Facts whose chunks are exactly their evidence sentences."""
    text_ok: int = 0
    """Facts whose every chunk's librarian text equals its evidence sentence's joined tokens."""
    title_ok: int = 0
    """Facts whose every chunk's document has the title of the evidence's document."""


def redocred_trace(store: EmbeddedStore, imported: ReDocRedImport) -> ReDocRedTrace:
    ox_store = store.oxigraph
    source, library = vocab.GRAPH_SOURCE, vocab.GRAPH_LIBRARY

    def objects(subject: ox.NamedNode, predicate: ox.NamedNode, graph: ox.NamedNode) -> list:
        return [q.object for q in ox_store.quads_for_pattern(subject, predicate, None, graph)]

    trace = ReDocRedTrace()
    for fact, evidence in imported.evidence.items():
        trace.facts += 1
        subgraphs = [q.subject
                     for q in ox_store.quads_for_pattern(None, vocab.TG_CONTAINS, fact, source)]
        chunks = {c for sg in subgraphs for c in objects(sg, vocab.PROV_WAS_DERIVED_FROM, source)}
        expected = {e.chunk: e for e in evidence}
        trace.exact += chunks == set(expected)
        texts = {c: [t.value for t in objects(c, vocab.TG_CONTENT, library)] for c in chunks}
        trace.text_ok += bool(chunks) and all(
            c in expected and texts[c] == [expected[c].text] for c in chunks)
        titles = {c: [t.value for d in objects(c, vocab.PROV_WAS_DERIVED_FROM, source)
                      for t in objects(d, vocab.DC_TITLE, source)] for c in chunks}
        trace.title_ok += bool(chunks) and all(
            c in expected and titles[c] == [expected[c].document_title] for c in chunks)
    return trace


# ---- the whole evaluation

@dataclass
class Evaluation:
    twowiki: TwoWikiImport
    redocred: ReDocRedImport
    results: list[QuestionResult]
    redocred_trace: ReDocRedTrace
    store_quads: int
    build_seconds: float
    query_seconds: float


def build_store(corpus: Path, questions: Path, docs: Path, rel_info: Path, work: Path
                ) -> tuple[EmbeddedStore, TwoWikiImport, ReDocRedImport]:
    twowiki = import_twowiki(corpus, questions, work / "twowiki.nq")
    redocred = import_redocred(docs, rel_info, work / "redocred.nq")
    store = open_store()
    load(store, twowiki.path)
    load(store, redocred.path)
    return store, twowiki, redocred


def evaluate(corpus: Path, questions: Path, docs: Path, rel_info: Path,
             limit: int | None = None, progress: bool = False) -> Evaluation:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        store, twowiki, redocred = build_store(corpus, questions, docs, rel_info, Path(work))
    rag = GraphRag(store, OfflineBackend())
    built = time.perf_counter()
    results = []
    chosen = twowiki.questions[:limit] if limit is not None else twowiki.questions
    for i, question in enumerate(chosen, 1):
        results.append(run_question(rag, question, twowiki))
        if progress and i % 50 == 0:
            print(f"{i}/{len(chosen)} questions", file=sys.stderr)
    queried = time.perf_counter()
    return Evaluation(twowiki, redocred, results, redocred_trace(store, redocred),
                      len(store.oxigraph), built - started, queried - built)


# ---- hub stress

_SYLLABLES: Final = "ba ke lo mi nu ra so ti vu ze do fa gu hi jo".split()


def _made_up(rng: random.Random) -> str:
    return " ".join("".join(rng.choice(_SYLLABLES) for _ in range(3)) for _ in range(2))


def write_noise(entities: Iterable[ox.NamedNode], k: int, path: Path, kind: str = "made-up",
                kg: Sequence[ox.Triple] = ()) -> int:
    """K extra edges of `kind` (NOISE_KINDS) per entity, as N-Triples, `kg` the triples (facts
    and labels) real noise is drawn from; returns how many edges."""
    rng = random.Random(NOISE_SEED)
    label = ox.NamedNode(vocab.RDFS + "label")
    predicates = [ox.NamedNode(f"{NOISE}p/{i}") for i in range(NOISE_PREDICATES)]
    pool = [ox.NamedNode(f"{NOISE}e/{i}") for i in range(NOISE_POOL)]
    facts = [triple for triple in kg if triple.predicate != label]
    names = {t.subject: t.object.value for t in kg if t.predicate == label}
    told: dict[ox.Term, set[str]] = defaultdict(set)
    """The names of the predicates of the facts each entity is an end of."""
    if kind != "made-up":
        pool = sorted({end for t in facts for end in (t.subject, t.object)
                       if isinstance(end, ox.NamedNode)}, key=lambda node: node.value)
        predicates = sorted({t.predicate for t in facts}, key=lambda node: node.value)
    if kind == "real":  # two IRIs of one name ("performer") are one predicate to a reader
        for triple in facts:
            for end in (triple.subject, triple.object):
                told[end].add(names.get(triple.predicate, triple.predicate.value))
    edges = 0
    with path.open("w", encoding="utf-8") as out:
        if kind == "made-up":
            for term in [*predicates, *pool]:
                out.write(f"{term} {label} {ox.Literal(_made_up(rng))} .\n")
        for entity in sorted(entities, key=lambda node: node.value):
            allowed = [p for p in predicates if names.get(p, p.value) not in told[entity]]
            for _ in range(k):
                predicate, other = rng.choice(allowed), rng.choice(pool)
                while other == entity or names.get(predicate, predicate.value) in told[other]:
                    predicate, other = rng.choice(allowed), rng.choice(pool)
                s, o = (entity, other) if rng.random() < 0.5 else (other, entity)
                out.write(f"{s} {predicate} {o} .\n")
                edges += 1
    return edges


def kg_triples(*paths: Path) -> list[ox.Triple]:
    """The default graph of N-Quads files: their facts and labels."""
    return [ox.Triple(q.subject, q.predicate, q.object)
            for path in paths for q in ox.parse(path=path, format=ox.RdfFormat.N_QUADS)
            if q.graph_name == ox.DefaultGraph()]


@dataclass
class HubRun:
    k: int
    noise: str
    """One of NOISE_KINDS."""
    order: str
    """"before" or "after": where the noise was loaded relative to the facts."""
    on_disk: bool
    noise_edges: int
    load_seconds: float
    results: list[QuestionResult]
    latencies_ms: list[float]
    """Grounding + retrieval, per question."""


def hub_stress(corpus: Path, questions: Path, docs: Path, rel_info: Path,
               sizes: Sequence[int] = HUB_SIZES, orders: Sequence[str] = ("before", "after"),
               stores: Sequence[bool] = (False, True), limit: int | None = None,
               progress: bool = False, kinds: Sequence[str] = NOISE_KINDS,
               on_run: Callable[[list[HubRun]], None] | None = None) -> list[HubRun]:
    """The runs, K by K; `on_run` is given the runs so far after each, so a long grid leaves
    its table written as it goes."""
    runs: list[HubRun] = []
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        twowiki = import_twowiki(corpus, questions, work / "twowiki.nq")
        redocred = import_redocred(docs, rel_info, work / "redocred.nq")
        entities = {end for q in twowiki.questions for t in q.evidence
                    for end in (t.subject, t.object) if isinstance(end, ox.NamedNode)}
        chosen = twowiki.questions[:limit] if limit is not None else twowiki.questions
        kg = kg_triples(twowiki.path, redocred.path) if set(kinds) - {"made-up"} else []
        for k, kind in [(k, kind) for k in sizes for kind in (kinds if k else kinds[:1])]:
            noise = work / "noise.nt"
            edges = write_noise(entities, k, noise, kind, kg)
            for order in orders if k else orders[:1]:
                for on_disk in stores:
                    started = time.perf_counter()
                    store = open_store(work / f"store-{k}-{kind}-{order}" if on_disk else None)
                    files = [noise, twowiki.path, redocred.path]
                    for path in files if order == "before" else files[1:] + files[:1]:
                        load(store, path)
                    loaded = time.perf_counter() - started
                    rag = GraphRag(store, OfflineBackend())
                    run = HubRun(k, kind, order, on_disk, edges, loaded, [], [])
                    for question in chosen:
                        run.latencies_ms.append(_retrieval_ms(rag, question.question))
                        run.results.append(run_question(rag, question, twowiki))
                    runs.append(run)
                    store.close()
                    if on_run is not None:
                        on_run(runs)
                    if progress:
                        print(f"K={k} {kind} {order} {'disk' if on_disk else 'memory'}: done",
                              file=sys.stderr)
    return runs


def hub_stress_in_jobs(corpus: Path, questions: Path, docs: Path, rel_info: Path,
                       sizes: Sequence[int], orders: Sequence[str], stores: Sequence[bool],
                       limit: int | None, kinds: Sequence[str], jobs: int,
                       on_run: Callable[[list[HubRun]], None] | None = None) -> list[HubRun]:
    """`hub_stress`, each K and noise kind in its own process, `jobs` at a time: the runs of a
    long grid finish together, in the grid's order; `on_run` is given the runs finished so far,
    in that order, as each finishes. Latencies measured side by side are each an upper bound."""
    grid = [(k, kind) for k in sizes for kind in (kinds if k else kinds[:1])]
    done: dict[tuple[int, str], list[HubRun]] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(hub_stress, corpus, questions, docs, rel_info, [k], orders, stores,
                        limit, True, [kind]): (k, kind)
            for k, kind in grid
        }
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            if on_run is not None:
                on_run([run for cell in grid if cell in done for run in done[cell]])
    return [run for cell in grid for run in done[cell]]


def _retrieval_ms(rag: GraphRag, question: str) -> float:
    started = time.perf_counter()
    grounding = ground(rag.store, question, rag.limits.entity_limit)
    retrieve(rag.store, grounding.seeds, rag.limits,
             grounding.schema_predicates, grounding.stems, grounding.relations, grounding.kinds)
    return 1000 * (time.perf_counter() - started)


def render_hubs(runs: Sequence[HubRun], questions: int) -> str:
    verdict = lambda ok: "pass" if ok else "**FAIL**"  # noqa: E731
    lines = [
        "# Evaluation under hubs: 2WikiMultiHopQA with K extra edges per entity",
        "",
        "Written by `python -m benchmarks.evaluate --hubs`; the noise and what is measured are "
        "in the module's docstring. Offline backend, default retrieval limits; "
        f"{questions} questions of the dev file per run; Python {platform.python_version()}, "
        f"{platform.machine()}. At K = 0 no noise edge exists, so its kind and load order are "
        "moot.",
        "",
        "| K | noise | noise loaded | store | noise edges | load s | retrieval recall | "
        "full recall | selection precision | selection recall | EM | F1 | retrieval p50 ms | "
        "p90 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        rs = run.results
        lat = sorted(run.latencies_ms)
        lines.append("| " + " | ".join([
            str(run.k), run.noise if run.k else "—", run.order if run.k else "—",
            "disk" if run.on_disk else "memory",
            f"{run.noise_edges:,}", f"{run.load_seconds:.0f}",
            f"{_mean([r.recall for r in rs]):.3f}", str(sum(r.recall == 1.0 for r in rs)),
            f"{_mean([r.selection_precision for r in rs]):.3f}",
            f"{_mean([r.selection_recall for r in rs]):.3f}",
            f"{_mean([r.exact for r in rs]):.3f}", f"{_mean([r.f1 for r in rs]):.3f}",
            f"{statistics.median(lat):.1f}" if lat else "—",
            f"{lat[int(0.9 * (len(lat) - 1))]:.1f}" if lat else "—",
        ]) + " |")
    types = sorted({r.question.question_type for run in runs for r in run.results})
    lines += ["", "## EM by question type", "",
              "| K | noise | noise loaded | store | " + " | ".join(types) + " |",
              "|---|---|---|---|" + "---|" * len(types)]
    for run in runs:
        by_type: dict[str, list[float]] = defaultdict(list)
        for r in run.results:
            by_type[r.question.question_type].append(r.exact)
        lines.append("| " + " | ".join([
            str(run.k), run.noise if run.k else "—", run.order if run.k else "—",
            "disk" if run.on_disk else "memory",
            *(f"{_mean(by_type[name]):.3f} ({len(by_type[name])})" for name in types)]) + " |")
    lines += ["", "## Targets", ""]
    for k, target in HUB_RECALL_TARGETS.items():
        worst = min((_mean([r.recall for r in run.results]) for run in runs
                     if run.k == k and (run.noise == "made-up" or not k)), default=None)
        if worst is not None:
            lines.append(f"- retrieval recall ≥ {target} at K = {k}"
                         f"{' of made-up noise' if k else ''}: worst run {worst:.3f} — "
                         f"{verdict(worst >= target)}")

    def precision(run: HubRun) -> float:
        return _mean([r.selection_precision for r in run.results])

    def exact(run: HubRun) -> float:
        return _mean([r.exact for r in run.results])

    made_up = [precision(run) for run in runs if run.noise == "made-up" or not run.k]
    if made_up:
        lines.append(f"- selection precision ≥ {HUB_PRECISION_TARGET} at every K of made-up "
                     f"noise: worst run {min(made_up):.3f} — "
                     f"{verdict(min(made_up) >= HUB_PRECISION_TARGET)}")
    quiet = [exact(run) for run in runs if not run.k]
    for k, target in REAL_PRECISION_TARGETS.items():
        real = [run for run in runs if run.k == k and (run.noise == "real" or not k)]
        if not real:
            continue
        worst = min(precision(run) for run in real)
        lines.append(f"- selection precision ≥ {target} at K = {k}"
                     f"{' (no noise)' if not k else ' of real-term noise'}: worst run "
                     f"{worst:.3f} — {verdict(worst >= target)}")
        if k and quiet:
            worst_em = min(exact(run) for run in real)
            lines.append(f"- EM at K = {k} of real-term noise not lower than without noise "
                         f"({min(quiet):.3f}): worst run {worst_em:.3f} — "
                         f"{verdict(worst_em >= min(quiet))}")
    missed: Counter[str] = Counter()
    for run in runs:
        for r in run.results:
            noise = f" {run.noise}" if run.k else ""
            missed.update({f"K={run.k}{noise}: {reason}": n for reason, n in r.missed.items()})
    lines += ["", "## Gold triples not retrieved, by K and reason (summed over the runs)", "",
              *(f"- {n} — {reason}" for reason, n in sorted(missed.items()))]
    return "\n".join(lines) + "\n"


# ---- names as people say them

PERSON_FACTS: Final = frozenset({
    "date of birth", "date of death", "place of birth", "place of death", "father", "mother",
    "spouse", "country of citizenship", "educated at", "employer", "sibling", "child",
    "cause of death", "place of burial", "award received",
})
"""Predicates whose subject is a person."""
PERSON_ROLES: Final = frozenset({
    "director", "composer", "performer", "producer", "editor", "father", "mother", "spouse",
    "child", "sibling",
})
"""Predicates whose object is a person."""
NAME_KINDS: Final = ("surname", "given name", "without middle names")
SHORT_RECALL_TARGET: Final = 0.85
FULL_RECALL_TARGET: Final = 0.97
SHORT_EM_SHARE: Final = 0.9
LOWER_RECALL_TARGET: Final = 0.95
_NAME_WORD = re.compile(r"[A-Z][a-z]+(?:['-][A-Za-z]+)*")
_ROMAN = re.compile(r"[IVXLC]+", re.IGNORECASE)
_ASIDE_AFTER = re.compile(r"^\s*\([^()]*\)")
_DISAMBIGUATED = re.compile(r"\s*\([^()]*\)$")


@dataclass(frozen=True)
class ShortName:
    """A question that names a person in full, and the same question with the name cut."""

    full: Question
    short: Question
    kind: str
    """One of NAME_KINDS."""
    name: str
    said: str


def people(questions: Iterable[Question]) -> set[ox.Term]:
    """The gold entities that are people, by the facts the questions' evidence states."""
    found: set[ox.Term] = set()
    for question in questions:
        for triple in question.evidence:
            predicate = triple.predicate.value.rsplit("/", 1)[-1].replace("-", " ")
            if predicate in PERSON_FACTS:
                found.add(triple.subject)
            if predicate in PERSON_ROLES:
                found.add(triple.object)
    return found


def shortened(question: Question, index: int, names: Sequence[str]) -> ShortName | None:
    """The question with the first of `names` (its gold facts' people) that it writes as a full
    name — two to four capitalised words, no title, ordinal or initial — cut as people say
    it: by surname, by given name, or without the middle names, the kind chosen by `index`
    among those the name allows; a parenthesis that disambiguates the name goes with the rest
    ("Adam (Architect)'s" → "Adam's")."""
    for name in names:
        found = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question.question,
                          re.IGNORECASE)
        if found is None:
            continue
        said = found.group()
        parts = said.split()
        if not 2 <= len(parts) <= 4 or not all(_NAME_WORD.fullmatch(p) for p in parts):
            continue
        if _ROMAN.fullmatch(parts[-1]) or found.start() == 0 or any(
                part.lower() in NAME_CONNECTORS for part in parts):
            continue
        kinds = NAME_KINDS if len(parts) >= 3 else NAME_KINDS[:2]
        kind = kinds[index % len(kinds)]
        cut = {"surname": parts[-1], "given name": parts[0],
               "without middle names": f"{parts[0]} {parts[-1]}"}[kind]
        rest = question.question[found.end():]
        text = question.question[: found.start()] + cut + _ASIDE_AFTER.sub("", rest, count=1)
        short = Question(question.id, question.question_type, text, question.answer,
                         question.evidence)
        return ShortName(question, short, kind, name, cut)
    return None


def short_names(store: EmbeddedStore, questions: Sequence[Question]) -> list[ShortName]:
    """Every question that names a person in full, with that name cut (`shortened`)."""
    label = ox.NamedNode(vocab.RDFS + "label")
    found = []
    for i, question in enumerate(questions):
        names = []
        for person in sorted(people([question]), key=lambda term: term.value):
            quads = store.oxigraph.quads_for_pattern(person, label, None, ox.DefaultGraph())
            names += [_DISAMBIGUATED.sub("", quad.object.value) for quad in quads][:1]
        variant = shortened(question, i, names)
        if variant is not None:
            found.append(variant)
    return found


def lower_case(question: Question) -> Question:
    return Question(question.id, question.question_type, question.question.lower(),
                    question.answer, question.evidence)


@dataclass
class NamesEvaluation:
    variants: list[ShortName]
    full: list[QuestionResult]
    short: list[QuestionResult]
    lower_short: list[QuestionResult]
    """The questions with the name cut short, in lower case."""
    written: list[QuestionResult]
    """Every question as the file writes it."""
    lower: list[QuestionResult]
    """Every question in lower case."""


def evaluate_names(corpus: Path, questions: Path, docs: Path, rel_info: Path,
                   limit: int | None = None, progress: bool = False) -> NamesEvaluation:
    """The questions that name a person in full, then the same with that name cut, as written
    and in lower case; and every question as written, then in lower case."""
    with tempfile.TemporaryDirectory() as work:
        store, twowiki, _ = build_store(corpus, questions, docs, rel_info, Path(work))
    rag = GraphRag(store, OfflineBackend())
    chosen = twowiki.questions[:limit] if limit is not None else twowiki.questions
    variants = short_names(store, chosen)

    def run(asked: Sequence[Question], what: str) -> list[QuestionResult]:
        results = [run_question(rag, question, twowiki) for question in asked]
        if progress:
            print(f"{what}: {len(results)} questions", file=sys.stderr)
        return results

    return NamesEvaluation(
        variants,
        run([v.full for v in variants], "full names"),
        run([v.short for v in variants], "short names"),
        run([lower_case(v.short) for v in variants], "short names in lower case"),
        run(chosen, "as written"),
        run([lower_case(q) for q in chosen], "lower case"),
    )


def _names_row(name: str, results: Sequence[QuestionResult]) -> str:
    cells = [
        name, str(len(results)),
        f"{_mean([r.recall for r in results]):.3f}",
        str(sum(r.recall == 1.0 for r in results)),
        str(sum(MISSED_NO_SEED in r.missed for r in results)),
        f"{_mean([r.selection_precision for r in results]):.3f}",
        f"{_mean([r.selection_recall for r in results]):.3f}",
        f"{_mean([r.exact for r in results]):.3f}",
        f"{_mean([r.f1 for r in results]):.3f}",
    ]
    return "| " + " | ".join(cells) + " |"


def render_names(ev: NamesEvaluation) -> str:
    verdict = lambda ok: "pass" if ok else "**FAIL**"  # noqa: E731
    def by_kind(results: Sequence[QuestionResult]) -> list[str]:
        """A row per kind of cut, of those the questions took."""
        kinds: dict[str, list[QuestionResult]] = defaultdict(list)
        for variant, result in zip(ev.variants, results):
            kinds[variant.kind].append(result)
        return [_names_row(f"— by {kind}" if kind != NAME_KINDS[2] else f"— {kind}", kinds[kind])
                for kind in NAME_KINDS if kinds[kind]]

    full_recall = _mean([r.recall for r in ev.full])
    short_recall = _mean([r.recall for r in ev.short])
    full_em, short_em = _mean([r.exact for r in ev.full]), _mean([r.exact for r in ev.short])
    lower_recall = _mean([r.recall for r in ev.lower])
    examples = [ev.variants[i] for i in range(0, len(ev.variants), max(len(ev.variants) // 5, 1))]
    lines = [
        "# Evaluation of names as people say them: 2WikiMultiHopQA with names cut short",
        "",
        "Written by `python -m benchmarks.evaluate --names`; the same KG, backend and limits as "
        "`evaluation.md`. The questions that name a person (an end of a gold fact about a "
        "person) by a full name of two to four capitalised words, as the file writes them, "
        "then the same questions with that one name cut as people say it "
        "(`benchmarks.evaluate.shortened`): by surname, by given name, or without the middle "
        "names, the kind taken in turn among those the name allows, then those in lower case; "
        "and every question as written, then in lower case. "
        f"Python {platform.python_version()}, {platform.machine()}.",
        "",
        "| questions | count | retrieval recall | full recall | no seed | selection precision "
        "| selection recall | EM | F1 |",
        "|---|---|---|---|---|---|---|---|---|",
        _names_row("naming a person in full", ev.full),
        _names_row("the same, the name cut short", ev.short),
        *by_kind(ev.short),
        _names_row("the same, cut short, in lower case", ev.lower_short),
        *by_kind(ev.lower_short),
        _names_row("every question as written", ev.written),
        _names_row("every question in lower case", ev.lower),
        "",
        "\"no seed\": questions that grounded to no entity at all.",
        "",
        "## Targets",
        "",
        f"- short names: retrieval recall ≥ {SHORT_RECALL_TARGET}: {short_recall:.3f} — "
        f"{verdict(short_recall >= SHORT_RECALL_TARGET)}",
        f"- full names: retrieval recall ≥ {FULL_RECALL_TARGET}: {full_recall:.3f} — "
        f"{verdict(full_recall >= FULL_RECALL_TARGET)}",
        f"- short names: EM ≥ {SHORT_EM_SHARE} × the full names' EM ({full_em:.3f}): "
        f"{short_em:.3f} — {verdict(short_em >= SHORT_EM_SHARE * full_em)}",
        f"- lower case: retrieval recall ≥ {LOWER_RECALL_TARGET}: {lower_recall:.3f} — "
        f"{verdict(lower_recall >= LOWER_RECALL_TARGET)}",
        "",
        "## Examples of the cut",
        "",
        *(f"- {v.kind}: \"{v.full.question}\" → \"{v.short.question}\"" for v in examples),
    ]
    return "\n".join(lines) + "\n"


# ---- the results table

def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.1%})" if whole else "0/0"


def _row(name: str, results: Sequence[QuestionResult]) -> str:
    anchored = sum(r.anchored_selected for r in results)
    cells = [
        name, str(len(results)),
        f"{_mean([r.recall for r in results]):.3f}",
        str(sum(r.recall == 1.0 for r in results)),
        f"{_mean([r.selection_precision for r in results]):.3f}",
        f"{_mean([r.selection_recall for r in results]):.3f}",
        f"{_mean([r.exact for r in results]):.3f}",
        f"{_mean([r.f1 for r in results]):.3f}",
        _share(sum(r.trace_reached for r in results), anchored),
        _share(sum(r.trace_exact for r in results), anchored),
    ]
    return "| " + " | ".join(cells) + " |"


def render(ev: Evaluation) -> str:
    results, tw, rd, rt = ev.results, ev.twowiki, ev.redocred, ev.redocred_trace
    by_type: dict[str, list[QuestionResult]] = defaultdict(list)
    for r in results:
        by_type[r.question.question_type].append(r)
    recall = _mean([r.recall for r in results])
    exact = _mean([r.exact for r in results])
    anchored = sum(r.anchored_selected for r in results)
    reached = sum(r.trace_reached for r in results)
    gold_total = sum(r.gold for r in results)
    retrieved_total = sum(r.retrieved_gold for r in results)
    missed: Counter[str] = Counter()
    for r in results:
        missed.update(r.missed)
    capped = sum(r.retrieved >= 150 for r in results)
    errors = [r for r in results if r.error]
    verdict = lambda ok: "pass" if ok else "**FAIL**"  # noqa: E731
    lines = [
        "# Evaluation on 2WikiMultiHopQA (+ Re-DocRED distractors)",
        "",
        "Written by `python -m benchmarks.evaluate`; what is measured and how is in the module's",
        "docstring. Offline backend, default retrieval limits (path length 2, 30 edges per node",
        "and hop, 50 seeds, 150 edges).",
        "",
        f"Python {platform.python_version()}, {platform.machine()}. Store built and loaded in "
        f"{ev.build_seconds:.1f} s ({ev.store_quads:,} quads); {len(results)} questions in "
        f"{ev.query_seconds:.1f} s ({1000 * ev.query_seconds / max(len(results), 1):.0f} ms each).",
        "",
        "## The knowledge graph",
        "",
        f"- 2Wiki: {tw.documents:,} paragraphs (documents), {tw.chunks:,} sentences (chunks), "
        f"{tw.facts:,} distinct gold triples, of which {len(tw.anchors):,} anchored in a sentence "
        f"and {sum(tw.unanchored.values())} loaded without provenance: "
        + "; ".join(f"{n} — {reason}" for reason, n in tw.unanchored.most_common()) + ". "
        f"{tw.names_resolved} object names stood for the one paragraph title they disambiguate "
        "(\"Ray Taylor\" → \"Ray Taylor (director)\").",
        f"- Re-DocRED: {rd.documents} documents, {rd.chunks:,} sentences, {rd.labels:,} labels, "
        f"{rd.facts:,} distinct facts; {rd.without_evidence:,} labels without evidence "
        f"(their facts carry no provenance from them); {len(rd.evidence):,} facts with evidence.",
        "",
        "## Per question (means over questions)",
        "",
        "| question type | questions | retrieval recall | full recall | selection precision | "
        "selection recall | EM | F1 | trace reaches doc + sentence | trace exact |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(_row(name, rs) for name, rs in sorted(by_type.items())),
        _row("**all**", results),
        "",
        "## Targets",
        "",
        f"- retrieval recall ≥ {RECALL_TARGET}: {recall:.3f} — {verdict(recall >= RECALL_TARGET)}"
        f" (over all gold triples: {_share(retrieved_total, gold_total)}).",
        f"- answer EM ≥ {EM_TARGET}: {exact:.3f} — {verdict(exact >= EM_TARGET)} (by question "
        "type in the table above).",
        f"- trace correctness 100 % of anchored selected edges: {_share(reached, anchored)} — "
        f"{verdict(reached == anchored)}. Selected gold triples without an anchor that "
        f"nevertheless got sources: {sum(r.unanchored_selected_with_sources for r in results)}. "
        f"Final-message sources equal to a Python walk of the store: "
        f"{_share(sum(r.sources_equal_walk for r in results), sum(r.selected for r in results))}"
        " of selected edges.",
        f"- Re-DocRED trace (Python walk over the store, all {rt.facts:,} facts with evidence): "
        f"chunks exactly the evidence sentences {_share(rt.exact, rt.facts)}; chunk text equals "
        f"the sentence {_share(rt.text_ok, rt.facts)}; document title right "
        f"{_share(rt.title_ok, rt.facts)}.",
        "",
        "## Gold triples not retrieved",
        "",
        f"{gold_total - retrieved_total} of {gold_total} gold triples were not in the retrieved "
        f"subgraph; {capped} question{'' if capped == 1 else 's'} hit the subgraph cap of 150 edges.",
        "",
        *(f"- {n} — {reason}" for reason, n in missed.most_common()),
    ]
    if errors:
        lines += ["", f"{len(errors)} questions ended in an error; the first: {errors[0].error}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, parts in (("--corpus", CORPUS), ("--questions", QUESTIONS), ("--redocred", DOCS),
                        ("--rel-info", REL_INFO)):
        parser.add_argument(flag, type=Path, help="default: $TGSPARQL_DATA/" + "/".join(parts))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--hubs", nargs="?", const=",".join(map(str, HUB_SIZES)),
                        metavar="K,K,...",
                        help="run the hub stress instead, with these noise edges per entity")
    parser.add_argument("--hub-orders", default="before,after",
                        help="where the noise is loaded: before, after or both (before,after)")
    parser.add_argument("--hub-noise", default=",".join(NOISE_KINDS),
                        help="which noise: made-up, real, restating or several, comma-separated")
    parser.add_argument("--hub-stores", default="memory,disk",
                        help="which stores: memory, disk or both (memory,disk)")
    parser.add_argument("--hub-out", type=Path, default=DEFAULT_HUB_OUT)
    parser.add_argument("--hub-jobs", type=int, default=1, metavar="N",
                        help="run the hub stress's K and noise kinds in N processes at a time")
    parser.add_argument("--names", action="store_true",
                        help="evaluate names as people say them instead: cut short, lower case")
    parser.add_argument("--names-out", type=Path, default=DEFAULT_NAMES_OUT)
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be a positive integer")
    if args.hub_jobs < 1:
        parser.error("--hub-jobs must be a positive integer")
    try:
        data = (args.corpus or data_path(*CORPUS), args.questions or data_path(*QUESTIONS),
                args.redocred or data_path(*DOCS), args.rel_info or data_path(*REL_INFO))
    except OSError as error:  # MissingData
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.hubs is not None:
        try:
            sizes = [int(k) for k in args.hubs.split(",")]
        except ValueError:
            parser.error(f"--hubs takes integers separated by commas, not {args.hubs!r}")
        orders = args.hub_orders.split(",")
        stores = args.hub_stores.split(",")
        kinds = args.hub_noise.split(",")
        if any(k < 0 for k in sizes) or not set(orders) <= {"before", "after"} or not set(
                stores) <= {"memory", "disk"} or not set(kinds) <= set(NOISE_KINDS):
            parser.error("--hubs sizes must be >= 0; --hub-orders before/after; "
                         "--hub-stores memory/disk; --hub-noise " + "/".join(NOISE_KINDS))
        args.hub_out.parent.mkdir(parents=True, exist_ok=True)

        def write(runs: list[HubRun]) -> None:
            args.hub_out.write_text(render_hubs(runs, len(runs[0].results)), encoding="utf-8")

        on_disk = [name == "disk" for name in stores]
        try:
            if args.hub_jobs > 1:
                hub_stress_in_jobs(*data, sizes, orders, on_disk, args.limit, kinds,
                                   args.hub_jobs, on_run=write)
            else:
                hub_stress(*data, sizes, orders, on_disk, args.limit, progress=True,
                           kinds=kinds, on_run=write)
        except (DatasetError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"wrote {args.hub_out}")
        return 0
    if args.names:
        return _written(args.names_out,
                        lambda: render_names(evaluate_names(*data, args.limit, progress=True)))
    return _written(args.out, lambda: render(evaluate(*data, args.limit, progress=True)))


def _written(out: Path, table: Callable[[], str]) -> int:
    """Write the table the evaluation renders; 1 when the data cannot be read."""
    try:
        text = table()
    except (DatasetError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
