"""Walking recorded edges back to the chunks, pages and documents that state them, and back.

Each question asked of the trace is one query template in `queries/_trace/`; this module only
turns their rows into typed results and trees. `queries/trace/` holds the same queries as a person
pastes them: rendered for an RDF 1.2 store with the default graph names and an example in the
VALUES line (`saved_form`, which a test holds them to).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pyoxigraph as ox

from tgsparql.asking.labels import best_labels, label_of
from tgsparql.asking.messages import Source, rdf_text
from tgsparql.asking.sources import ChunkSource, chunk_source, facts_sources, sorted_sources
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import (
    EDGE_SELECTION_PREFIX, SESSION_PREFIX, UUID, ExtractionIds, SessionIds, pasted_iri,
)
from tgsparql.rdf.headers import header
from tgsparql.rdf.templates import Templates
from tgsparql.rdf.terms import edge_of, oldest_first, term_text
from tgsparql.record.readback import Explanation, RecordedEdge
from tgsparql.record.terminal import one_line, visible
from tgsparql.stores.store import Solution, Store

SAVED_QUERIES = ("document_sessions", "edge_sources", "fact_sources", "session_sources",
                 "session_trace", "session_unselected")
_EXAMPLE_IDS = SessionIds("00000000-0000-0000-0000-000000000000")
_EXAMPLE: dict[str, Any] = {
    "session": _EXAMPLE_IDS.session,
    "edge_selection": _EXAMPLE_IDS.edge_selection(0),
    "document": ExtractionIds("0" * 64).document,
    "facts": [ox.Triple(ox.NamedNode("https://example.org/subject"),
                        ox.NamedNode("https://example.org/predicate"),
                        ox.NamedNode("https://example.org/object"))],
}
"""What the VALUES line of a saved query holds, for a person to replace."""


class TraceError(LookupError):
    """An IRI that names nothing traceable: malformed, or not in the store."""


@dataclass
class EdgeTrace:
    """edge selection → sources."""

    edge: RecordedEdge
    session: str
    kind: Literal["edge"] = "edge"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "session": self.session, **self.edge.to_json()}


@dataclass
class DocumentUse:
    """One session that selected facts of the document: the session read back as far as
    `document_sessions.rq` reads it (its question, start, status, answer text, and the edges
    it selected with the document's chunks that state them), and its answer's IRIs."""

    session: Explanation
    answer: str | None = None
    answer_document: str | None = None

    def to_json(self) -> dict[str, Any]:
        read = self.session
        return {
            "session": read.session,
            "question": read.question,
            "started": read.started,
            "status": read.status,
            "answer": self.answer,
            "answer_document": self.answer_document,
            "answer_text": read.answer,
            "edges": [{**edge.recorded_json(), "chunks": [_chunk_json(s) for s in edge.sources]}
                      for edge in read.selected],
        }


def _chunk_json(source: ChunkSource) -> dict[str, Any]:
    """A chunk of a traced document as `trace --format json` lists it under a session's edge."""
    found = {name: getattr(source, name)
             for name in ("chunk", "subgraph", "chunk_index", "page", "page_number", "evidence")}
    return found | ({"unsupported": source.unsupported} if source.unsupported else {})


@dataclass
class DocumentTrace:
    """document → the sessions and answers that used its facts."""

    document: str
    title: str | None
    sessions: list[DocumentUse] = field(default_factory=list)
    kind: Literal["document"] = "document"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "document": self.document,
            "title": self.title,
            "sessions": [use.to_json() for use in self.sessions],
        }


Trace = Explanation | EdgeTrace | DocumentTrace
"""A session's trace is the session read back as far as `session_trace.rq` reads it."""


def trace_json(found: Trace) -> dict[str, Any]:
    """The trace as `trace --format json` gives it."""
    if not isinstance(found, Explanation):
        return found.to_json()
    return {
        "kind": "session",
        "session": found.session,
        "question": found.question,
        "started": found.started,
        "status": found.status,
        "edges": [edge.to_json() for edge in found.selected],
    }


