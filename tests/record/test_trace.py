"""The saved trace queries and `tgsparql trace`: each answer equals a walk of the graph in Python."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, BinaryIO

import pyoxigraph as ox
import pytest
from conftest import REPO, cli

from tests.servers import Server
from tgsparql.asking.labels import fetch_labels
from tgsparql.asking.librarian import StoreLibrarian
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.sources import ChunkSource
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.rdf.headers import header, split_header
from tgsparql.rdf.templates import Templates
from tgsparql.record.explain import explain_session
from tgsparql.record.readback import Explanation
from tgsparql.record.trace import (
    SAVED_QUERIES, DocumentTrace, EdgeTrace, TraceError, document_sessions, edge_sources,
    fact_sources, render_text, saved_form, session_sources, session_trace, trace, trace_json,
)
from tgsparql.stores.store import DataGraph, EmbeddedStore, Solution, WithTemplates, open_store

TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
DC = "http://purl.org/dc/elements/1.1/"
ENT = "https://example.org/demo/entity/"
REL = "https://example.org/demo/rel/"
DOC = "https://example.org/demo/doc/"
SOURCE = ox.NamedNode("urn:graph:source")
LIBRARY = ox.NamedNode("urn:graph:library")
EXPLAINABILITY = ox.NamedNode("urn:graph:explainability")
TYPE = ox.NamedNode(RDF + "type")
DERIVED = ox.NamedNode(PROV + "wasDerivedFrom")
XSD_INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
QUESTIONS = [
    "Where was the scientist who discovered polonium born?",
    "Who did Marie Curie marry?",
    "Where is the Radium Institute located?",
    "Which prize did the daughter of Pierre Curie win?",
]
MARRIED = ox.Triple(ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "married"),
                    ox.NamedNode(ENT + "Pierre_Curie"))
LOCATED = ox.Triple(ox.NamedNode(ENT + "Radium_Institute"), ox.NamedNode(REL + "locatedIn"),
                    ox.NamedNode(ENT + "Paris"))
TRACE_FILES = sorted((REPO / "queries" / "trace").glob("*.rq"))
"""The saved queries, as a person pastes them."""
TEMPLATE_FILES = sorted((REPO / "queries" / "_trace").glob("[!_]*.rq"))
"""The templates the code renders."""


def tg(name: str) -> ox.NamedNode:
    return ox.NamedNode(TG + name)


# ---------------------------------------------------------------------------------------------
# an independent walk of the graph, one hop at a time, over pyoxigraph's own API


def objects(store: ox.Store, s: ox.NamedNode, p: ox.NamedNode, g: ox.NamedNode) -> list:
    return [q.object for q in store.quads_for_pattern(s, p, None, g)]


def subjects(store: ox.Store, p: ox.NamedNode, o: object, g: ox.NamedNode) -> list:
    return [q.subject for q in store.quads_for_pattern(None, p, o, g)]


def is_a(store: ox.Store, s: object, kind: str) -> bool:
    return any(True for _ in store.quads_for_pattern(s, TYPE, tg(kind), SOURCE))


def value(store: ox.Store, s: object, p: ox.NamedNode, g: ox.NamedNode = SOURCE) -> str | None:
    found = objects(store, s, p, g)
    return found[0].value if found else None


def number(store: ox.Store, s: object, p: ox.NamedNode) -> int | None:
    text = value(store, s, p)
    return int(text) if text is not None else None


def walk_chunk_sources(store: ox.Store, edge: ox.Triple) -> list[ChunkSource]:
    """edge → subgraphs that contain it → chunk → page (if any) → document, by hand."""
    found = []
    for subgraph in subjects(store, tg("contains"), edge, SOURCE):
        for chunk in objects(store, subgraph, DERIVED, SOURCE):
            if not is_a(store, chunk, "Chunk"):
                continue
            for parent in objects(store, chunk, DERIVED, SOURCE):
                if is_a(store, parent, "Page"):
                    pairs = [(parent, doc) for doc in objects(store, parent, DERIVED, SOURCE)]
                elif is_a(store, parent, "Document"):
                    pairs = [(None, parent)]
                else:
                    pairs = []
                for page, document in pairs:
                    found.append(ChunkSource(
                        subgraph=subgraph.value,
                        chunk=chunk.value,
                        document=document.value,
                        title=value(store, document, ox.NamedNode(DC + "title")),
                        page=page.value if page else None,
                        page_number=number(store, page, tg("pageNumber")) if page else None,
                        chunk_index=number(store, chunk, tg("chunkIndex")),
                        char_offset=number(store, chunk, tg("charOffset")),
                        char_length=number(store, chunk, tg("charLength")),
                        chunk_text=value(store, chunk, tg("content"), LIBRARY),
                        evidence=value(store, subgraph, tg("sourceText")),
                        evidence_offset=number(store, subgraph, tg("sourceCharOffset")),
                        evidence_length=number(store, subgraph, tg("sourceCharLength")),
                    ))
    return sorted(found, key=lambda s: (s.document, s.page_number or -1, s.chunk_index,
                                        s.chunk, s.subgraph))


def walk_selected(store: ox.Store, session: ox.NamedNode) -> dict[str, ox.Triple]:
    """session → retrieval → selection → edge selections, each with its edge."""
    edges = {}
    for retrieval in subjects(store, ox.NamedNode(PROV + "wasGeneratedBy"), session, EXPLAINABILITY):
        for selection in subjects(store, DERIVED, retrieval, EXPLAINABILITY):
            for es in objects(store, selection, tg("selectedEdge"), EXPLAINABILITY):
                [edge] = objects(store, es, tg("edge"), EXPLAINABILITY)
                edges[es.value] = edge
    return edges


def walk_document_uses(store: ox.Store, document: ox.NamedNode) -> dict[str, dict[str, set[str]]]:
    """document → chunks → subgraphs → facts → edge selections → sessions: {session: {es: chunks}}."""
    chunks = [c for c in subjects(store, DERIVED, document, SOURCE) if is_a(store, c, "Chunk")]
    for page in subjects(store, DERIVED, document, SOURCE):
        if is_a(store, page, "Page"):
            chunks += [c for c in subjects(store, DERIVED, page, SOURCE) if is_a(store, c, "Chunk")]
    uses: dict[str, dict[str, set[str]]] = {}
    for chunk in chunks:
        for subgraph in subjects(store, DERIVED, chunk, SOURCE):
            for edge in objects(store, subgraph, tg("contains"), SOURCE):
                for es in subjects(store, tg("edge"), edge, EXPLAINABILITY):
                    for selection in subjects(store, tg("selectedEdge"), es, EXPLAINABILITY):
                        for retrieval in objects(store, selection, DERIVED, EXPLAINABILITY):
                            for session in objects(store, retrieval,
                                                   ox.NamedNode(PROV + "wasGeneratedBy"),
                                                   EXPLAINABILITY):
                                uses.setdefault(session.value, {}).setdefault(
                                    es.value, set()).add(chunk.value)
    return uses


def kg_facts(store: ox.Store) -> list[ox.Triple]:
    label = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    return sorted((q.triple for q in store.quads_for_pattern(None, None, None, ox.DefaultGraph())
                   if q.predicate != label), key=str)


def documents(store: ox.Store) -> list[ox.NamedNode]:
    return sorted(subjects(store, TYPE, tg("Document"), SOURCE), key=lambda d: d.value)


# ---------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture
def sessions(tgsparql_demo_pipeline: GraphRag) -> list[str]:
    """The demo questions asked and recorded; their session IRIs in order."""
    found = []
    for question in QUESTIONS:
        messages = list(tgsparql_demo_pipeline.query(question))
        assert messages[-1].error is None
        found.append(messages[0].explain_id)
    return found


@pytest.fixture
def ox_store(tgsparql_demo_store: EmbeddedStore) -> ox.Store:
    return tgsparql_demo_store.oxigraph


# ---------------------------------------------------------------------------------------------
# the saved query files


DIALECT_TAG = re.compile(r'\{% (if dialect == "(rdf12|rdfstar|reification)"|endif) %\}')
"""A line that keeps what follows, up to its `endif`, for one dialect only."""
PLACEHOLDERS = {"{{ graph|iri }}", "{{ graphs.source|iri }}", "{{ graphs.library|iri }}"}
SHARED = re.compile(r'\{% include "((?:_trace/)?_[a-z_]+\.rq)" %\}')
"""A walk a trace template shares with another query: a fragment of queries/ included whole,
whose lines hold placeholders alone, as the template's own do."""


