"""The librarian: text content by IRI, kept out of the explainability graph (docs/spec.md §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyoxigraph as ox

from tgsparql.rdf.iris import sha256_hex
from tgsparql.rdf.templates import InsertData
from tgsparql.rdf.terms import term_text
from tgsparql.stores.store import Solution, Store


@dataclass(frozen=True)
class Document:
    iri: ox.NamedNode
    content: str
    mime_type: str | None
    sha256: str | None
    title: str | None

    @classmethod
    def from_row(cls, iri: ox.NamedNode, row: Solution) -> Document:
        """The text of `iri` as a row of `library_get.rq` holds it (the session page's query
        reads the answer's text into the same columns)."""
        return cls(
            iri=iri,
            content=term_text(row.get("content")) or "",
            mime_type=term_text(row.get("mimeType")),
            sha256=term_text(row.get("sha256")),
            title=term_text(row.get("title")),
        )

    @property
    def intact(self) -> bool:
        """True when the stored SHA-256 matches the stored text."""
        return self.sha256 == sha256_hex(self.content)


class Librarian(Protocol):
    def put(self, iri: ox.NamedNode, content: str, *, title: str, mime_type: str = ...) -> None: ...

    def get(self, iri: ox.NamedNode) -> Document | None: ...


class StoreLibrarian:
    """Keeps texts in `urn:graph:library` of the same store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.templates = store.templates

    def put(
        self, iri: ox.NamedNode, content: str, *, title: str, mime_type: str = "text/plain"
    ) -> None:
        record = self.record(iri, content, title=title, mime_type=mime_type)
        self.store.update(self.templates.insert_update([record]))

    def record(
        self, iri: ox.NamedNode, content: str, *, title: str, mime_type: str = "text/plain"
    ) -> InsertData:
        """What `put` writes, for an update that also writes what refers to the text."""
        return self.templates.insert_data(
            "library_put",
            document=iri,
            content=content,
            mime_type=mime_type,
            sha256=sha256_hex(content),
            title=title,
        )

    def get(self, iri: ox.NamedNode) -> Document | None:
        rows = self.store.run("library_get", document=iri).rows
        return Document.from_row(iri, rows[0]) if rows else None