def sources_by_edge_selection(rows: Iterable[Solution]) -> dict[str, list[ChunkSource]]:
    """Every source of every selected edge in rows of `session_sources.rq` (or of the session
    page's `explain_session.rq`, which walks to them alike): by edge-selection IRI, each edge's
    by document, then chunk; an edge without one is absent."""
    found: dict[str, set[ChunkSource]] = {}
    for row in rows:
        source = chunk_source(row)
        if source is not None:
            found.setdefault(row["edgeSelection"].value, set()).add(source)
    return {iri: sorted_sources(sources) for iri, sources in found.items()}


def session_sources(
    store: Store,
    collection: vocab.Collection,
    ids: SessionIds,
    edges: Mapping[ox.NamedNode, ox.Triple],
) -> list[Source]:
    """The answer's view of the session's sources, from one query (`session_sources.rq`):
    `edges` maps edge-selection IRIs to their triples, which resolves statement IRIs in the
    reification dialect; sources come back in edge-selection order, then document, then
    chunk."""
    found = sources_by_edge_selection(
        _session_rows(store, collection, ids, "_trace/session_sources"))
    return [
        source.as_source(iri.value, triple)
        for iri, triple in edges.items()
        for source in found.get(iri.value, ())
    ]


def session_trace(
    store: Store, collection: vocab.Collection, ids: SessionIds
) -> Explanation | None:
    """session → its selected edges → their sources, from one query (`session_trace.rq`).

    None if the session is not recorded; edges without a source are kept, in index order.
    """
    rows = _session_rows(store, collection, ids, "_trace/session_trace")
    if not rows:
        return None
    edges = _session_edges(rows)
    _label_edges(rows, edges)
    return Explanation(session=ids.session.value, collection=collection.name,
                       **_session_columns(rows[0]), selected=edges)


def edge_sources(
    store: Store, collection: vocab.Collection, edge_selection: ox.NamedNode
) -> list[ChunkSource]:
    """edge selection → every source of its edge, all levels (`edge_sources.rq`)."""
    rows = store.run("_trace/edge_sources", graph=collection.graph,
                     edge_selection=edge_selection).rows
    return sorted_sources(s for s in map(chunk_source, rows) if s is not None)


def fact_sources(store: Store, fact: ox.Triple) -> list[ChunkSource]:
    """fact → every chunk that states it (`fact_sources.rq`), by document then chunk."""
    return facts_sources(store, [fact]).get(fact, [])


def document_sessions(
    store: Store, collection: vocab.Collection, document: ox.NamedNode
) -> DocumentTrace | None:
    """document → sessions and answers that used its facts (`document_sessions.rq`).

    None when the IRI is not a tg:Document of the source graph. Sessions come oldest first.
    """
    rows = store.run("_trace/document_sessions", graph=collection.graph,
                     document=document).rows
    if not rows:
        return None
    out = DocumentTrace(document=document.value, title=term_text(rows[0].get("title")))
    uses: dict[str, DocumentUse] = {}
    used: dict[tuple[str, str], RecordedEdge] = {}
    for row in rows:
        session, selection, edge = row.get("session"), row.get("edgeSelection"), _edge(row)
        if session is None or selection is None or edge is None:
            continue
        use = uses.setdefault(session.value, DocumentUse(
            Explanation(session.value, collection.name, **_session_columns(row),
                        answer=term_text(row.get("answerText"))),
            answer=term_text(row.get("answer")),
            answer_document=term_text(row.get("answerDocument")),
        ))
        key = (session.value, selection.value)
        if key not in used:
            used[key] = RecordedEdge(selection.value, edge, term_text(row.get("reasoning")))
            use.session.selected.append(used[key])
        chunk = chunk_source(row)
        if chunk is not None and chunk not in used[key].sources:
            used[key].sources.append(chunk)
    for use in uses.values():
        use.session.selected.sort(key=lambda e: e.index)
        for edge in use.session.selected:
            edge.sources = sorted_sources(edge.sources)
    _label_edges(rows, used.values())
    out.sessions = sorted(uses.values(),
                          key=lambda u: oldest_first(u.session.started, u.session.session))
    return out