def declared(name: str, **params: Any) -> dict[str, Any]:
    """Those of `params` template `name` takes."""
    return {key: params[key] for key in header(name).parameters}


def is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def template_lines(path: Path) -> list[str]:
    """The template's lines below its header (tgsparql.rdf.headers.Header), each shared
    fragment's in place of the line that includes it (less the fragment's own header and
    opening comment)."""
    lines: list[str] = []
    for line in split_header(path.read_text(encoding="utf-8"))[1].splitlines():
        shared = SHARED.fullmatch(line.strip())
        if shared is None:
            lines.append(line)
            continue
        fragment = split_header((REPO / "queries" / shared[1]).read_text(encoding="utf-8"))[1]
        lines += fragment.split("#}\n", 1)[1].splitlines() if fragment.startswith("{#") \
            else fragment.splitlines()
    return lines


@pytest.mark.parametrize("path", TEMPLATE_FILES, ids=lambda p: p.name)
def test_each_trace_template_has_a_header_and_one_values_parameter_line(path: Path) -> None:
    lines = template_lines(path)
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line)
    assert header[0].startswith("# Trace: ")
    assert sum(line.startswith("# Bind: ") for line in header) == 1
    assert not any("{{" in line or "{%" in line for line in header)
    values = [line for line in lines if "VALUES" in line and not is_comment(line)]
    assert len(values) == 1
    params = re.findall(r"\{\{ ([a-z_.]+)\|(?:iri|term) \}\}", values[0])
    loops = re.findall(r"\{% for ([a-z_]+) in [a-z_]+ %\}", values[0])
    assert len(loops) <= 1  # a list parameter: one row per item
    assert params
    assert re.fullmatch(r"VALUES (\?[a-zA-Z]+|\(\?s \?p \?o( \?edge)?\)) \{ .* \}", values[0].strip())
    roots = {param.split(".")[0] for param in params}
    assert len(roots) == 1
    (root,) = roots
    elsewhere = [line for line in lines if line not in values and not is_comment(line)]
    assert not any(root in re.findall(r"\{\{ ([a-z_]+)", line) for line in elsewhere)
    outside = {m for line in elsewhere for m in re.findall(r"\{[{%][^}]*[}%]\}", line)}
    assert all(m in PLACEHOLDERS or DIALECT_TAG.fullmatch(m) for m in outside), outside


