"""What changed: a recorded session read as a golden question checks it (`observe`), frozen into
a golden entry (`freeze`), and compared with one (`compare`): edges selected and no longer, new
edges, sources, answer, citations, grounding, unselected hops and the validation verdict, each a
`Change` that names the edge and its document."""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import pyoxigraph as ox

from tgsparql.asking.labels import LabelTriple, fetch_labels, label_of, label_terms
from tgsparql.asking.messages import rdf_text
from tgsparql.asking.sources import ChunkSource, facts_sources
from tgsparql.rdf import vocab
from tgsparql.rdf.terms import Term
from tgsparql.record.conformance import validate_session, verdict
from tgsparql.record.explain import explain_session, list_sessions
from tgsparql.record.golden import (
    AnswerRule, ExpectedEdge, GoldenQuestion, SourceMark, Verdict,
)
from tgsparql.record.readback import Explanation
from tgsparql.stores.store import Store

Check = Literal["session", "edges", "sources", "answer", "citations", "grounding", "hops",
                "validation"]
TOLERABLE: Final[tuple[Check, ...]] = ("answer", "citations", "edges", "sources", "grounding",
                                       "hops", "validation")
"""The checks `--tolerate` may turn into reports that do not fail."""
VARY_WITH_AN_LLM: Final = frozenset({"answer", "citations", "edges", "hops"})
"""The checks whose outcome an LLM's choices decide, so a rerun on the same KG may differ."""
ANSWER_SHOWN = 300
"""Characters of an answer a change quotes."""
SESSIONS_READ = 10_000
"""Sessions of a collection `--from-sessions` and `--against` read at most, newest first: as
many as every endpoint sorts (Virtuoso 7 refuses to sort more)."""


@dataclass(frozen=True)
class ObservedEdge:
    """A selected edge as a golden question checks it."""

    edge: ox.Triple
    labels: LabelTriple | None
    sources: tuple[SourceMark, ...]
    """Where the provenance states the fact now: document, page, chunk, evidence sentence."""
    documents: tuple[str, ...]
    """The documents the session's record names for it, as they were when it was selected."""
    cited: bool


@dataclass(frozen=True)
class Observed:
    """A recorded session, read as a golden question checks it."""

    session: str
    question: str
    status: str | None
    error: str | None
    seeds: tuple[str, ...]
    edges: tuple[ObservedEdge, ...]
    answer: str | None
    unselected_hops: int | None
    """The most retrieved-but-unselected edges between a seed and a selected edge; None when a
    selected edge is not connected to a seed through the recorded retrieved edges."""
    validation: Verdict | None = None
    """None: not validated."""
    validation_line: str = ""

    @property
    def cited_places(self) -> tuple[SourceMark, ...]:
        """Document, page and chunk of every source of every edge the answer cites."""
        places = {SourceMark(s.document, s.page, s.chunk) for e in self.edges if e.cited
                  for s in e.sources}
        return tuple(sorted(places, key=_mark_key))

    def as_recorded(self) -> Observed:
        """The session with each edge's sources the documents its record names, as they were
        when it ran: what an earlier run is compared on, whatever the provenance says now."""
        edges = tuple(replace(edge, sources=tuple(SourceMark(d) for d in edge.documents))
                      for edge in self.edges)
        return replace(self, edges=edges)


def observe(store: Store, collection: vocab.Collection, session: str, *,
            validate: bool = False) -> Observed:
    """The session as recorded (SessionNotFound for an unknown one); `validate` checks its
    record against the bundled shapes too."""
    explanation = explain_session(store, collection, session, unselected=sys.maxsize)
    recorded = _fact_documents(explanation)
    edges = tuple(
        ObservedEdge(edge.edge, edge.labels, tuple(_marks(edge.sources)),
                     recorded.get(edge.edge_selection, ()), bool(edge.citations))
        for edge in explanation.selected)
    observed = Observed(
        session=explanation.session, question=explanation.question or "",
        status=explanation.status, error=explanation.error,
        seeds=tuple(sorted(iri for iri, _ in explanation.entities)), edges=edges,
        answer=explanation.answer, unselected_hops=_unselected_hops(explanation))
    if not validate:
        return observed
    report = validate_session(store, explanation.session)
    return replace(observed, validation="violates" if report.violations else "conforms",
                   validation_line=verdict(report))


