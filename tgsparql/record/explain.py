"""Reading the record back: the list of sessions, and one session explained in full (as data,
and as text for a person)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click
import pyoxigraph as ox

from tgsparql.asking.labels import LabelTriple, best_labels, fetch_labels, label_of, label_terms
from tgsparql.asking.librarian import Document
from tgsparql.asking.messages import GroundedName
from tgsparql.asking.sources import ChunkSource
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds, SessionNotFound, trailing_index
from tgsparql.rdf.terms import Term, edge_of, term_integer, term_text
from tgsparql.record.readback import AnswerCitation, Explanation, RecordedEdge, UnselectedEdge
from tgsparql.record.terminal import one_line, visible
from tgsparql.record.trace import sources_by_edge_selection
from tgsparql.stores.store import Solution, Store


@dataclass(frozen=True)
class SessionSummary:
    session: str
    question: str
    started: str
    ended: str | None
    status: str | None
    error: str | None

    @classmethod
    def from_row(cls, row: Solution) -> SessionSummary:
        """A row of `list_sessions.rq`."""
        return cls(
            session=row["session"].value,
            question=row["question"].value,
            started=row["started"].value,
            ended=term_text(row.get("ended")),
            status=term_text(row.get("status")),
            error=term_text(row.get("error")),
        )

    @property
    def uuid(self) -> str:
        """The session's UUID, which names its page."""
        return SessionIds.from_session_iri(self.session).uuid

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def list_sessions(
    store: Store, collection: vocab.Collection, limit: int, question: str = ""
) -> list[SessionSummary]:
    """The newest `limit` sessions; with `question`, those whose question contains it."""
    rows = store.run("list_sessions", graph=collection.graph, limit=limit,
                     question=question).rows
    return [SessionSummary.from_row(row) for row in rows]


def explain_session(
    store: Store, collection: vocab.Collection, session: str, unselected: int = 0
) -> Explanation:
    """The session as recorded, from one query (`explain_session.rq`): its record, the labels
    of its seed entities and edges, its edges' sources, its answer's text and which of its
    selected edges are still KG facts. `unselected` asks for the first that many retrieved
    edges the selector did not choose, labelled alike."""
    ids = SessionIds.from_session_iri(session)
    read = _Read.of(store.run(
        "explain_session", graph=collection.graph, session=ids.session,
        retrieval=ids.retrieval, selection=ids.selection, answer=ids.answer,
        unselected=unselected > 0).rows)
    if not any(t.subject == ids.session for t in read.triples):
        raise SessionNotFound(f"no session {ids.session.value} in collection {collection.name!r}")
    facts = _Facts(read.triples)
    out = _stages(Explanation(session=ids.session.value, collection=collection.name,
                              triples=read.triples), facts, ids)
    out.citations = _citations(facts, ids.answer)
    selected = _selected(facts, ids.selection)
    seeds = [e for e in facts.all(ids.retrieval, vocab.TG_ENTITY)
             if isinstance(e, ox.NamedNode)]
    chosen = {edge for _, _, edge, _ in selected}
    retrieved = {facts.edge(r) for r in facts.all(ids.retrieval, vocab.TG_RETRIEVED_EDGE)}
    rejected = sorted((e for e in retrieved if e is not None and e not in chosen), key=str)
    out.unselected_count = len(rejected)
    rejected = rejected[:unselected]
    labels = read.labels(
        store, label_terms([e for *_, e, _ in selected] + rejected) + seeds)
    out.unselected = [UnselectedEdge(e, _names(e, labels)) for e in rejected]
    out.entities = sorted((e.value, label_of(e, labels)) for e in seeds)
    out.names = _grounded_names(facts, ids.retrieval, labels)
    for index, iri, edge, reasoning in selected:
        out.selected.append(
            RecordedEdge(
                edge_selection=iri.value,
                edge=edge,
                labels=_names(edge, labels),
                reasoning=reasoning,
                sources=read.sources.get(iri.value, []),
                reasoning_truncated=facts.flag(iri, vocab.TG_TRUNCATED),
                citations=[c for c in out.citations if c.edge_index == index],
            )
        )
    for edge in out.selected:
        edge.holds = edge.edge in read.held
    document_iri = facts.one(ids.answer, vocab.TG_DOCUMENT)
    document = read.documents.get(document_iri) if document_iri is not None else None
    if document is not None:
        out.answer = document.content
        out.answer_intact = document.intact
    return out