@pytest.mark.parametrize("dialect", ["rdf12", "rdfstar", "reification"])
@pytest.mark.parametrize("path", TEMPLATE_FILES, ids=lambda p: p.name)
def test_each_trace_query_renders_the_edge_references_of_each_dialect(
    path: Path, dialect: str
) -> None:
    """No quoted triple (a reifier in RDF 1.2) for rdf12, no triple term for rdfstar, and no
    edge reference but statements for reification (docs/spec.md §3)."""
    ids = SessionIds("3f0e5c8a-1b2d-4c3e-8f9a-0b1c2d3e4f5a")
    text = Templates(dialect).render(  # type: ignore[arg-type]
        f"_trace/{path.stem}", **declared(
            f"_trace/{path.stem}", graph=EXPLAINABILITY, session=ids.session,
            edge_selection=ids.edge_selection(0), document=ox.NamedNode(DOC + "pierre-curie"),
            facts=[MARRIED]))
    live = "\n".join(line for line in text.splitlines() if not is_comment(line))
    assert "<< " not in live if dialect == "rdf12" else "<<(" not in live
    if dialect == "reification":  # SPARQL 1.1 alone: what Virtuoso parses
        assert "<<" not in live
        assert not re.search(r"\b(SUBJECT|PREDICATE|OBJECT|TRIPLE|isTRIPLE)\(", live)


def test_the_trace_directory_holds_the_six_saved_queries_one_per_template() -> None:
    assert [p.stem for p in TRACE_FILES] == [p.stem for p in TEMPLATE_FILES] == [
        "document_sessions", "edge_sources", "fact_sources", "session_sources", "session_trace",
        "session_unselected",
    ] == list(SAVED_QUERIES)


REGENERATE = ("python -c \"from tgsparql.record.trace import SAVED_QUERIES, saved_form; "
              "[open(f'queries/trace/{n}.rq', 'w').write(saved_form(n)) for n in SAVED_QUERIES]\"")


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: p.name)
def test_each_saved_query_is_its_template_as_the_code_renders_it(path: Path) -> None:
    """Plain SPARQL: no placeholder, no template tag, the default graph names."""
    text = path.read_text(encoding="utf-8")
    assert text == saved_form(path.stem), f"regenerate the saved queries: {REGENERATE}"
    assert "{{" not in text and "{%" not in text
    assert "<urn:graph:source>" in text or "<urn:graph:explainability>" in text


def filled(path: Path, terms: dict[str, str]) -> str:
    """The saved query with its VALUES line filled as a person would: example terms replaced."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    (index,) = [i for i, line in enumerate(lines) if line.lstrip().startswith("VALUES")]
    for example, term in terms.items():
        lines[index] = lines[index].replace(example, term)
    return "".join(lines)


def row_keys(rows: list[Solution]) -> set[tuple[str, ...]]:
    """What locates each row that reaches a source: its edge selection (or fact), subgraph and
    chunk. (A document's facts that no session selected have no edge selection.)"""
    return {(str(row.get("edgeSelection") or row["s"]), str(row["subgraph"]), str(row["chunk"]))
            for row in rows if row.get("chunk") is not None
            and (row.get("edgeSelection") or row.get("s")) is not None}


def traced_keys(found: object) -> set[tuple[str, ...]]:
    if isinstance(found, Explanation):
        return {(f"<{e.edge_selection}>", f"<{s.subgraph}>", f"<{s.chunk}>")
                for e in found.selected for s in e.sources}
    if isinstance(found, EdgeTrace):
        return {(f"<{found.edge.edge_selection}>", f"<{s.subgraph}>", f"<{s.chunk}>")
                for s in found.edge.sources}
    assert isinstance(found, DocumentTrace)
    return {(f"<{u.edge_selection}>", f"<{c.subgraph}>", f"<{c.chunk}>")
            for use in found.sessions for u in use.session.selected for c in u.sources}


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: p.name)
def test_each_saved_query_runs_as_is_once_its_values_line_is_filled(
    path: Path, tgsparql_demo_store: EmbeddedStore, sessions: list[str], oxigraph: Server,
) -> None:
    """On pyoxigraph and on an Oxigraph server, the same rows as the code's own rendering, and
    the sources `tgsparql trace` shows."""
    ids = SessionIds.from_session_iri(sessions[1])
    example = SessionIds("00000000-0000-0000-0000-000000000000")
    document = ox.NamedNode(DOC + "pierre-curie")
    text = filled(path, {
        str(example.edge_selection(0)): str(ids.edge_selection(0)),
        str(example.session): str(ids.session),
        "<urn:trustgraph:doc:" + "0" * 64 + ">": str(document),
        "<https://example.org/subject>": str(MARRIED.subject),
        "<https://example.org/predicate>": str(MARRIED.predicate),
        "<https://example.org/object>": str(MARRIED.object),
    })
    rendered = tgsparql_demo_store.run(f"_trace/{path.stem}", **declared(
        f"_trace/{path.stem}", graph=EXPLAINABILITY, session=ids.session,
        edge_selection=ids.edge_selection(0), document=document, facts=[MARRIED])).rows
    embedded = tgsparql_demo_store.select(text)
    oxigraph.clear()
    oxigraph.store().bulk_load(io.BytesIO(ox.serialize(
        tgsparql_demo_store.oxigraph.quads_for_pattern(None, None, None, None),
        format=ox.RdfFormat.N_QUADS)), ox.RdfFormat.N_QUADS)
    served = oxigraph.store().select(text)
    assert embedded and sorted(map(str, embedded)) == sorted(map(str, rendered))
    assert row_keys(served) == row_keys(embedded)
    assert len(served) == len(embedded)
    if path.stem == "session_unselected":  # edges, not sources: those explain counts
        assert sorted(map(str, served)) == sorted(map(str, embedded))
        unselected = explain_session(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                                     ids.session.value, unselected=10_000).unselected
        assert {ox.Triple(r["subject"], r["predicate"], r["object"])  # type: ignore[arg-type]
                for r in embedded} == {u.edge for u in unselected}
        assert len(embedded) == len(unselected) > 0
        return
    if path.stem == "fact_sources":
        traced = {(str(MARRIED.subject), f"<{s.subgraph}>", f"<{s.chunk}>")
                  for s in fact_sources(tgsparql_demo_store, MARRIED)}
    else:
        iri = {"edge_sources": ids.edge_selection(0).value,
               "document_sessions": document.value}.get(path.stem, ids.session.value)
        traced = traced_keys(trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, iri))
    assert traced and row_keys(embedded) == traced