def _marks(sources: Iterable[ChunkSource]) -> list[SourceMark]:
    marks = {SourceMark(s.document, s.page_number, s.chunk_index, s.evidence) for s in sources}
    return sorted(marks, key=_mark_key)


def _mark_key(mark: SourceMark) -> tuple[str, int, int, str]:
    return (mark.document, -1 if mark.page is None else mark.page,
            -1 if mark.chunk is None else mark.chunk, mark.sentence or "")


def _fact_documents(explanation: Explanation) -> dict[str, tuple[str, ...]]:
    """Each edge selection's recorded documents (tg:factDocument), by its IRI."""
    found: dict[str, set[str]] = {}
    for triple in explanation.triples:
        if triple.predicate == vocab.TG_FACT_DOCUMENT and isinstance(triple.object, ox.NamedNode):
            found.setdefault(triple.subject.value, set()).add(triple.object.value)
    return {iri: tuple(sorted(documents)) for iri, documents in found.items()}


def _unselected_hops(explanation: Explanation) -> int | None:
    """Walk the retrieved edges from the seeds, a selected edge costing nothing and any other
    one hop: the most hops any selected edge lies away (0-1 breadth-first search)."""
    if not explanation.selected:
        return 0
    cost: dict[Term, list[tuple[Term, int]]] = {}
    for edges, weight in (([e.edge for e in explanation.selected], 0),
                          ([e.edge for e in explanation.unselected], 1)):
        for edge in edges:
            cost.setdefault(edge.subject, []).append((edge.object, weight))
            cost.setdefault(edge.object, []).append((edge.subject, weight))
    distance: dict[Term, int] = {}
    queue: deque[tuple[Term, int]] = deque((ox.NamedNode(iri), 0)
                                           for iri, _ in explanation.entities)
    while queue:
        node, hops = queue.popleft()
        if node in distance and distance[node] <= hops:
            continue
        distance[node] = hops
        for neighbour, weight in cost.get(node, []):
            if weight:
                queue.append((neighbour, hops + 1))
            else:
                queue.appendleft((neighbour, hops))
    reached = [min(distance.get(e.edge.subject, sys.maxsize),
                   distance.get(e.edge.object, sys.maxsize)) for e in explanation.selected]
    worst = max(reached)
    return None if worst == sys.maxsize else worst


class FreezeError(ValueError):
    """A session that cannot be frozen: one that did not complete."""


def freeze(observed: Observed) -> GoldenQuestion:
    """The golden entry that holds exactly what the session shows: its edges (no others) with
    their sources and whether the answer cites each, the documents it cites, its answer, seeds,
    unselected hops and (when validated) verdict. Only a complete session is frozen."""
    if observed.status != "complete":
        raise FreezeError(f"session {observed.session} did not complete "
                          f"({observed.status or 'open'}"
                          + (f": {observed.error}" if observed.error else "")
                          + "); only a complete session can be frozen")
    select = tuple(ExpectedEdge(edge.edge, edge.sources, edge.cited) for edge in observed.edges)
    cited = sorted({place.document for place in observed.cited_places})
    return GoldenQuestion(
        question=observed.question, name=observed.question, select=select, select_only=True,
        cite=tuple(SourceMark(document) for document in cited),
        answer=AnswerRule("exact", observed.answer) if observed.answer is not None else None,
        max_unselected_hops=observed.unselected_hops, validation=observed.validation,
        seeds=observed.seeds)


def sessions_to_freeze(store: Store, collection: vocab.Collection,
                       sessions: Sequence[str] = ()) -> list[str]:
    """The given sessions, or else the newest complete session of each question of the
    collection, oldest question first."""
    if sessions:
        return list(dict.fromkeys(sessions))
    newest: dict[str, str] = {}
    for summary in list_sessions(store, collection, SESSIONS_READ):
        if summary.status == "complete":
            newest.setdefault(summary.question, summary.session)
    return list(reversed(newest.values()))


