"""Drift of what was recorded (docs/spec.md §2.1): the recorded sessions whose
explanation no longer holds now that the KG, the source graph or the librarian changed.

A session drifted when an edge it selected is no longer a fact of the KG, or when a document
that stated one of its selected facts (tg:factDocument) was removed, ingested again after the
session started, or holds another text than the one it was ingested with. Each distinct
selected edge is looked up once and each named document read once, so the cost follows the
distinct facts and documents, not the sessions; only what drifted is walked back to its
sessions.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pyoxigraph as ox

from tgsparql.asking.labels import LabelTriple, fetch_labels, label_of, label_terms
from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.messages import rdf_text
from tgsparql.rdf.iris import trailing_index
from tgsparql.rdf.terms import Term, oldest_first, term_text
from tgsparql.rdf import vocab
from tgsparql.rdf.vocab import Collection
from tgsparql.record.terminal import one_line, visible
from tgsparql.stores.store import Solution, Store


class SourceDrift(Enum):
    """Why a document no longer stands behind what a session recorded it stated."""

    REMOVED = "removed"
    """No longer a tg:Document of the source graph."""
    TEXT_CHANGED = "text changed"
    """Its text in the librarian is not the text it was ingested with: the SHA-256 its IRI
    names, or the one recorded beside the text, differs from the text's, or the text is gone."""
    REINGESTED = "re-ingested"
    """Extracted again after the session started: its facts and sources may differ."""


@dataclass(frozen=True)
class _Finding:
    """Something of one edge selection that no longer holds."""

    edge_selection: str
    edge: ox.Triple | None

    @property
    def index(self) -> int:
        return trailing_index(self.edge_selection)

    def to_json(self) -> dict[str, Any]:
        return {"edge_selection": self.edge_selection, "index": self.index,
                "edge": rdf_text(self.edge) if self.edge is not None else None}


@dataclass(frozen=True, kw_only=True)
class StaleEdge(_Finding):
    """A selected edge that is no longer a fact of the KG."""

    labels: LabelTriple

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "labels": list(self.labels)}


@dataclass(frozen=True, kw_only=True)
class StaleSource(_Finding):
    """A selected edge whose recorded source document drifted."""

    document: str
    reason: SourceDrift

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "document": self.document, "reason": self.reason.value}


@dataclass
class DriftedSession:
    session: str
    started: str | None
    question: str | None
    edges: list[StaleEdge] = field(default_factory=list)
    sources: list[StaleSource] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "started": self.started, "question": self.question,
                "stale_edges": len(self.edges), "stale_sources": len(self.sources),
                "edges": [edge.to_json() for edge in self.edges],
                "sources": [source.to_json() for source in self.sources]}


@dataclass
class DriftedDocument:
    document: str
    title: str | None
    reason: SourceDrift
    since: str | None
    """When it was last ingested (a re-ingested document: the sessions before drifted)."""
    sessions: int = 0
    edge_selections: int = 0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__, reason=self.reason.value)


@dataclass
class Drift:
    """What drifted in one collection: sessions by start (oldest first), documents by IRI."""

    collection: str
    sessions: list[DriftedSession]
    documents: list[DriftedDocument]

    @property
    def drifted(self) -> bool:
        return bool(self.sessions)

    @property
    def stale_edges(self) -> int:
        return sum(len(session.edges) for session in self.sessions)

    @property
    def stale_sources(self) -> int:
        return sum(len(session.sources) for session in self.sessions)

    def summary(self) -> str:
        if not self.drifted:
            return f"no drift: every recorded explanation of {self.collection!r} still holds"
        return (f"{_count(len(self.sessions), 'session')} drifted in {self.collection!r}: "
                f"{_count(self.stale_edges, 'selected edge')} no longer a KG fact, "
                f"{_count(self.stale_sources, 'source')} whose document drifted "
                f"({_count(len(self.documents), 'document')})")

    def to_json(self) -> dict[str, Any]:
        return {"collection": self.collection, "drifted": self.drifted,
                "stale_edges": self.stale_edges, "stale_sources": self.stale_sources,
                "sessions": [session.to_json() for session in self.sessions],
                "documents": [document.to_json() for document in self.documents]}

    def to_text(self) -> str:
        """For a person: each drifted session with what no longer holds, then the documents."""
        out: list[str] = []
        for session in self.sessions:
            out.append(f"{session.session}  {session.started or '?'}  "
                       f"{_count(len(session.edges), 'stale edge')}, "
                       f"{_count(len(session.sources), 'stale source')}"
                       f"  {one_line(session.question or '', 60)}")
            for edge in session.edges:
                out.append(f"  [{edge.index}] {visible(' — '.join(edge.labels))}: no longer a "
                           f"KG fact  {rdf_text(edge.edge)}")
            for source in session.sources:
                out.append(f"  [{source.index}] source {source.document}: {source.reason.value}")
        if self.documents:
            out.append("documents:")
        for document in self.documents:
            title = f' "{visible(document.title)}"' if document.title else ""
            since = f" at {document.since}" if document.reason is SourceDrift.REINGESTED else ""
            out.append(f"  {document.document}{title}: {document.reason.value}{since}, "
                       f"{_count(document.sessions, 'session')}, "
                       f"{_count(document.edge_selections, 'edge selection')}")
        out.append(self.summary())
        return "\n".join(out)

    def to_csv(self) -> str:
        """One row per finding: a stale edge or a stale source of a session."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["session", "started", "question", "kind", "edge_selection", "subject",
                         "predicate", "object", "document", "reason"])
        for session in self.sessions:
            head = [session.session, session.started or "", session.question or ""]
            for edge in session.edges:
                writer.writerow([*head, "edge", edge.edge_selection, *_parts(edge.edge), "",
                                 "no longer a KG fact"])
            for source in session.sources:
                writer.writerow([*head, "source", source.edge_selection, *_parts(source.edge),
                                 source.document, source.reason.value])
        return text.getvalue()


def find_drift(store: Store, collection: Collection) -> Drift:
    """What no longer holds of the collection's recorded sessions, from three queries."""
    sessions: dict[str, DriftedSession] = {}
    stale = [(row, edge) for row in store.run("drift_edges", graph=collection.graph).rows
             if (edge := _edge(row)) is not None]
    labels = fetch_labels(store, label_terms([edge for _, edge in stale]))
    for row, edge in stale:
        session = _session(sessions, row)
        session.edges.append(StaleEdge(row["edgeSelection"].value, edge, labels=(
            label_of(edge.subject, labels), label_of(edge.predicate, labels),
            label_of(edge.object, labels))))
    documents = _drifted_documents(
        store, store.run("drift_documents", graph=collection.graph).rows)
    if documents:
        _add_sources(store, collection, sessions, documents)
    for session in sessions.values():
        session.edges.sort(key=lambda edge: edge.index)
        session.sources.sort(key=lambda source: (source.index, source.document))
    return Drift(
        collection.name,
        sorted(sessions.values(), key=lambda s: oldest_first(s.started, s.session)),
        sorted((d for d in documents.values() if d.sessions), key=lambda d: d.document),
    )