# ---------------------------------------------------------------------------------------------
# each query answers what it claims, as the walk does


def test_edge_sources_equal_the_walk_for_every_selected_edge(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    checked = 0
    for session in sessions:
        for iri, edge in walk_selected(ox_store, ox.NamedNode(session)).items():
            found = edge_sources(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, ox.NamedNode(iri))
            assert found == walk_chunk_sources(ox_store, edge)
            assert found  # every demo fact has a recorded source
            traced = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, iri)
            assert isinstance(traced, EdgeTrace)
            assert (traced.edge.edge, traced.edge.sources) == (edge, found)
            [reason] = objects(ox_store, ox.NamedNode(iri), tg("reasoning"), EXPLAINABILITY)
            assert traced.edge.reasoning == reason.value
            checked += 1
    assert checked >= len(QUESTIONS)


def test_session_trace_equals_the_walk(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    for session, question in zip(sessions, QUESTIONS):
        found = session_trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                              SessionIds.from_session_iri(session))
        assert found is not None
        assert (found.session, found.question, found.status) == (session, question, "complete")
        walked = walk_selected(ox_store, ox.NamedNode(session))
        assert [e.edge_selection for e in found.selected] == sorted(
            walked, key=lambda iri: int(iri.rsplit(":", 1)[1]))
        for edge in found.selected:
            assert edge.edge == walked[edge.edge_selection]
            assert edge.sources == walk_chunk_sources(ox_store, edge.edge)


def test_session_sources_are_the_answer_view_of_the_full_trace(
    tgsparql_demo_store: EmbeddedStore, sessions: list[str]
) -> None:
    """`session_sources.rq` reads the sources alone; they are the full trace's, for every
    session, in the same order."""
    compared = 0
    for session in sessions:
        ids = SessionIds.from_session_iri(session)
        found = session_trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, ids)
        assert found is not None
        edges = {ox.NamedNode(e.edge_selection): e.edge for e in found.selected}
        sources = session_sources(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, ids, edges)
        expected = [(e, s) for e in found.selected for s in e.sources]
        assert sources == [s.as_source(e.edge_selection, e.edge) for e, s in expected]
        assert all(s.text is not None and s.text == c.evidence
                   for s, (_, c) in zip(sources, expected))
        compared += len(sources)
    assert compared > 0


def test_session_sources_of_an_unknown_session_are_none(tgsparql_demo_store: EmbeddedStore) -> None:
    ids = SessionIds("00000000-0000-4000-8000-000000000000")
    edges = {ids.edge_selection(0): MARRIED}
    assert session_sources(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, ids, edges) == []


def test_every_fact_of_the_demo_traces_as_the_walk_does_with_exact_offsets(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store
) -> None:
    facts = kg_facts(ox_store)
    assert len(facts) == 38
    for fact in facts:
        found = fact_sources(tgsparql_demo_store, fact)
        assert found == walk_chunk_sources(ox_store, fact), fact
        for source in found:
            assert source.chunk_text is not None and source.evidence is not None
            start = source.evidence_offset
            assert source.chunk_text[start:start + source.evidence_length] == source.evidence