def newest_session(store: Store, collection: vocab.Collection, question: str) -> str | None:
    """The newest complete session of `question` (exactly) in the collection."""
    for summary in list_sessions(store, collection, SESSIONS_READ, question=question):
        if summary.question == question and summary.status == "complete":
            return summary.session
    return None


@dataclass(frozen=True)
class Change:
    """One difference between what an entry asks and what a session shows. `failing`: it
    breaks what the entry asks; else it is reported only. `tolerated`: failing, but a check
    `--tolerate` names."""

    check: Check
    message: str
    failing: bool = True
    against: str = "golden"
    """What the session was compared with: "golden", or the collection of an earlier run."""
    tolerated: bool = False

    @property
    def fails(self) -> bool:
        return self.failing and not self.tolerated

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "against": self.against, "failing": self.failing,
                "tolerated": self.tolerated, "message": self.message}


@dataclass(frozen=True)
class Known:
    """What the store says now of the edges an entry names: their terms' labels, which are
    still facts of the KG, and where the provenance states each."""

    labels: Mapping[ox.NamedNode, str] = field(default_factory=dict)
    facts: frozenset[ox.Triple] | None = None
    """The edges that are facts of the KG; None where that was not read."""
    stated: Mapping[ox.Triple, tuple[SourceMark, ...]] = field(default_factory=dict)

    def edge(self, edge: ox.Triple, labels: LabelTriple | None = None) -> str:
        """The edge in N-Triples terms, and by its labels."""
        named = labels or tuple(label_of(term, self.labels)
                                for term in (edge.subject, edge.predicate, edge.object))
        return f"{' '.join(rdf_text(t) for t in (edge.subject, edge.predicate, edge.object))} " \
               f"({' — '.join(named)})"


def known(store: Store, entries: Sequence[GoldenQuestion]) -> Known:
    """What the store says now of every edge the entries name, read in three requests."""
    edges = list(dict.fromkeys([e.edge for entry in entries for e in entry.select]
                               + [edge for entry in entries for edge in entry.not_select]))
    if not edges:
        return Known(facts=frozenset())
    facts = {ox.Triple(row["s"], row["p"], row["o"])  # type: ignore[arg-type]
             for row in store.run("golden_facts", facts=edges).rows}
    stated = {fact: tuple(_marks(sources))
              for fact, sources in facts_sources(store, edges).items()}
    return Known(fetch_labels(store, label_terms(edges)), frozenset(facts), stated)


def compare(expected: GoldenQuestion, observed: Observed, known: Known = Known(), *,
            against: str = "golden", tolerate: Iterable[str] = ()) -> list[Change]:
    """Every way `observed` departs from `expected`, most telling first."""
    changes = [*_session(observed), *_grounding(expected, observed),
               *_edges(expected, observed, known), *_citations(expected, observed),
               *_answer(expected, observed), *_hops(expected, observed),
               *_validation(expected, observed)]
    tolerated = frozenset(tolerate)
    return [replace(change, against=against,
                    tolerated=change.failing and change.check in tolerated)
            for change in changes]


def _session(observed: Observed) -> list[Change]:
    if observed.status == "complete":
        return []
    return [Change("session", f"the session did not complete ({observed.status or 'open'})"
                   + (f": {observed.error}" if observed.error else ""))]


def _grounding(expected: GoldenQuestion, observed: Observed) -> list[Change]:
    if expected.seeds is None:
        return []
    lost = [seed for seed in expected.seeds if seed not in observed.seeds]
    new = [seed for seed in observed.seeds if seed not in expected.seeds]
    return ([Change("grounding", f"grounding no longer finds {seed}") for seed in lost]
            + [Change("grounding", f"grounding now also finds {seed}") for seed in new])


