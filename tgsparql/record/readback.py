"""A session read back from the record (docs/spec.md §2): the one model `explain`, `trace` and
the session page read into and show their way. Each reader fills what its query reads: a trace
the question, start, status and selected edges with their sources; `explain` everything."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from tgsparql.asking.citations import AnswerCheck
from tgsparql.asking.labels import LabelTriple
from tgsparql.asking.messages import GroundedName, Source, rdf_text
from tgsparql.asking.sources import ChunkSource
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import trailing_index


@dataclass(frozen=True)
class AnswerCitation:
    """One tg:Citation: the answer's sentence that cites a selected edge, where it stands."""

    iri: str
    edge_index: int
    sentence: str
    offset: int | None
    length: int | None

    @property
    def index(self) -> int:
        """Its number among the answer's citations (the IRI's last part)."""
        return trailing_index(self.iri)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RecordedEdge:
    """An edge selection read back: its edge, the selector's reason, the labels its terms are
    named by, every chunk that states it and the answer's citations of it. `explain`, `trace`
    and the session page each show it their way."""

    edge_selection: str
    edge: ox.Triple
    reasoning: str | None = None
    labels: LabelTriple | None = None
    sources: list[ChunkSource] = field(default_factory=list)
    """Every chunk that states the edge, by document, then chunk."""
    reasoning_truncated: bool = False
    """The LLM's reason was longer than the limit: this is its beginning (tg:truncated)."""
    citations: list[AnswerCitation] = field(default_factory=list)
    """The answer's citations of the edge, in answer order."""
    holds: bool | None = None
    """Whether the edge is still a fact of the KG (False: it drifted); None where unchecked."""

    @property
    def index(self) -> int:
        return trailing_index(self.edge_selection)

    @property
    def iri(self) -> str:
        """The edge selection's IRI, as `explain --format json` names it."""
        return self.edge_selection

    @property
    def cited_sentences(self) -> list[str]:
        """The sentences of the answer that cite the edge, by where they stand."""
        return [c.sentence for c in sorted(self.citations, key=lambda c: (c.offset or 0,
                                                                            c.sentence))]

    def answer_sources(self) -> list[Source]:
        """The answer's view of the chunk sources, as the final message carried them."""
        return [source.as_source(self.iri, self.edge, tuple(self.cited_sentences))
                for source in self.sources]

    def to_json(self) -> dict[str, Any]:
        """The form `trace --format json` gives it."""
        return {**self.recorded_json(), "sources": [source.to_json() for source in self.sources]}

    def recorded_json(self) -> dict[str, Any]:
        return {
            "edge_selection": self.edge_selection,
            "edge": rdf_text(self.edge),
            "labels": list(self.labels) if self.labels else None,
            "reasoning": self.reasoning,
        }


@dataclass(frozen=True)
class UnselectedEdge:
    """An edge the retrieval offered the selector and the selector did not choose."""

    edge: ox.Triple
    labels: LabelTriple

    def to_json(self) -> dict[str, Any]:
        return {"edge": rdf_text(self.edge), "labels": list(self.labels)}


@dataclass
class Explanation:
    """A session read back: what its stages recorded, its selected edges, its answer. A trace
    reads the question, start, status and selected edges (a document's trace the answer's text
    too); the rest keeps its default."""

    session: str
    collection: str
    question: str | None = None
    status: str | None = None
    error: str | None = None
    started: str | None = None
    ended: str | None = None
    edge_count: int | None = None
    retrieved_edges_recorded: int = 0
    concepts: list[str] = field(default_factory=list)
    entities: list[tuple[str, str]] = field(default_factory=list)
    """Seed entities as (IRI, label)."""
    names: list[GroundedName] = field(default_factory=list)
    """The question's names that grounded as part of a seed's label, in the order recorded."""
    selected: list[RecordedEdge] = field(default_factory=list)
    invalid_ids: int | None = None
    selection_usage: dict[str, Any] = field(default_factory=dict)
    answer: str | None = None
    answer_intact: bool | None = None
    """Whether the answer's SHA-256 in the librarian matches its text."""
    answer_usage: dict[str, Any] = field(default_factory=dict)
    answer_truncated: bool = False
    """The LLM's answer was longer than the limit: `answer` is its beginning (tg:truncated)."""
    invalid_citations: int | None = None
    """Markers in the answer that named no selected edge; None for an answer recorded
    before citations were."""
    uncited_sentences: int | None = None
    """Sentences of the answer that cite no selected edge; None for an answer recorded before
    they were counted."""
    citations: list[AnswerCitation] = field(default_factory=list)
    """Every citation of the answer, in answer order."""
    unselected_count: int = 0
    """Retrieved edges that were not selected."""
    unselected: list[UnselectedEdge] = field(default_factory=list)
    """The first of them (as many as asked for), in the order of their terms."""
    triples: list[ox.Triple] = field(default_factory=list)
    """Every triple recorded for the session, as stored."""

    @property
    def warnings(self) -> list[str]:
        """What a reader should know before trusting the answer, as the final message of its
        session said it (none for an answer recorded before citations were checked)."""
        if self.answer is None or self.invalid_citations is None:
            return []
        return AnswerCheck(len(self.selected), sum(1 for edge in self.selected if edge.citations),
                           self.invalid_citations, self.uncited_sentences or 0,
                           self.answer_truncated).warnings()

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items()
                if k not in ("selected", "triples", "citations", "unselected", "names")}
        data["entities"] = [{"iri": iri, "label": label} for iri, label in self.entities]
        if self.names:  # a question whose names all equal a label reads as before
            data["names"] = [name.to_json() for name in self.names]
        data["selected"] = [_edge_json(edge) for edge in self.selected]
        data["citations"] = [citation.to_json() for citation in self.citations]
        data["warnings"] = self.warnings
        data["unselected"] = [edge.to_json() for edge in self.unselected]
        return data

    def turtle(self) -> str:
        prefixes = {"tg": vocab.TG, "prov": vocab.PROV, "rdfs": vocab.RDFS, "xsd": vocab.XSD}
        data = ox.serialize(self.triples, format=ox.RdfFormat.TURTLE, prefixes=prefixes)
        return data.decode("utf-8") if data else ""


def _edge_json(edge: RecordedEdge) -> dict[str, Any]:
    """A selected edge as `explain --format json` gives it: its sources as the answer's."""
    return {
        "iri": edge.iri,
        "index": edge.index,
        "edge": rdf_text(edge.edge),
        "labels": list(edge.labels or ()),
        "reasoning": edge.reasoning,
        "reasoning_truncated": edge.reasoning_truncated,
        "holds": edge.holds,
        "citations": edge.cited_sentences,
        "sources": [source.to_json() for source in edge.answer_sources()],
    }