def _add_sources(store: Store, collection: Collection, sessions: dict[str, DriftedSession],
                 documents: dict[str, DriftedDocument]) -> None:
    """The edge selections whose documents drifted, into their sessions, counted per document."""
    rows = store.run("drift_sources", graph=collection.graph, drifted=[
        _DocumentRow(ox.NamedNode(d.document),
                     None if d.since is None else ox.Literal(d.since, datatype=vocab.XSD_DATETIME))
        for d in documents.values()]).rows
    counted: dict[str, set[str]] = {}
    for row in rows:
        document = documents[row["document"].value]
        session = _session(sessions, row)
        session.sources.append(StaleSource(row["edgeSelection"].value, _edge(row),
                                           document=document.document, reason=document.reason))
        document.edge_selections += 1
        counted.setdefault(document.document, set()).add(session.session)
    for iri, found in counted.items():
        documents[iri].sessions = len(found)


@dataclass(frozen=True)
class _DocumentRow:
    """A drifted document as `drift_sources.rq` takes it."""

    iri: ox.NamedNode
    since: ox.Literal | None


def _drifted_documents(store: Store, rows: Iterable[Solution]) -> dict[str, DriftedDocument]:
    """The named documents that drifted, by IRI, with why (`_drift.rq` judges; a text whose
    hash the store computed otherwise than over UTF-8 is hashed here before it is called
    changed); a document with two extraction activities is judged by the later."""
    found: dict[str, DriftedDocument] = {}
    for row in rows:
        iri = row["document"].value
        reason, since = SourceDrift(row["reason"].value), term_text(row.get("since"))
        if reason is SourceDrift.TEXT_CHANGED and row.get("hashNotNamed") != ox.Literal(True) \
                and _intact(store, row["document"]):
            if row.get("ingested") is None:
                continue
            reason, since = SourceDrift.REINGESTED, term_text(row.get("ingested"))
        known = found.get(iri)
        if known is None or (since or "") > (known.since or ""):
            found[iri] = DriftedDocument(iri, term_text(row.get("title")), reason, since)
    return found


def _intact(store: Store, document: Term) -> bool:
    """Whether the librarian holds the document's text with the SHA-256 of its UTF-8 bytes."""
    text = StoreLibrarian(store).get(document) if isinstance(document, ox.NamedNode) else None
    return text is not None and text.intact


def _session(sessions: dict[str, DriftedSession], row: Solution) -> DriftedSession:
    iri = row["session"].value
    if iri not in sessions:
        sessions[iri] = DriftedSession(iri, term_text(row.get("started")),
                                       term_text(row.get("question")))
    return sessions[iri]


def _edge(row: Solution) -> ox.Triple | None:
    s, p, o = row.get("s"), row.get("p"), row.get("o")
    if isinstance(s, (ox.NamedNode, ox.BlankNode)) and isinstance(p, ox.NamedNode) \
            and o is not None:
        return ox.Triple(s, p, o)
    return None


def _parts(edge: ox.Triple | None) -> list[str]:
    if edge is None:
        return ["", "", ""]
    return [_text(edge.subject), _text(edge.predicate), _text(edge.object)]


def _text(term: Term) -> str:
    return rdf_text(term) if isinstance(term, ox.Triple) else str(term)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
