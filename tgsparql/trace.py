"""Walking selected edges back to the chunks, pages and documents that state them."""

from __future__ import annotations

from collections.abc import Mapping

import pyoxigraph as ox

from tgsparql import vocab
from tgsparql.messages import Source
from tgsparql.provenance import SessionIds
from tgsparql.store import Store
from tgsparql.templates import Templates, Term


def session_sources(
    store: Store,
    templates: Templates,
    collection: str,
    ids: SessionIds,
    edges: Mapping[ox.NamedNode, ox.Triple],
) -> list[Source]:
    """Every source of every selected edge of the session, from one query.

    `edges` maps edge-selection IRIs to their triples, which resolves statement IRIs in the
    reification dialect; sources come back in edge-selection order, then document, then chunk.
    """
    rows = store.select(
        templates.render(
            "trace/session_sources",
            graph=vocab.explainability_graph(collection),
            session=ids.session,
        )
    )
    order = {iri: i for i, iri in enumerate(edges)}
    sources = []
    for row in rows:
        selection = row["edgeSelection"]
        if selection not in edges:
            continue
        sources.append(
            Source(
                edge_selection=selection.value,
                edge=edges[selection],
                document=row["document"].value,
                title=_text(row.get("title")),
                page=_text(row.get("page")),
                page_number=_integer(row.get("pageNumber")),
                chunk=_text(row.get("chunk")),
                chunk_index=_integer(row.get("chunkIndex")),
                char_offset=_integer(row.get("charOffset")),
                char_length=_integer(row.get("charLength")),
                text=_text(row.get("text")),
            )
        )
    sources.sort(
        key=lambda s: (
            order[ox.NamedNode(s.edge_selection)],
            s.document,
            s.chunk_index if s.chunk_index is not None else -1,
            s.chunk or "",
        )
    )
    return sources


def _text(term: Term | None) -> str | None:
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else None


def _integer(term: Term | None) -> int | None:
    if isinstance(term, ox.Literal):
        try:
            return int(term.value)
        except ValueError:
            return None
    return None