def test_a_fact_stated_in_two_documents_has_two_sources(tgsparql_demo_store: EmbeddedStore) -> None:
    found = fact_sources(tgsparql_demo_store, MARRIED)
    assert [(s.document, s.title, s.page_number, s.chunk, s.chunk_index, s.evidence_offset,
             s.evidence_length) for s in found] == [
        (DOC + "marie-curie", "Marie Curie: From Warsaw to Paris", 1,
         "urn:chunk:c109fd02-e445-4c61-82d6-10161a2a9191", 1, 0, 73),
        (DOC + "pierre-curie", "Pierre Curie, Physicist of Paris", 1,
         "urn:chunk:051db551-e09c-41e1-ba67-785520e62c1b", 1, 126, 156),
    ]
    assert [s.evidence for s in found] == [
        "In Paris she met the physicist Pierre Curie, and the two married in 1895.",
        "In 1895 he married Marie Skłodowska, a brilliant Polish student, and he soon set aside "
        "his own research to join her investigation of radioactive substances.",
    ]


def test_a_chunk_derived_directly_from_a_document_is_found(
    tgsparql_demo_store: EmbeddedStore
) -> None:
    [source] = fact_sources(tgsparql_demo_store, LOCATED)
    assert source == ChunkSource(
        subgraph=source.subgraph,
        chunk="urn:chunk:093cc24a-e295-41bb-beed-c2461bcd7209",
        document=DOC + "radium-institute",
        title="The Radium Institute in Paris",
        page=None,
        page_number=None,
        chunk_index=0,
        char_offset=0,
        char_length=236,
        chunk_text=source.chunk_text,
        evidence="The Radium Institute was founded in Paris in 1909 by the University of Paris "
                 "together with the Pasteur Institute.",
        evidence_offset=0,
        evidence_length=113,
    )
    assert source.chunk_text is not None and len(source.chunk_text) == 236


def test_a_fact_without_provenance_has_no_source(tgsparql_demo_store: EmbeddedStore) -> None:
    unknown = ox.Triple(ox.NamedNode(ENT + "Paris"), ox.NamedNode(REL + "capitalOf"),
                        ox.NamedNode(ENT + "Poland"))
    assert fact_sources(tgsparql_demo_store, unknown) == []


def test_dcterms_titles_are_accepted(tgsparql_demo_store: EmbeddedStore) -> None:
    doc = ox.NamedNode(DOC + "radium-institute")
    dc_title = ox.Quad(doc, ox.NamedNode(DC + "title"),
                       ox.Literal("The Radium Institute in Paris"), SOURCE)
    tgsparql_demo_store.oxigraph.remove(dc_title)
    tgsparql_demo_store.oxigraph.add(ox.Quad(doc, ox.NamedNode("http://purl.org/dc/terms/title"),
                                             ox.Literal("Institut du Radium"), SOURCE))
    [source] = fact_sources(tgsparql_demo_store, LOCATED)
    assert source.title == "Institut du Radium"
    found = document_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, doc)
    assert found is not None and found.title == "Institut du Radium"


def test_document_sessions_list_exactly_the_sessions_whose_edges_came_from_it(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    library = StoreLibrarian(tgsparql_demo_store)
    used_by_some = 0
    for document in documents(ox_store):
        found = document_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, document)
        assert found is not None and found.document == document.value
        walked = walk_document_uses(ox_store, document)
        assert {u.session.session: {e.edge_selection: {c.chunk for c in e.sources}
                                    for e in u.session.selected}
                for u in found.sessions} == walked
        assert [u.session.session for u in found.sessions] == [s for s in sessions if s in walked]
        for use in found.sessions:
            ids = SessionIds.from_session_iri(use.session.session)
            assert use.session.question == QUESTIONS[sessions.index(use.session.session)]
            assert (use.answer, use.answer_document) == (ids.answer.value,
                                                         ids.answer_document.value)
            stored = library.get(ids.answer_document)
            assert stored is not None and use.session.answer == stored.content
        used_by_some += bool(found.sessions)
    assert used_by_some >= 3


def test_a_documents_sessions_come_in_the_order_they_started_not_of_their_start_texts(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    """A store writes a start in canonical form, without a fraction's trailing zeros: the
    session started at …:01.12 reads "…:01.12Z", after "…:01.123Z" as text."""
    document = next(d for d in documents(ox_store) if len(walk_document_uses(ox_store, d)) >= 2)
    using = [s for s in sessions if s in walk_document_uses(ox_store, document)]
    started = vocab.PROV_STARTED_AT_TIME
    for session, fraction in zip(using, ["1", "12", "123", "1234"]):
        [old] = ox_store.quads_for_pattern(ox.NamedNode(session), started, None, EXPLAINABILITY)
        ox_store.remove(old)
        ox_store.add(ox.Quad(old.subject, started, ox.Literal(
            f"2026-03-01T10:00:01.{fraction}Z", datatype=vocab.XSD_DATETIME), EXPLAINABILITY))
    found = document_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, document)
    assert found is not None
    assert [use.session.session for use in found.sessions] == using


