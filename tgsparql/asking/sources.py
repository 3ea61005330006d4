"""The chunks that state a fact: what the answer's sources are built from when a session is
recorded, and what `tgsparql.record` reads back as an edge's sources."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from tgsparql.asking.messages import Source
from tgsparql.rdf.terms import term_integer, term_text
from tgsparql.stores.store import Solution, Store


@dataclass(frozen=True)
class ChunkSource:
    """One chunk that states a fact: where it sits, and the words that state it."""

    subgraph: str
    chunk: str
    document: str
    title: str | None = None
    page: str | None = None
    page_number: int | None = None
    chunk_index: int | None = None
    char_offset: int | None = None
    char_length: int | None = None
    chunk_text: str | None = None
    evidence: str | None = None
    evidence_offset: int | None = None
    evidence_length: int | None = None
    unsupported: str | None = None
    """Why the facts of its subgraph are unsupported (a tg: reason's IRI), when ingest kept
    them all the same; None for supported ones."""

    def as_source(self, edge_selection: str | None, edge: ox.Triple,
                  citations: tuple[str, ...] = ()) -> Source:
        """The answer-side view (docs/spec.md §6 sources): the evidence span, else the chunk
        text, with the answer's sentences that cite the edge."""
        return Source(
            edge_selection=edge_selection,
            edge=edge,
            document=self.document,
            title=self.title,
            page=self.page,
            page_number=self.page_number,
            chunk=self.chunk,
            chunk_index=self.chunk_index,
            char_offset=self.char_offset,
            char_length=self.char_length,
            text=self.evidence if self.evidence is not None else self.chunk_text,
            citations=citations,
        )

    def to_json(self) -> dict[str, Any]:
        """Its fields; `unsupported` only when it is."""
        return {name: value for name, value in self.__dict__.items()
                if name != "unsupported" or value is not None}


def facts_sources(store: Store, facts: Sequence[ox.Triple]) -> dict[ox.Triple, list[ChunkSource]]:
    """Each fact → every chunk that states it, from one query; facts without a source are absent."""
    if not facts:
        return {}
    rows = store.run("_trace/fact_sources", facts=list(dict.fromkeys(facts))).rows
    found: dict[ox.Triple, set[ChunkSource]] = {}
    for row in rows:
        source = chunk_source(row)
        if source is not None:
            fact = ox.Triple(row["s"], row["p"], row["o"])  # type: ignore[arg-type]
            found.setdefault(fact, set()).add(source)
    return {fact: sorted_sources(sources) for fact, sources in found.items()}


_SPANS = (("evidence", "evidenceOffset", "evidenceLength"),
          ("chunkEvidence", "chunkEvidenceOffset", "chunkEvidenceLength"))
"""The evidence span's columns: the subgraph's, then the chunk's."""


def chunk_source(row: Solution) -> ChunkSource | None:
    if "document" not in row or "chunk" not in row or "subgraph" not in row:
        return None
    text, offset, length = next((span for span in _SPANS if span[0] in row), _SPANS[0])
    return ChunkSource(
        subgraph=row["subgraph"].value,
        chunk=row["chunk"].value,
        document=row["document"].value,
        title=term_text(row.get("title")),
        page=term_text(row.get("page")),
        page_number=term_integer(row.get("pageNumber")),
        chunk_index=term_integer(row.get("chunkIndex")),
        char_offset=term_integer(row.get("charOffset")),
        char_length=term_integer(row.get("charLength")),
        chunk_text=term_text(row.get("chunkText")),
        evidence=term_text(row.get(text)),
        evidence_offset=term_integer(row.get(offset)),
        evidence_length=term_integer(row.get(length)),
        unsupported=term_text(row.get("unsupported")),
    )


def sorted_sources(sources: Iterable[ChunkSource]) -> list[ChunkSource]:
    return sorted(
        sources,
        key=lambda s: (s.document, _number_key(s.page_number), _number_key(s.chunk_index),
                       s.chunk, s.subgraph),
    )


def _number_key(number: int | None) -> int:
    return number if number is not None else -1