@dataclass
class _Read:
    """The rows of `explain_session.rq`, each kind apart by the columns it binds."""

    triples: list[ox.Triple]
    """The record alone: every triple recorded for the session, each once."""
    named: list[tuple[Term, Term | None]]
    """(term, label) for each label of each term the query labelled; label None for none."""
    sources: dict[str, list[ChunkSource]]
    documents: dict[Term, Document]
    """The answer's text, by its document's IRI."""
    held: set[ox.Triple]
    """The selected edges that are facts of the KG now."""

    @classmethod
    def of(cls, rows: list[Solution]) -> _Read:
        triples: dict[ox.Triple, None] = {}
        named: list[tuple[Term, Term | None]] = []
        sources: list[Solution] = []
        documents: dict[Term, Document] = {}
        held: set[ox.Triple] = set()
        for row in rows:
            if "s" in row:
                triples[ox.Triple(row["s"], row["p"], row["o"])] = None  # type: ignore[arg-type]
            elif "term" in row:
                named.append((row["term"], row.get("label")))
            elif "factSubject" in row:
                held.add(ox.Triple(row["factSubject"], row["factPredicate"],  # type: ignore[arg-type]
                                   row["factObject"]))
            elif "answerDocument" in row:
                iri = row["answerDocument"]
                if isinstance(iri, ox.NamedNode):
                    documents.setdefault(iri, Document.from_row(iri, row))
            else:
                sources.append(row)
        return cls(list(triples), named, sources_by_edge_selection(sources), documents, held)

    def labels(self, store: Store, terms: Sequence[ox.NamedNode]) -> dict[ox.NamedNode, str]:
        """One label per term of `terms`, as `fetch_labels` chooses it: from the rows, and for
        a term nested deeper than the query reads (no row names it), by `fetch_labels`, which
        sends no request when there is none."""
        read = {term for term, _ in self.named}
        return {**best_labels(self.named),
                **fetch_labels(store, [term for term in terms if term not in read])}


def _stages(out: Explanation, facts: _Facts, ids: SessionIds) -> Explanation:
    """`out` with what the session's stages recorded of themselves."""
    out.question = facts.text(ids.session, vocab.TG_QUERY)
    out.status = facts.text(ids.session, vocab.TG_STATUS)
    out.error = facts.text(ids.session, vocab.TG_ERROR)
    out.started = facts.text(ids.session, vocab.PROV_STARTED_AT_TIME)
    out.ended = facts.text(ids.session, vocab.PROV_ENDED_AT_TIME)
    out.edge_count = facts.integer(ids.retrieval, vocab.TG_EDGE_COUNT)
    out.retrieved_edges_recorded = len(facts.all(ids.retrieval, vocab.TG_RETRIEVED_EDGE))
    out.concepts = sorted(o.value for o in facts.all(ids.retrieval, vocab.TG_CONCEPT))
    out.invalid_ids = facts.integer(ids.selection, vocab.TG_INVALID_ID_COUNT)
    out.selection_usage = facts.usage(ids.selection)
    out.answer_usage = facts.usage(ids.answer)
    out.answer_truncated = facts.flag(ids.answer, vocab.TG_TRUNCATED)
    out.invalid_citations = facts.integer(ids.answer, vocab.TG_INVALID_CITATION_COUNT)
    out.uncited_sentences = facts.integer(ids.answer, vocab.TG_UNCITED_SENTENCE_COUNT)
    return out