def test_a_document_no_session_used_has_no_sessions_and_an_unknown_one_is_none(
    tgsparql_demo_store: EmbeddedStore
) -> None:
    found = document_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                              ox.NamedNode(DOC + "pierre-curie"))
    assert found == DocumentTrace(DOC + "pierre-curie", "Pierre Curie, Physicist of Paris", [])
    assert document_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                             ox.NamedNode(DOC + "nope")) is None


def test_a_selected_edge_without_a_recorded_source_stays_in_the_tree(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    for quad in list(ox_store.quads_for_pattern(None, tg("contains"), MARRIED, SOURCE)):
        ox_store.remove(quad)
    ids = SessionIds.from_session_iri(sessions[1])
    found = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, sessions[1])
    assert isinstance(found, Explanation)
    assert (found.selected[0].edge, found.selected[0].sources) == (MARRIED, [])
    assert edge_sources(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, ids.edge_selection(0)) == []
    lines = render_text(found).splitlines()
    assert lines[2:5] == ["  [0] Marie Curie — married — Pierre Curie",
                          f"      why: {found.selected[0].reasoning}",
                          "      no recorded source"]


def test_a_source_kept_unsupported_says_so_in_the_tree_and_the_json(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    unfound = tg("EvidenceNotFound")
    for quad in list(ox_store.quads_for_pattern(None, tg("contains"), MARRIED, SOURCE)):
        ox_store.add(ox.Quad(quad.subject, tg("unsupported"), unfound, SOURCE))
    found = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, sessions[1])
    assert isinstance(found, Explanation)
    assert {source.unsupported for source in found.selected[0].sources} == {unfound.value}
    assert "          kept unsupported: EvidenceNotFound" in render_text(found).splitlines()
    assert trace_json(found)["edges"][0]["sources"][0]["unsupported"] == unfound.value
    assert all("unsupported" not in source for edge in trace_json(found)["edges"][1:]
               for source in edge["sources"])


# ---------------------------------------------------------------------------------------------
# trace(): which tree for which IRI


class CountingStore(WithTemplates):
    """Delegates to an embedded store and counts the requests made of it."""

    def __init__(self, inner: EmbeddedStore) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.round_trips = inner.round_trips
        self.requests: list[str] = []

    def select(self, query: str, *, default_graph: DataGraph = None) -> list[Solution]:
        self.requests.append(query)
        return self.inner.select(query, default_graph=default_graph)

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        self.requests.append(query)
        return self.inner.ask(query, default_graph=default_graph)

    def construct(self, query: str) -> list[ox.Triple]:
        self.requests.append(query)
        return self.inner.construct(query)

    def update(self, update: str) -> None:
        self.requests.append(update)
        self.inner.update(update)

    def bulk_load(self, source: BinaryIO, format: ox.RdfFormat, *,
                  graph: ox.NamedNode | None = None) -> None:
        self.requests.append("bulk load")
        self.inner.bulk_load(source, format, graph=graph)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("kind", ["session", "uuid", "edge", "document"])
def test_a_trace_is_one_request_to_the_store(
    tgsparql_demo_store: EmbeddedStore, sessions: list[str], kind: str
) -> None:
    ids = SessionIds.from_session_iri(sessions[1])
    iri = {"session": sessions[1], "uuid": ids.uuid, "edge": ids.edge_selection(0).value,
           "document": DOC + "marie-curie"}[kind]
    counting = CountingStore(tgsparql_demo_store)
    found = trace(counting, vocab.DEFAULT_COLLECTION, iri)
    assert len(counting.requests) == 1
    assert found == trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, iri)


@pytest.mark.parametrize("iri, requests", [
    ("urn:trustgraph:session:3f0e5c8a-1b2d-4c3e-8f9a-0b1c2d3e4f5a", 1),
    ("urn:trustgraph:prov:edge:3f0e5c8a-1b2d-4c3e-8f9a-0b1c2d3e4f5a:0", 1),
    (DOC + "nope", 2),
    ("urn:trustgraph:prov:edge:nope", 0),
    ("not an iri", 0),
])
def test_what_cannot_be_traced_takes_two_requests_at_most(
    tgsparql_demo_store: EmbeddedStore, iri: str, requests: int
) -> None:
    """The second, for an IRI that is no traceable document: is it a document without facts?"""
    counting = CountingStore(tgsparql_demo_store)
    with pytest.raises(TraceError):
        trace(counting, vocab.DEFAULT_COLLECTION, iri)
    assert len(counting.requests) == requests