def trace(store: Store, collection: vocab.Collection, iri: str) -> Trace:
    """The tree behind an edge selection, a session (IRI or bare UUID) or a document.

    One query each: the IRI's form says which (docs/spec.md §2), and an edge selection is traced with
    its session's query. Raises TraceError for an IRI that is malformed or names none of these
    in the store.
    """
    text = pasted_iri(iri)
    if text.startswith(EDGE_SELECTION_PREFIX):
        named = SessionIds.from_edge_selection(text)
        if named is None:
            raise TraceError(
                f"malformed edge-selection IRI {iri!r} (expected {EDGE_SELECTION_PREFIX}<uuid>:<n>)"
            )
        ids, _ = named
        session = session_trace(store, collection, ids)
        edge = next((e for e in session.selected if e.edge_selection == text), None) \
            if session is not None else None
        if edge is None:
            raise TraceError(f"no edge selection {text} in collection {collection.name!r}")
        return EdgeTrace(edge=edge, session=ids.session.value)
    if text.startswith(SESSION_PREFIX) or UUID.fullmatch(text):
        try:
            ids = SessionIds.from_session_iri(text)
        except ValueError as error:
            raise TraceError(str(error)) from None
        session = session_trace(store, collection, ids)
        if session is None:
            raise TraceError(f"no session {ids.session.value} in collection {collection.name!r}")
        return session
    try:
        node = ox.NamedNode(text)
    except ValueError:
        raise TraceError(f"not an IRI: {iri!r}") from None
    document = document_sessions(store, collection, node)
    if document is None and store.run("ingest_document_exists", document=node).boolean:
        raise TraceError(f"document {text} has no facts: no subgraph of "
                         f"{vocab.GRAPH_SOURCE.value} derives from it, so nothing traces to it")
    if document is None:
        raise TraceError(
            f"unknown IRI {text}: not an edge selection, a session, or a document of "
            f"{vocab.GRAPH_SOURCE.value}"
        )
    return document


def render_text(found: Trace) -> str:
    """The trace as an indented tree for a person, down to the evidence sentence."""
    out: list[str] = []
    if isinstance(found, Explanation):
        out.append(f"session {found.session}  [{found.status or 'open'}, started {found.started}]")
        out.append(f"  asked: {visible(found.question)}")
        if not found.selected:
            out.append("  no selected edges")
        for edge in found.selected:
            _edge_lines(out, edge, 2)
    elif isinstance(found, EdgeTrace):
        out.append(f"edge selection {found.edge.edge_selection}  (session {found.session})")
        _edge_lines(out, found.edge, 2)
    else:
        title = f"  “{visible(found.title)}”" if found.title else ""
        out.append(f"document {found.document}{title}")
        if not found.sessions:
            out.append("  used by no session")
        for read in (use.session for use in found.sessions):
            out.append(f"  session {read.session}  [{read.status or 'open'}, started "
                       f"{read.started}]")
            out.append(f"    asked: {visible(read.question)}")
            if read.answer is not None:
                out.append(f"    answer: {one_line(read.answer)}")
            for edge in read.selected:
                out.append(f"    [{edge.index}] {_edge_text(edge)}")
                for chunk in edge.sources:
                    out.append(f"        from {_where(chunk.page_number, chunk.chunk_index)}"
                               f"  {chunk.chunk}")
                    if chunk.evidence is not None:
                        out.append(f"          “{one_line(chunk.evidence)}”")
                    out += _unsupported_line(chunk, 10)
    return "\n".join(out)


def _edge_lines(out: list[str], edge: RecordedEdge, indent: int) -> None:
    pad = " " * indent
    out.append(f"{pad}[{edge.index}] {_edge_text(edge)}")
    if edge.reasoning:
        out.append(f"{pad}    why: {one_line(edge.reasoning)}")
    if not edge.sources:
        out.append(f"{pad}    no recorded source")
    for source in edge.sources:
        title = f"“{visible(source.title)}”" if source.title else source.document
        out.append(f"{pad}    document {title}  {source.document}")
        out.append(f"{pad}      {_where(source.page_number, source.chunk_index)}"
                   + _span(" characters", source.char_offset, source.char_length)
                   + f"  {source.chunk}")
        if source.evidence is not None:
            out.append(f"{pad}        sentence"
                       + _span(" at", source.evidence_offset, source.evidence_length)
                       + f": “{one_line(source.evidence)}”")
        elif source.chunk_text is not None:
            out.append(f"{pad}        chunk text: “{one_line(source.chunk_text)}”")
        out += _unsupported_line(source, indent + 8)