def _grounded_names(
    facts: _Facts, retrieval: ox.NamedNode, labels: Mapping[ox.NamedNode, str]
) -> list[GroundedName]:
    """The retrieval's name groundings in the order recorded, each seed by its label."""
    found = []
    for node in facts.all(retrieval, vocab.TG_NAME_GROUNDING):
        name, seed = facts.text(node, vocab.TG_NAME), facts.one(node, vocab.TG_SEED)
        rank = facts.integer(node, vocab.TG_CANDIDATE_RANK)
        candidates = facts.integer(node, vocab.TG_CANDIDATE_COUNT)
        if (isinstance(node, ox.NamedNode) and isinstance(seed, ox.NamedNode) and name
                and rank is not None and candidates is not None):
            found.append((trailing_index(node.value), GroundedName(
                name, seed.value, label_of(seed, labels), rank, candidates)))
    return [grounded for _, grounded in sorted(found, key=lambda item: item[0])]


def _citations(facts: _Facts, answer: ox.NamedNode) -> list[AnswerCitation]:
    """The answer's citations in answer order."""
    citations: list[AnswerCitation] = []
    for citation in facts.all(answer, vocab.TG_CITATION):
        edge_selection = facts.one(citation, vocab.TG_CITED_EDGE)
        sentence = facts.text(citation, vocab.TG_SENTENCE)
        if isinstance(edge_selection, ox.NamedNode) and isinstance(citation, ox.NamedNode) \
                and sentence is not None:
            citations.append(AnswerCitation(
                citation.value, trailing_index(edge_selection.value), sentence,
                facts.integer(citation, vocab.TG_CHAR_OFFSET),
                facts.integer(citation, vocab.TG_CHAR_LENGTH)))
    citations.sort(key=lambda c: (c.offset if c.offset is not None else -1, c.edge_index, c.iri))
    return citations


def _selected(
    facts: _Facts, selection: ox.NamedNode
) -> list[tuple[int, ox.NamedNode, ox.Triple, str]]:
    """The selection's edge selections as (index, IRI, edge, reason), in index order."""
    selected: list[tuple[int, ox.NamedNode, ox.Triple, str]] = []
    for iri in facts.all(selection, vocab.TG_SELECTED_EDGE):
        edge = facts.edge(facts.one(iri, vocab.TG_EDGE))
        if isinstance(iri, ox.NamedNode) and edge is not None:
            selected.append((trailing_index(iri.value), iri, edge,
                             facts.text(iri, vocab.TG_REASONING) or ""))
    return sorted(selected, key=lambda item: item[0])


def render_text(e: Explanation) -> str:
    """The explanation for a person: what was asked, found, chosen and why, and from where."""
    out: list[str] = []
    add = out.append
    add(click.style("Explanation", bold=True) + f"  {e.session}")
    add(f"  status     {e.status or 'open (not ended)'}"
        + (f" — {visible(e.error)}" if e.error else ""))
    add(f"  asked      {visible(e.question)}")
    add(f"  started    {e.started}" + (f"   ended {e.ended}" if e.ended else ""))
    seeds = ", ".join(visible(label) for _, label in e.entities) or "none"
    add(f"  grounding  concepts: {visible(', '.join(e.concepts)) or 'none'}; seed entities: {seeds}")
    for grounded in e.names:
        add(f"             {visible(grounded.text)}")
    add(f"  retrieved  {e.edge_count if e.edge_count is not None else '?'} edges")
    usage = _usage_text(e.selection_usage)
    invalid = f", {e.invalid_ids} unknown ids dropped" if e.invalid_ids else ""
    add(f"  selected   {len(e.selected)} edges{invalid}{usage}")
    for edge in e.selected:
        add(click.style(f"    [{edge.index}] ", fg="cyan")
            + visible(" — ".join(edge.labels or ()))
            + (click.style("  [no longer a KG fact]", fg="red") if edge.holds is False else ""))
        cut = " [cut: the LLM's reason was longer]" if edge.reasoning_truncated else ""
        add(_wrap("why: " + (edge.reasoning or "") + cut, 8))
        for sentence in edge.cited_sentences:
            add(_wrap(f"cited: “{one_line(sentence)}”", 8))
        if not edge.sources:
            add("        from: no recorded source")
        for source in edge.answer_sources():
            where = f'"{visible(source.title)}"' if source.title else source.document
            if source.page_number is not None:
                where += f", page {source.page_number}"
            if source.chunk_index is not None:
                where += f", chunk {source.chunk_index}"
            if source.char_offset is not None and source.char_length is not None:
                where += f" (characters {source.char_offset}–{source.char_offset + source.char_length})"
            add(f"        from: {where}")
            if source.text:
                add(_wrap(f"“{one_line(source.text)}”", 14))
    if e.answer is not None:
        check = "SHA-256 verified" if e.answer_intact else "SHA-256 MISMATCH"
        cited = sum(1 for edge in e.selected if edge.citations)
        citing = "" if e.invalid_citations is None else (
            f"; cites {cited} of {len(e.selected)} selected edges"
            + (f", {e.invalid_citations} markers naming no selected edge"
               if e.invalid_citations else ""))
        cut = ", cut: the LLM's answer was longer" if e.answer_truncated else ""
        add(f"  answer     ({check}{_usage_text(e.answer_usage)}{citing}{cut})")
        add(_wrap(e.answer, 8))
        for warning in e.warnings:
            add(click.style(f"  warning    {warning}", fg="yellow"))
    return "\n".join(out)