def test_a_session_with_no_selected_edge_is_traced_with_its_question(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    ids = SessionIds.from_session_iri(sessions[1])
    for quad in list(ox_store.quads_for_pattern(ids.selection, tg("selectedEdge"), None,
                                                EXPLAINABILITY)):
        ox_store.remove(quad)
    counting = CountingStore(tgsparql_demo_store)
    found = trace(counting, vocab.DEFAULT_COLLECTION, sessions[1])
    assert len(counting.requests) == 1
    assert isinstance(found, Explanation)
    assert (found.question, found.status, found.selected) == (QUESTIONS[1], "complete", [])
    assert render_text(found).splitlines()[2] == "  no selected edges"


def test_labels_are_the_ones_the_selector_prompt_uses(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    """A term with labels in several languages is named as `fetch_labels` names it."""
    marie, married = MARRIED.subject, MARRIED.predicate
    label = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    for text, language in [("Maria Skłodowska", "pl"), ("Marie", None), ("Madame Curie", "en-GB"),
                           ("Zzz", "en")]:
        ox_store.add(ox.Quad(marie, label, ox.Literal(text, language=language)))
    ox_store.add(ox.Quad(married, label, ox.Literal("épouse", language="fr")))
    chosen = fetch_labels(tgsparql_demo_store, [marie, married, MARRIED.object])
    assert chosen[marie] == "Madame Curie"
    session = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, sessions[1])
    assert isinstance(session, Explanation)
    assert session.selected[0].edge == MARRIED
    assert session.selected[0].labels == (chosen[marie], chosen[married], chosen[MARRIED.object])
    document = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, DOC + "marie-curie")
    assert isinstance(document, DocumentTrace)
    used = [edge for use in document.sessions for edge in use.session.selected
            if edge.edge == MARRIED]
    assert used and all(edge.labels == session.selected[0].labels for edge in used)


def test_an_evidence_span_on_the_chunk_is_used_when_the_subgraph_has_none(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    [subgraph] = subjects(ox_store, tg("contains"), LOCATED, SOURCE)
    [chunk] = objects(ox_store, subgraph, DERIVED, SOURCE)
    span = [q for q in ox_store.quads_for_pattern(subgraph, None, None, SOURCE)
            if q.predicate.value.startswith(TG + "source")]
    assert len(span) == 3
    for quad in span:  # the span moves from the subgraph to its chunk
        ox_store.remove(quad)
        ox_store.add(ox.Quad(chunk, quad.predicate, quad.object, SOURCE))
    session = next(s for s in sessions
                   if LOCATED in walk_selected(ox_store, ox.NamedNode(s)).values())
    found = session_trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                          SessionIds.from_session_iri(session))
    assert found is not None
    [edge] = [e for e in found.selected if e.edge == LOCATED]
    [source] = edge.sources
    assert (source.evidence, source.evidence_offset, source.evidence_length) == (
        "The Radium Institute was founded in Paris in 1909 by the University of Paris "
        "together with the Pasteur Institute.", 0, 113)
    ox_store.add(ox.Quad(subgraph, tg("sourceText"), ox.Literal("founded in Paris"), SOURCE))
    ox_store.add(ox.Quad(subgraph, tg("sourceCharOffset"), ox.Literal("28", datatype=XSD_INTEGER),
                         SOURCE))
    ox_store.add(ox.Quad(subgraph, tg("sourceCharLength"), ox.Literal("16", datatype=XSD_INTEGER),
                         SOURCE))
    found = session_trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                          SessionIds.from_session_iri(session))
    assert found is not None
    [source] = [e for e in found.selected if e.edge == LOCATED][0].sources
    assert (source.evidence, source.evidence_offset, source.evidence_length) == (
        "founded in Paris", 28, 16)  # the subgraph's span wins


def test_trace_detects_the_kind_of_iri(
    tgsparql_demo_store: EmbeddedStore, ox_store: ox.Store, sessions: list[str]
) -> None:
    session = sessions[1]
    ids = SessionIds.from_session_iri(session)
    by_iri = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, session)
    by_uuid = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, ids.uuid)
    assert isinstance(by_iri, Explanation) and by_iri == by_uuid
    assert by_iri.selected[0].labels == ("Marie Curie", "married", "Pierre Curie")
    edge = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, ids.edge_selection(0).value)
    assert isinstance(edge, EdgeTrace) and edge.session == session
    assert edge.edge == by_iri.selected[0]
    document = trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, DOC + "pierre-curie")
    assert isinstance(document, DocumentTrace)
    users = walk_document_uses(ox_store, ox.NamedNode(DOC + "pierre-curie"))
    assert session in users
    assert [u.session.session for u in document.sessions] == [s for s in sessions if s in users]


@pytest.mark.parametrize("iri, message", [
    ("urn:trustgraph:prov:edge:nope", "malformed edge-selection IRI"),
    ("urn:trustgraph:prov:edge:3f0e5c8a-1b2d-4c3e-8f9a-0b1c2d3e4f5a:0",
     "no edge selection urn:trustgraph:prov:edge:3f0e5c8a-1b2d-4c3e-8f9a-0b1c2d3e4f5a:0"),
    ("urn:trustgraph:session:nope", "not a session IRI"),
    ("3f0e5c8a-1b2d-4c3e-8f9a-0b1c2d3e4f5a",
     "no session urn:trustgraph:session:3f0e5c8a-1b2d-4c3e-8f9a-0b1c2d3e4f5a"),
    ("https://example.org/demo/doc/nope", "unknown IRI https://example.org/demo/doc/nope"),
    (ENT + "Marie_Curie", "not an edge selection, a session, or a document"),
    ("not an iri", "not an IRI: 'not an iri'"),
])
def test_trace_refuses_what_it_cannot_trace(
    tgsparql_demo_store: EmbeddedStore, iri: str, message: str
) -> None:
    with pytest.raises(TraceError, match=re.escape(message)):
        trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, iri)