def _unsupported_line(source: ChunkSource, indent: int) -> list[str]:
    """What a source kept unsupported says of itself: why it does not back the fact."""
    if source.unsupported is None:
        return []
    return [f"{' ' * indent}kept unsupported: {source.unsupported.rsplit('/', 1)[-1]}"]


def _edge_text(edge: RecordedEdge) -> str:
    return visible(" — ".join(edge.labels) if edge.labels else rdf_text(edge.edge))


def _where(page_number: int | None, chunk_index: int | None) -> str:
    page = f"page {page_number}" if page_number is not None else "no page"
    chunk = f"chunk {chunk_index}" if chunk_index is not None else "chunk ?"
    return f"{page}, {chunk}"


def _span(prefix: str, offset: int | None, length: int | None) -> str:
    if offset is None or length is None:
        return ""
    return f"{prefix} {offset}–{offset + length}"


def _session_columns(row: Solution) -> dict[str, str | None]:
    """The question, start and status of a trace query's row."""
    return {name: term_text(row.get(name)) for name in ("question", "started", "status")}


def _session_rows(
    store: Store, collection: vocab.Collection, ids: SessionIds, query: str
) -> list[Solution]:
    return store.run(query, graph=collection.graph, session=ids.session).rows


_LABELS = ("subjectLabel", "predicateLabel", "objectLabel")



def _session_edges(rows: Iterable[Solution]) -> list[RecordedEdge]:
    """The edge selections of `session_trace.rq` rows with their reasons and sources."""
    edges: dict[str, RecordedEdge] = {}
    sources: dict[str, set[ChunkSource]] = {}
    for row in rows:
        selection, edge = row.get("edgeSelection"), _edge(row)
        if selection is None or edge is None:
            continue
        edges.setdefault(selection.value,
                         RecordedEdge(selection.value, edge, term_text(row.get("reasoning"))))
        found = sources.setdefault(selection.value, set())
        source = chunk_source(row)
        if source is not None:
            found.add(source)
    for iri, edge in edges.items():
        edge.sources = sorted_sources(sources[iri])
    return sorted(edges.values(), key=lambda e: e.index)


def _edge(row: Solution) -> ox.Triple | None:
    """The edge of a row: its triple term, or the triple of its rdf:Statement's parts."""
    edge = row.get("edge")
    return edge_of(edge, lambda statement: (
        (row.get("subject"), row.get("predicate"), row.get("object")) if statement == edge
        else (None, None, None)))


def _label_edges(rows: Sequence[Solution], edges: Iterable[RecordedEdge]) -> None:
    """Name each edge's terms by the labels its rows brought, chosen as for the selector's
    prompt (`best_labels`), so a trace names a term as the prompt did."""
    labels = best_labels(
        (term, label)
        for row in rows
        for edge in [_edge(row)] if edge is not None
        for term, label in zip((edge.subject, edge.predicate, edge.object),
                               (row.get(name) for name in _LABELS))
    )
    for edge in edges:
        triple = edge.edge
        edge.labels = (label_of(triple.subject, labels), label_of(triple.predicate, labels),
                       label_of(triple.object, labels))





def saved_form(name: str) -> str:
    """`queries/trace/{name}.rq`: the template as the code renders it for an RDF 1.2 store with
    the default collection, the VALUES line holding an example, under a header of its form alone
    (it takes no parameter)."""
    template = f"_trace/{name}"
    example = {"graph": vocab.DEFAULT_COLLECTION.graph, **_EXAMPLE}
    declared = header(template)
    return f"# form: {declared.form}\n" + Templates("rdf12").render(
        template, **{key: example[key] for key in declared.parameters})
