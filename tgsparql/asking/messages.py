"""The streamed messages of a GraphRAG query (docs/spec.md §6)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox


@dataclass(frozen=True)
class Error:
    type: str
    message: str


@dataclass(frozen=True)
class Source:
    """Where one selected edge came from: the chunk, page and document that state it."""

    edge_selection: str | None
    """The recorded edge selection; None when the session was not recorded."""
    edge: ox.Triple
    document: str
    title: str | None = None
    page: str | None = None
    page_number: int | None = None
    chunk: str | None = None
    chunk_index: int | None = None
    char_offset: int | None = None
    char_length: int | None = None
    text: str | None = None
    """The evidence span when one was recorded, else the chunk text."""
    citations: tuple[str, ...] = ()
    """The sentences of the answer that cite this edge."""

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["edge"] = rdf_text(self.edge)
        data["citations"] = list(self.citations)
        return data


@dataclass(frozen=True)
class GroundedName:
    """A name of the question that grounded as part of a label: the entity it grounded to, and
    where that entity ranked among the candidates carrying the name."""

    name: str
    entity: str
    label: str
    rank: int
    candidates: int

    @property
    def text(self) -> str:
        """For a person: "Vermeer → Johannes Vermeer (1 of 3 candidates)"."""
        return grounded_text(self.name, self.label, self.rank, self.candidates)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def grounded_text(name: str, label: str, rank: int, candidates: int) -> str:
    """How a name's grounding reads, here and wherever the record is shown."""
    return f"{name} → {label} ({rank} of {candidates} candidate{'' if candidates == 1 else 's'})"


@dataclass
class GraphRagResponse:
    error: Error | None = None
    response: str = ""
    end_of_stream: bool = False
    explain_id: str | None = None
    explain_collection: str | None = None
    message_type: str = ""
    end_of_session: bool = False
    explain_triples: Sequence[ox.Triple] = ()
    """Beyond: the triples just recorded, so a client needs no round trip."""
    sources: list[Source] = field(default_factory=list)
    """Beyond: on the final message, the sources behind the selected edges."""
    names: list[GroundedName] = field(default_factory=list)
    """Beyond: on the final message, the names that grounded as part of a seed's label."""
    warnings: list[str] = field(default_factory=list)
    """Beyond: on the final message, what is wrong with the answer (cites nothing, cites
    unselected ids, sentences without a citation, cut short)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON object with terms in N-Triples / RDF 1.2 syntax."""
        return {
            "error": None
            if self.error is None
            else {"type": self.error.type, "message": self.error.message},
            "response": self.response,
            "end_of_stream": self.end_of_stream,
            "explain_id": self.explain_id,
            "explain_collection": self.explain_collection,
            "message_type": self.message_type,
            "end_of_session": self.end_of_session,
            "explain_triples": [
                {"s": str(t.subject), "p": str(t.predicate), "o": rdf_text(t.object)}
                for t in self.explain_triples
            ],
            "sources": [source.to_json() for source in self.sources],
            "names": [name.to_json() for name in self.names],
            "warnings": list(self.warnings),
        }


def rdf_text(term: ox.NamedNode | ox.Literal | ox.BlankNode | ox.Triple) -> str:
    """A term in RDF 1.2 N-Triples syntax, triple terms included."""
    return f"<<( {term} )>>" if isinstance(term, ox.Triple) else str(term)