def test_a_document_without_facts_is_said_to_have_none(tgsparql_demo_store: EmbeddedStore) -> None:
    empty = "urn:trustgraph:doc:" + "e" * 64
    tgsparql_demo_store.update(
        f"INSERT DATA {{ GRAPH <urn:graph:source> {{ <{empty}> a <{TG}Document> }} }}")
    with pytest.raises(TraceError) as info:
        trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, empty)
    assert str(info.value) == (f"document {empty} has no facts: no subgraph of urn:graph:source "
                               "derives from it, so nothing traces to it")


def test_text_tree_goes_down_to_the_sentence(
    tgsparql_demo_store: EmbeddedStore, sessions: list[str]
) -> None:
    text = render_text(trace(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, sessions[1]))
    lines = text.splitlines()
    assert lines[0].startswith(f"session {sessions[1]}  [complete, started ")
    assert lines[1] == "  asked: Who did Marie Curie marry?"
    assert lines[2] == "  [0] Marie Curie — married — Pierre Curie"
    at = lines.index(f"      document “Marie Curie: From Warsaw to Paris”  {DOC}marie-curie")
    assert lines[at + 1] == ("        page 1, chunk 1 characters 302–605  "
                             "urn:chunk:c109fd02-e445-4c61-82d6-10161a2a9191")
    assert lines[at + 2] == ("          sentence at 0–73: “In Paris she met the physicist Pierre "
                             "Curie, and the two married in 1895.”")
    assert f"      document “Pierre Curie, Physicist of Paris”  {DOC}pierre-curie" in lines


# ---------------------------------------------------------------------------------------------
# the CLI


@pytest.fixture
def demo_dir(tmp_path: Path, tgsparql_demo_file: Path) -> tuple[Path, list[str]]:
    """An on-disk demo store with the demo questions recorded."""
    path = tmp_path / "kg"
    store = open_store(path)
    try:
        assert not load_files(store, [tgsparql_demo_file]).failed
        rag = GraphRag(store, OfflineBackend())
        found = [list(rag.query(q))[0].explain_id for q in QUESTIONS]
    finally:
        store.close()
    return path, found


@pytest.mark.parametrize("kind", ["session", "uuid", "edge", "document"])
def test_cli_trace_text_and_json_match_the_api(
    demo_dir: tuple[Path, list[str]], kind: str
) -> None:
    path, found = demo_dir
    ids = SessionIds.from_session_iri(found[1])
    iri = {"session": found[1], "uuid": ids.uuid, "edge": ids.edge_selection(0).value,
           "document": DOC + "marie-curie"}[kind]
    store = open_store(path)
    try:
        expected = trace(store, vocab.DEFAULT_COLLECTION, iri)
    finally:
        store.close()
    code, out, err = cli("trace", iri, "--store", path)
    assert (code, err) == (0, "")
    assert out == render_text(expected) + "\n"
    code, out, err = cli("trace", iri, "--store", path, "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data == json.loads(json.dumps(trace_json(expected)))
    assert data["kind"] == {"uuid": "session"}.get(kind, kind)


def test_cli_trace_json_carries_every_level(demo_dir: tuple[Path, list[str]]) -> None:
    path, found = demo_dir
    iri = SessionIds.from_session_iri(found[1]).edge_selection(0).value
    data = json.loads(cli("trace", iri, "--store", path, "--format", "json").stdout)
    assert data["edge"] == f"<<( <{ENT}Marie_Curie> <{REL}married> <{ENT}Pierre_Curie> )>>"
    assert [(s["document"], s["page_number"], s["chunk_index"], s["evidence_offset"])
            for s in data["sources"]] == [(DOC + "marie-curie", 1, 1, 0),
                                          (DOC + "pierre-curie", 1, 1, 126)]
    assert set(data["sources"][0]) == {
        "subgraph", "chunk", "document", "title", "page", "page_number", "chunk_index",
        "char_offset", "char_length", "chunk_text", "evidence", "evidence_offset",
        "evidence_length"}


@pytest.mark.parametrize("args, message", [
    (["urn:trustgraph:prov:edge:x"], "error: malformed edge-selection IRI"),
    (["urn:trustgraph:session:x"], "error: not a session IRI"),
    ([DOC + "nope"], f"error: unknown IRI {DOC}nope"),
    (["a b"], "error: not an IRI: 'a b'"),
    ([DOC + "marie-curie", "--collection", "source"], "error: collection name 'source' is reserved"),
])
def test_cli_trace_errors_are_one_line_and_exit_1(
    demo_dir: tuple[Path, list[str]], args: list[str], message: str
) -> None:
    path, _ = demo_dir
    code, out, err = cli("trace", *args, "--store", path)
    assert code == 1 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(message)


def test_cli_trace_usage_errors_exit_2(demo_dir: tuple[Path, list[str]]) -> None:
    path, found = demo_dir
    assert cli("trace", "--store", path).exit_code == 2
    assert cli("trace", found[0], "--store", path, "--format", "turtle").exit_code == 2