def _edges(expected: GoldenQuestion, observed: Observed, known: Known) -> list[Change]:
    selected = {edge.edge: edge for edge in observed.edges}
    changes: list[Change] = []
    for wanted in expected.select:
        edge = selected.get(wanted.edge)
        if edge is None:
            changes.append(Change("edges", _lost(wanted, known)))
            continue
        changes += _sources(wanted, edge, known)
        if wanted.cited is not None and wanted.cited != edge.cited:
            changes.append(Change("citations", ("the answer no longer cites "
                                                if wanted.cited else "the answer now cites ")
                                  + known.edge(edge.edge, edge.labels)))
    named = {wanted.edge for wanted in expected.select}
    if expected.select or expected.select_only:
        changes += [Change("edges", "newly selected: " + known.edge(edge.edge, edge.labels)
                           + _stated(edge.sources), failing=expected.select_only)
                    for edge in observed.edges if edge.edge not in named]
    changes += [Change("edges", "selected, though it must not be: "
                       + known.edge(edge, selected[edge].labels))
                for edge in expected.not_select if edge in selected]
    return changes


def _lost(wanted: ExpectedEdge, known: Known) -> str:
    """An edge no longer selected, with where it was stated and whether the KG still holds it."""
    gone = ("; no longer a fact of the KG"
            if known.facts is not None and wanted.edge not in known.facts else "")
    places = wanted.sources if wanted.sources else known.stated.get(wanted.edge, ())
    return f"no longer selected: {known.edge(wanted.edge)}{gone}{_stated(places)}"


def _stated(places: Sequence[SourceMark]) -> str:
    if not places:
        return ""
    return "; stated in " + "; ".join(place.describe() for place in places)


def _sources(wanted: ExpectedEdge, edge: ObservedEdge, known: Known) -> list[Change]:
    if wanted.sources is None:
        return []
    lost = [mark for mark in wanted.sources if not any(mark.covers(s) for s in edge.sources)]
    new = [source for source in edge.sources
           if not any(mark.covers(source) for mark in wanted.sources)]
    if not lost and not new:
        return []
    said = [f"sources of {known.edge(edge.edge, edge.labels)} changed"]
    said += [f"no longer stated in {mark.describe()}" for mark in lost]
    said += [f"now stated in {source.describe()}" for source in new]
    return [Change("sources", "; ".join(said))]


def _citations(expected: GoldenQuestion, observed: Observed) -> list[Change]:
    if not expected.cite:
        return []
    places = observed.cited_places
    lost = [mark for mark in expected.cite if not any(mark.covers(p) for p in places)]
    documents = {mark.document for mark in expected.cite}
    new = sorted({p.document for p in places if p.document not in documents})
    return ([Change("citations", f"the answer no longer cites {mark.describe()}")
             for mark in lost]
            + [Change("citations", f"the answer now also cites {document}", failing=False)
               for document in new])


def _answer(expected: GoldenQuestion, observed: Observed) -> list[Change]:
    rule = expected.answer
    if rule is None:
        return []
    if observed.answer is None:
        return [Change("answer", f"no answer recorded; expected {_quoted_rule(rule)}")]
    if rule.holds(observed.answer):
        return []
    return [Change("answer", f"answer changed: expected {_quoted_rule(rule)}, got "
                   f"{_quoted(observed.answer)}")]


def _quoted_rule(rule: AnswerRule) -> str:
    return rule.describe() if len(rule.text) <= ANSWER_SHOWN else \
        f"{rule.describe().split(' ', 1)[0]} {_quoted(rule.text)}"


def _quoted(text: str) -> str:
    cut = text if len(text) <= ANSWER_SHOWN else text[: ANSWER_SHOWN - 1] + "…"
    return json.dumps(cut, ensure_ascii=False)


def _hops(expected: GoldenQuestion, observed: Observed) -> list[Change]:
    limit = expected.max_unselected_hops
    if limit is None or (observed.unselected_hops is not None
                         and observed.unselected_hops <= limit):
        return []
    if observed.unselected_hops is None:
        return [Change("hops", "a selected edge is not connected to the question's entities "
                       f"through the retrieved edges (at most {limit} unselected hops allowed)")]
    return [Change("hops", f"{observed.unselected_hops} unselected hops between the question's "
                   f"entities and a selected edge; at most {limit} allowed")]


def _validation(expected: GoldenQuestion, observed: Observed) -> list[Change]:
    if expected.validation is None or observed.validation == expected.validation:
        return []
    wanted = "conform" if expected.validation == "conforms" else "violate the shapes"
    found = observed.validation_line or "was not validated"
    return [Change("validation", f"the record {found}; expected it to {wanted}")]