def _usage_text(usage: dict[str, Any]) -> str:
    if not usage:
        return ""
    parts = [str(usage.get("model", "?"))]
    if "in_tokens" in usage or "out_tokens" in usage:
        parts.append(f"{usage.get('in_tokens', '?')} in / {usage.get('out_tokens', '?')} out tokens")
    return " by " + ", ".join(parts)


def _wrap(text: str, indent: int) -> str:
    """`text` filled to the width, on lines of its own: its line breaks become spaces (as
    textwrap makes them) and any other control character shows as an escape."""
    return textwrap.fill(visible(" ".join(text.split())), width=100, initial_indent=" " * indent,
                         subsequent_indent=" " * indent, break_on_hyphens=False,
                         break_long_words=False)



class _Facts:
    """Lookups over the triples of one session, resolving reified statements to triples."""

    def __init__(self, triples: list[ox.Triple]) -> None:
        self.index: dict[tuple[Term, ox.NamedNode], list[Term]] = {}
        for t in triples:
            self.index.setdefault((t.subject, t.predicate), []).append(t.object)

    def all(self, subject: Term, predicate: ox.NamedNode) -> list[Term]:
        return self.index.get((subject, predicate), [])

    def one(self, subject: Term, predicate: ox.NamedNode) -> Term | None:
        found = self.all(subject, predicate)
        return found[0] if found else None

    def text(self, subject: Term, predicate: ox.NamedNode) -> str | None:
        return term_text(self.one(subject, predicate))

    def integer(self, subject: Term, predicate: ox.NamedNode) -> int | None:
        return term_integer(self.one(subject, predicate))

    def flag(self, subject: Term, predicate: ox.NamedNode) -> bool:
        """An xsd:boolean that is there and true."""
        return self.one(subject, predicate) == ox.Literal(True)

    def usage(self, subject: Term) -> dict[str, Any]:
        usage = {
            "model": self.text(subject, vocab.TG_LLM_MODEL),
            "in_tokens": self.integer(subject, vocab.TG_IN_TOKEN),
            "out_tokens": self.integer(subject, vocab.TG_OUT_TOKEN),
        }
        return {k: v for k, v in usage.items() if v is not None}

    def edge(self, reference: Term | None) -> ox.Triple | None:
        return edge_of(reference, lambda statement: (
            self.one(statement, vocab.RDF_SUBJECT), self.one(statement, vocab.RDF_PREDICATE),
            self.one(statement, vocab.RDF_OBJECT)))


def _names(edge: ox.Triple, labels: Mapping[ox.NamedNode, str]) -> LabelTriple:
    return (label_of(edge.subject, labels), label_of(edge.predicate, labels),
            label_of(edge.object, labels))

