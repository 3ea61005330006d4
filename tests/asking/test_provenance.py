"""A recorded session matches docs/spec.md §2 exactly: IRIs, types, typed literals, the chain, the librarian."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterator, Sequence

import pyoxigraph as ox
import pytest

from tgsparql.asking.grounding import Grounding
from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import SelectionOutput, SelectionRequest
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.llm.usage import Usage
from tgsparql.asking.messages import GraphRagResponse
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.provenance import Recorder
from tgsparql.asking.selection import SelectedEdge
from tgsparql.asking.sources import facts_sources
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.rdf.vocab import CollectionError
from tgsparql.stores.store import DataGraph, EmbeddedStore, WithTemplates

QUESTION = "Where was the scientist who discovered polonium born?"

TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD = "http://www.w3.org/2001/XMLSchema#"
DC = "http://purl.org/dc/elements/1.1/"
ENT = "https://example.org/demo/entity/"
REL = "https://example.org/demo/rel/"

EXPLAINABILITY = ox.NamedNode("urn:graph:explainability")
LIBRARY = ox.NamedNode("urn:graph:library")
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

PREFIXES = f"""
PREFIX tg: <{TG}>
PREFIX prov: <{PROV}>
PREFIX rdf: <{RDF}>
PREFIX rdfs: <{RDFS}>
PREFIX xsd: <{XSD}>
PREFIX dc: <{DC}>
"""

DATATYPE_OF = {
    TG + "recordFormat": XSD + "integer",
    PROV + "startedAtTime": XSD + "dateTime",
    PROV + "endedAtTime": XSD + "dateTime",
    TG + "edgeCount": XSD + "integer",
    TG + "candidateEdges": XSD + "integer",
    TG + "candidateEdgesOver": XSD + "integer",
    TG + "invalidIdCount": XSD + "integer",
    TG + "selectedEdgeCount": XSD + "integer",
    TG + "sourceDocumentCount": XSD + "integer",
    TG + "day": XSD + "date",
    TG + "date": XSD + "date",
    TG + "completeDay": XSD + "date",
    TG + "failedDay": XSD + "date",
    TG + "inToken": XSD + "integer",
    TG + "outToken": XSD + "integer",
    TG + "query": XSD + "string",
    TG + "status": XSD + "string",
    TG + "error": XSD + "string",
    TG + "concept": XSD + "string",
    TG + "reasoning": XSD + "string",
    TG + "llmModel": XSD + "string",
    TG + "modelName": XSD + "string",
    RDFS + "label": XSD + "string",
    TG + "invalidCitationCount": XSD + "integer",
    TG + "citedEdgeCount": XSD + "integer",
    TG + "uncitedSentenceCount": XSD + "integer",
    TG + "sentence": XSD + "string",
    TG + "charOffset": XSD + "integer",
    TG + "charLength": XSD + "integer",
}


class RecordingStore(WithTemplates):
    """Delegates to an embedded store and remembers the quads each update added."""

    def __init__(self, inner: EmbeddedStore) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.round_trips = inner.round_trips
        self.writes: list[set[ox.Quad]] = []

    def select(self, query: str, *, default_graph: DataGraph = None):
        return self.inner.select(query, default_graph=default_graph)

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        return self.inner.ask(query, default_graph=default_graph)

    def construct(self, query: str):
        return self.inner.construct(query)

    def update(self, update: str) -> None:
        before = set(self.inner.oxigraph)
        self.inner.update(update)
        self.writes.append(set(self.inner.oxigraph) - before)

    def bulk_load(self, source, format, *, graph=None) -> None:
        self.inner.bulk_load(source, format, graph=graph)

    def close(self) -> None:
        self.inner.close()


class UsageAnswer:
    def __init__(self, text: str, usage: Usage) -> None:
        self.text = text
        self.usage: Usage | None = None
        self._usage = usage

    def __iter__(self) -> Iterator[str]:
        yield self.text
        self.usage = self._usage


class UsageBackend:
    """The offline selection and answer, reported as if a model had made them."""

    name = "usage"

    def __init__(self) -> None:
        self.offline = OfflineBackend()

    def select(self, request: SelectionRequest) -> SelectionOutput:
        output = self.offline.select(request)
        return SelectionOutput(output.text, Usage("test-model-select", 812, 95))

    def answer(self, question: str, facts: Sequence[LabeledEdge], *, stream: bool) -> UsageAnswer:
        text = "".join(self.offline.answer(question, facts, stream=False))
        return UsageAnswer(text, Usage("test-model-answer", 1024, 37))


def run(rag: GraphRag, question: str = QUESTION, stream: bool = True) -> list[GraphRagResponse]:
    messages = list(rag.query(question, stream=stream))
    assert messages[-1].error is None, messages[-1].error
    return messages


def session_uuid(messages: list[GraphRagResponse]) -> str:
    first = messages[0].explain_id
    assert first is not None and first.startswith("urn:trustgraph:session:")
    return first.rsplit(":", 1)[1]


def graph_triples(store, graph: ox.NamedNode) -> set[ox.Triple]:
    rows = store.select(f"SELECT ?s ?p ?o WHERE {{ GRAPH {graph} {{ ?s ?p ?o }} }}")
    return {ox.Triple(row["s"], row["p"], row["o"]) for row in rows}


def objects(triples: set[ox.Triple], subject: str, predicate: str) -> list:
    return [
        t.object
        for t in triples
        if t.subject == ox.NamedNode(subject) and t.predicate == ox.NamedNode(predicate)
    ]


def only(values: list):
    assert len(values) == 1, values
    return values[0]


def answer_text(messages: list[GraphRagResponse]) -> str:
    return "".join(m.response for m in messages if m.message_type == "chunk")


@pytest.fixture
def recorded(tgsparql_demo_pipeline: GraphRag):
    messages = run(tgsparql_demo_pipeline)
    uuid = session_uuid(messages)
    return messages, uuid, graph_triples(tgsparql_demo_pipeline.store, EXPLAINABILITY)


def test_all_iris_of_a_session_share_one_uuid_in_the_spec_forms(recorded) -> None:
    messages, uuid, triples = recorded
    assert re.fullmatch(UUID, uuid)
    subjects = {t.subject.value for t in triples}
    edges = sorted(s for s in subjects if s.startswith("urn:trustgraph:prov:edge:"))
    assert edges, "the demo question selects at least one edge"
    assert edges == sorted(f"urn:trustgraph:prov:edge:{uuid}:{i}" for i in range(len(edges)))
    cuts = sorted(s for s in subjects if s.startswith("urn:trustgraph:prov:seed:"))
    assert cuts, "every seed of the demo question has its cut recorded"
    assert cuts == sorted(f"urn:trustgraph:prov:seed:{uuid}:{i}" for i in range(len(cuts)))
    citations = sorted(s for s in subjects if s.startswith("urn:trustgraph:prov:citation:"))
    assert citations == sorted(
        f"urn:trustgraph:prov:citation:{uuid}:{i}" for i in range(len(citations)))
    # and the session's day, which says it holds sessions (shared by the day's sessions), and
    # the collection's graph, whose first session this is: it says the records' format
    (day,) = [t.object.value for t in triples if t.predicate.value == vocab.TG + "day"]
    assert subjects == {
        EXPLAINABILITY.value,
        f"urn:trustgraph:session:{uuid}",
        f"urn:trustgraph:prov:retrieval:{uuid}",
        f"urn:trustgraph:prov:selection:{uuid}",
        f"urn:trustgraph:prov:answer:{uuid}",
        *edges,
        *cuts,
        *citations,
        f"urn:trustgraph:day:{day}",
    }
    session_namespace = [
        term.value
        for t in triples
        for term in (t.subject, t.object)
        if isinstance(term, ox.NamedNode) and term.value.startswith("urn:trustgraph:")
        and not term.value.startswith("urn:trustgraph:day:")
    ]
    assert {re.search(UUID, iri).group(0) for iri in session_namespace} == {uuid}
    document = only(objects(triples, f"urn:trustgraph:prov:answer:{uuid}", TG + "document"))
    assert document == ox.NamedNode(f"urn:trustgraph:answer:{uuid}")


def test_each_entity_has_exactly_the_spec_types_labels_and_predicates(recorded) -> None:
    _, uuid, triples = recorded
    session = f"urn:trustgraph:session:{uuid}"
    retrieval = f"urn:trustgraph:prov:retrieval:{uuid}"
    selection = f"urn:trustgraph:prov:selection:{uuid}"
    answer = f"urn:trustgraph:prov:answer:{uuid}"
    expected = {
        session: (PROV + "Activity", "GraphRAG query session"),
        retrieval: (PROV + "Entity", "Retrieved edges"),
        selection: (PROV + "Entity", "Selected edges"),
        answer: (PROV + "Entity", "GraphRAG answer"),
    }
    for iri, (rdf_type, label) in expected.items():
        assert objects(triples, iri, RDF + "type") == [ox.NamedNode(rdf_type)]
        assert objects(triples, iri, RDFS + "label") == [ox.Literal(label)]

    def predicates(iri: str) -> set[str]:
        return {t.predicate.value for t in triples if t.subject == ox.NamedNode(iri)}

    assert predicates(session) == {
        RDF + "type", RDFS + "label", PROV + "startedAtTime", PROV + "endedAtTime",
        TG + "query", TG + "status", TG + "day", TG + "completeDay",
    }
    assert predicates(retrieval) == {
        RDF + "type", RDFS + "label", PROV + "wasGeneratedBy", TG + "edgeCount",
        TG + "concept", TG + "entity", TG + "retrievedEdge", TG + "rankingRule", TG + "seedCut",
    }
    assert objects(triples, retrieval, TG + "rankingRule") == [
        ox.NamedNode(TG + "QuestionPathRarityRanking")
    ]
    seeds = set(objects(triples, retrieval, TG + "entity"))
    cuts = objects(triples, retrieval, TG + "seedCut")
    assert {only(objects(triples, cut.value, TG + "seed")) for cut in cuts} == seeds
    for cut in cuts:
        assert objects(triples, cut.value, RDF + "type") == [ox.NamedNode(TG + "SeedCut")]
        assert predicates(cut.value) == {RDF + "type", TG + "seed", TG + "candidateEdges"}
        assert int(only(objects(triples, cut.value, TG + "candidateEdges")).value) >= 1
    assert predicates(selection) == {
        RDF + "type", RDFS + "label", PROV + "wasDerivedFrom", TG + "selectedEdge",
        TG + "selectedEdgeCount", TG + "invalidIdCount", TG + "sourceDocument",
        TG + "sourceDocumentCount",
    }
    assert predicates(answer) == {RDF + "type", RDFS + "label", PROV + "wasDerivedFrom",
                                  TG + "document", TG + "cites", TG + "citation",
                                  TG + "citedEdgeCount", TG + "invalidCitationCount",
                                  TG + "uncitedSentenceCount"}
    for edge in objects(triples, selection, TG + "selectedEdge"):
        assert objects(triples, edge.value, RDF + "type") == [ox.NamedNode(TG + "EdgeSelection")]
        assert predicates(edge.value) == {RDF + "type", TG + "edge", TG + "reasoning",
                                          TG + "factDocument"}
    for citation in objects(triples, answer, TG + "citation"):
        assert objects(triples, citation.value, RDF + "type") == [ox.NamedNode(TG + "Citation")]
        assert predicates(citation.value) == {RDF + "type", TG + "citedEdge", TG + "sentence",
                                              TG + "charOffset", TG + "charLength"}
    assert only(objects(triples, session, TG + "query")) == ox.Literal(QUESTION)
    assert only(objects(triples, session, TG + "status")) == ox.Literal("complete")
    started = only(objects(triples, session, PROV + "startedAtTime")).value
    day = ox.Literal(dt.datetime.fromisoformat(started).astimezone(dt.timezone.utc).date()
                     .isoformat(), datatype=ox.NamedNode(XSD + "date"))
    assert objects(triples, session, TG + "day") == [day]
    assert objects(triples, session, TG + "completeDay") == [day]
    assert objects(triples, selection, TG + "selectedEdgeCount") == [
        ox.Literal(str(len(objects(triples, selection, TG + "selectedEdge"))),
                   datatype=ox.NamedNode(XSD + "integer"))]


def test_the_selection_names_the_documents_that_state_each_selected_fact(
    recorded, tgsparql_demo_pipeline
) -> None:
    """Each edge selection names the documents found by walking its fact to its chunks
    (tgsparql.asking.sources.facts_sources), the Selection each of them once, with their number."""
    _, uuid, triples = recorded
    selection = f"urn:trustgraph:prov:selection:{uuid}"
    named: set[ox.Term] = set()
    for edge_selection in objects(triples, selection, TG + "selectedEdge"):
        fact = only(objects(triples, edge_selection.value, TG + "edge"))
        assert isinstance(fact, ox.Triple)
        stating = {ox.NamedNode(source.document) for source in
                   facts_sources(tgsparql_demo_pipeline.store, [fact]).get(fact, [])}
        assert stating  # the demo's facts all come from its documents
        assert set(objects(triples, edge_selection.value, TG + "factDocument")) == stating
        named |= stating
    documents = objects(triples, selection, TG + "sourceDocument")
    assert len(documents) == len(named) >= 1 and set(documents) == named
    assert objects(triples, selection, TG + "sourceDocumentCount") == [
        ox.Literal(str(len(named)), datatype=ox.NamedNode(XSD + "integer"))]


def test_a_selection_whose_facts_no_document_states_names_none() -> None:
    store = EmbeddedStore(None)
    recorder = Recorder(store)
    ids = SessionIds.new()
    fact = ox.Triple(ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "bornIn"),
                     ox.NamedNode(ENT + "Warsaw"))
    recorder.write(recorder.selection(ids, [SelectedEdge("id", fact, "because")], 0, None, {}))
    triples = graph_triples(store, EXPLAINABILITY)
    assert objects(triples, ids.selection.value, TG + "sourceDocumentCount") == [
        ox.Literal("0", datatype=ox.NamedNode(XSD + "integer"))]
    assert objects(triples, ids.selection.value, TG + "sourceDocument") == []
    assert objects(triples, ids.edge_selection(0).value, TG + "factDocument") == []


def test_every_literal_is_typed_with_the_datatype_of_its_predicate(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    tgsparql_demo_pipeline = GraphRag(tgsparql_demo_pipeline.store, UsageBackend())
    run(tgsparql_demo_pipeline)
    rows = tgsparql_demo_pipeline.store.select(
        PREFIXES
        + "SELECT ?p ?o WHERE { GRAPH <urn:graph:explainability> { ?s ?p ?o FILTER isLiteral(?o) } }"
    )
    assert rows
    seen = set()
    for row in rows:
        predicate, literal = row["p"].value, row["o"]
        assert predicate in DATATYPE_OF, predicate
        assert literal.language is None
        assert literal.datatype == ox.NamedNode(DATATYPE_OF[predicate]), (predicate, literal)
        seen.add(predicate)
    assert {TG + "inToken", TG + "outToken", TG + "llmModel", TG + "edgeCount",
            TG + "invalidIdCount", PROV + "startedAtTime", PROV + "endedAtTime"} <= seen


def test_llm_usage_is_recorded_as_typed_model_and_token_counts(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    tgsparql_demo_pipeline = GraphRag(tgsparql_demo_pipeline.store, UsageBackend())
    uuid = session_uuid(run(tgsparql_demo_pipeline))
    triples = graph_triples(tgsparql_demo_pipeline.store, EXPLAINABILITY)
    selection = f"urn:trustgraph:prov:selection:{uuid}"
    answer = f"urn:trustgraph:prov:answer:{uuid}"
    integer = ox.NamedNode(XSD + "integer")
    assert objects(triples, selection, TG + "llmModel") == [ox.Literal("test-model-select")]
    assert objects(triples, selection, TG + "inToken") == [ox.Literal("812", datatype=integer)]
    assert objects(triples, selection, TG + "outToken") == [ox.Literal("95", datatype=integer)]
    assert objects(triples, answer, TG + "llmModel") == [ox.Literal("test-model-answer")]
    assert objects(triples, answer, TG + "inToken") == [ox.Literal("1024", datatype=integer)]
    assert objects(triples, answer, TG + "outToken") == [ox.Literal("37", datatype=integer)]


def test_the_offline_selection_and_answer_record_no_llm_model_or_tokens(recorded) -> None:
    _, uuid, triples = recorded
    for iri in (f"urn:trustgraph:prov:selection:{uuid}", f"urn:trustgraph:prov:answer:{uuid}"):
        for predicate in ("llmModel", "inToken", "outToken"):
            assert objects(triples, iri, TG + predicate) == []


def test_the_derivation_chain_links_session_retrieval_selection_answer(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    uuid = session_uuid(run(tgsparql_demo_pipeline))
    rows = tgsparql_demo_pipeline.store.select(
        PREFIXES
        + """
        SELECT ?session ?retrieval ?selection ?answer ?document WHERE {
          GRAPH <urn:graph:explainability> {
            ?retrieval prov:wasGeneratedBy ?session .
            ?selection prov:wasDerivedFrom ?retrieval .
            ?answer prov:wasDerivedFrom ?selection ; tg:document ?document .
          }
        }"""
    )
    assert [{k: v.value for k, v in row.items()} for row in rows] == [
        {
            "session": f"urn:trustgraph:session:{uuid}",
            "retrieval": f"urn:trustgraph:prov:retrieval:{uuid}",
            "selection": f"urn:trustgraph:prov:selection:{uuid}",
            "answer": f"urn:trustgraph:prov:answer:{uuid}",
            "document": f"urn:trustgraph:answer:{uuid}",
        }
    ]


def test_the_session_ends_complete_no_earlier_than_it_started(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    uuid = session_uuid(run(tgsparql_demo_pipeline))
    row = only(
        tgsparql_demo_pipeline.store.select(
            PREFIXES
            + f"""
            SELECT ?status ?start ?end ((?end >= ?start) AS ?ordered) WHERE {{
              GRAPH <urn:graph:explainability> {{
                <urn:trustgraph:session:{uuid}> tg:status ?status ;
                    prov:startedAtTime ?start ; prov:endedAtTime ?end .
              }}
            }}"""
        )
    )
    assert row["status"] == ox.Literal("complete")
    assert row["ordered"] == ox.Literal(True)


def test_edge_count_equals_the_retrieved_edge_triple_terms(recorded) -> None:
    _, uuid, triples = recorded
    retrieval = f"urn:trustgraph:prov:retrieval:{uuid}"
    retrieved = objects(triples, retrieval, TG + "retrievedEdge")
    assert all(isinstance(edge, ox.Triple) for edge in retrieved)
    count = only(objects(triples, retrieval, TG + "edgeCount"))
    assert int(count.value) == len(set(retrieved)) == len(retrieved) == 15


def test_retrieval_records_the_grounding_concepts_and_seed_entities(recorded) -> None:
    _, uuid, triples = recorded
    retrieval = f"urn:trustgraph:prov:retrieval:{uuid}"
    assert sorted(c.value for c in objects(triples, retrieval, TG + "concept")) == [
        "born", "discovered", "polonium", "scientist",
    ]
    assert objects(triples, retrieval, TG + "entity") == [ox.NamedNode(ENT + "Polonium")]


def test_selected_edges_are_original_kg_triples_among_the_retrieved(
    recorded, tgsparql_demo_pipeline
) -> None:
    _, uuid, triples = recorded
    rag = tgsparql_demo_pipeline
    when = session_uuid(run(rag, "When was Marie Curie born?"))  # a typed literal's year
    triples = graph_triples(rag.store, EXPLAINABILITY)
    edges = []
    for session in (uuid, when):
        edges += _selected_kg_triples(rag, triples, session)
    assert ox.Triple(
        ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "bornIn"), ox.NamedNode(ENT + "Warsaw")
    ) in edges
    year = ox.Triple(
        ox.NamedNode(ENT + "Marie_Curie"),
        ox.NamedNode(REL + "birthYear"),
        ox.Literal("1867", datatype=ox.NamedNode(XSD + "integer")),
    )
    assert year in edges, "the typed literal object is kept, not its label"


def _selected_kg_triples(rag: GraphRag, triples, uuid: str) -> list[ox.Triple]:
    """The session's selected edges, each checked to be retrieved and asserted in the KG."""
    retrieved = set(objects(triples, f"urn:trustgraph:prov:retrieval:{uuid}", TG + "retrievedEdge"))
    selections = objects(triples, f"urn:trustgraph:prov:selection:{uuid}", TG + "selectedEdge")
    edges = []
    for selection in selections:
        edge = only(objects(triples, selection.value, TG + "edge"))
        assert isinstance(edge, ox.Triple)
        assert edge in retrieved
        asserted = list(
            rag.store.oxigraph.quads_for_pattern(
                edge.subject, edge.predicate, edge.object, ox.DefaultGraph()
            )
        )
        assert len(asserted) == 1
        reasoning = only(objects(triples, selection.value, TG + "reasoning"))
        assert reasoning.value.startswith("offline selector: ")
        edges.append(edge)
    return edges


def test_the_answer_text_is_in_the_librarian_with_its_sha256(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    messages = run(tgsparql_demo_pipeline)
    uuid = session_uuid(messages)
    text = answer_text(messages)
    assert text
    library = graph_triples(tgsparql_demo_pipeline.store, LIBRARY)
    document = f"urn:trustgraph:answer:{uuid}"
    assert objects(library, document, TG + "content") == [ox.Literal(text)]
    assert objects(library, document, TG + "mimeType") == [ox.Literal("text/plain")]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert objects(library, document, TG + "contentSha256") == [ox.Literal(digest)]
    title = only(objects(library, document, DC + "title"))
    assert title.datatype == ox.NamedNode(XSD + "string") and title.value
    explainability = graph_triples(tgsparql_demo_pipeline.store, EXPLAINABILITY)
    assert all(t.predicate != ox.NamedNode(TG + "content") for t in explainability)
    assert all(t.object != ox.Literal(text) for t in explainability)


def test_explain_triples_of_each_message_are_exactly_what_that_write_stored(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    store = RecordingStore(tgsparql_demo_pipeline.store)
    recording = GraphRag(store, OfflineBackend())
    store.writes.clear()
    messages = run(recording)
    uuid = session_uuid(messages)
    explains = [m for m in messages if m.message_type == "explain"]
    assert [m.explain_id for m in explains] == [
        f"urn:trustgraph:session:{uuid}",
        f"urn:trustgraph:prov:retrieval:{uuid}",
        f"urn:trustgraph:prov:selection:{uuid}",
        f"urn:trustgraph:prov:answer:{uuid}",
    ]
    assert len(store.writes) == 3  # session + retrieval, selection, librarian + answer
    start_w, selection_w, finish_w = store.writes
    written_explainability = [
        {q.triple for q in write if q.graph_name == EXPLAINABILITY} for write in store.writes
    ]
    assert {q.graph_name for q in start_w} == {EXPLAINABILITY}
    assert {q.graph_name for q in selection_w} == {EXPLAINABILITY}
    assert {q.graph_name for q in finish_w} == {EXPLAINABILITY, LIBRARY}
    session_m, retrieval_m, selection_m, answer_m = explains
    for message in explains:
        assert len(message.explain_triples) == len(set(message.explain_triples))
    # the first session of the collection also wrote the collection's record format, which
    # is no session's
    assert set(session_m.explain_triples) | set(retrieval_m.explain_triples) == (
        written_explainability[0] - {record_format(EXPLAINABILITY)}
    )
    assert record_format(EXPLAINABILITY) in written_explainability[0]
    assert not set(session_m.explain_triples) & set(retrieval_m.explain_triples)
    assert set(selection_m.explain_triples) == written_explainability[1]
    assert set(answer_m.explain_triples) == written_explainability[2]
    union = {t for m in explains for t in m.explain_triples}
    assert union | {record_format(EXPLAINABILITY)} == graph_triples(
        tgsparql_demo_pipeline.store, EXPLAINABILITY)


def test_without_recorded_retrieved_edges_the_edge_count_is_still_right(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    full = session_uuid(run(tgsparql_demo_pipeline))
    lean_rag = GraphRag(tgsparql_demo_pipeline.store, OfflineBackend(),
                        record_retrieved_edges=False)
    lean = session_uuid(run(lean_rag))
    triples = graph_triples(tgsparql_demo_pipeline.store, EXPLAINABILITY)
    full_retrieval = f"urn:trustgraph:prov:retrieval:{full}"
    lean_retrieval = f"urn:trustgraph:prov:retrieval:{lean}"
    assert objects(triples, lean_retrieval, TG + "retrievedEdge") == []
    retrieved = objects(triples, full_retrieval, TG + "retrievedEdge")
    assert only(objects(triples, lean_retrieval, TG + "edgeCount")) == ox.Literal(
        str(len(retrieved)), datatype=ox.NamedNode(XSD + "integer")
    )
    assert len(retrieved) == 15
    assert objects(triples, f"urn:trustgraph:prov:selection:{lean}", TG + "selectedEdge")


def test_another_collection_writes_only_to_its_own_graph(tgsparql_demo_pipeline: GraphRag) -> None:
    other = GraphRag(tgsparql_demo_pipeline.store, OfflineBackend(),
                     collection=vocab.Collection("other"))
    messages = run(other)
    uuid = session_uuid(messages)
    explains = [m for m in messages if m.message_type == "explain"]
    assert [m.explain_collection for m in explains] == ["other"] * 4
    assert graph_triples(tgsparql_demo_pipeline.store, EXPLAINABILITY) == set()
    recorded = graph_triples(tgsparql_demo_pipeline.store, ox.NamedNode("urn:graph:other"))
    assert objects(recorded, f"urn:trustgraph:session:{uuid}", TG + "status") == [
        ox.Literal("complete")
    ]
    assert recorded == {t for m in explains for t in m.explain_triples} | {
        record_format(ox.NamedNode("urn:graph:other"))}


def record_format(graph: ox.NamedNode) -> ox.Triple:
    """What the first session of a collection writes besides its own record."""
    return ox.Triple(graph, ox.NamedNode(TG + "recordFormat"),
                     ox.Literal(str(vocab.RECORD_FORMAT), datatype=ox.NamedNode(XSD + "integer")))


@pytest.mark.parametrize(
    "collection",
    ["source", "library", "index", "", " ", "a b", "x>y", "-x", ".x", "a" * 65, "ünï", "a/b", 5, None],
)
def test_reserved_or_invalid_collection_names_raise(collection) -> None:
    with pytest.raises(CollectionError):
        vocab.Collection(collection)


@pytest.mark.parametrize("collection", ["explainability", "a", "Team-1.v2_x", "a" * 64])
def test_valid_collection_names_name_their_graph(collection) -> None:
    assert vocab.Collection(collection).graph == ox.NamedNode(f"urn:graph:{collection}")


def _ntriples_sha(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def test_reification_dialect_records_content_addressed_statements(tgsparql_store) -> None:
    tgsparql_store.dialect = "reification"
    recorder = Recorder(tgsparql_store)
    born = ox.Triple(
        ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "bornIn"), ox.NamedNode(ENT + "Warsaw")
    )
    year = ox.Triple(
        ox.NamedNode(ENT + "Marie_Curie"),
        ox.NamedNode(REL + "birthYear"),
        ox.Literal("1867", datatype=ox.NamedNode(XSD + "integer")),
    )
    expected_iri = {
        born: "urn:trustgraph:stmt:" + _ntriples_sha(
            f"<{ENT}Marie_Curie> <{REL}bornIn> <{ENT}Warsaw> ."
        ),
        year: "urn:trustgraph:stmt:" + _ntriples_sha(
            f'<{ENT}Marie_Curie> <{REL}birthYear> "1867"^^<{XSD}integer> .'
        ),
    }
    sessions = [SessionIds.new(), SessionIds.new()]
    for ids in sessions:
        recorder.write(
            recorder.session(ids, "q", dt.datetime.now(dt.timezone.utc)),
            recorder.retrieval(ids, Grounding(["curie"], [born.subject]), [born, year]),
            recorder.selection(ids, [SelectedEdge("id", born, "because")], 0, None, {}),
        )
    triples = graph_triples(tgsparql_store, EXPLAINABILITY)
    for ids in sessions:
        retrieved = objects(triples, ids.retrieval.value, TG + "retrievedEdge")
        assert sorted(r.value for r in retrieved) == sorted(expected_iri.values())
        edge = only(objects(triples, ids.edge_selection(0).value, TG + "edge"))
        assert edge == ox.NamedNode(expected_iri[born])
    assert not any(isinstance(t.object, ox.Triple) for t in triples)
    for triple, iri in expected_iri.items():
        assert objects(triples, iri, RDF + "type") == [ox.NamedNode(RDF + "Statement")]
        assert objects(triples, iri, RDF + "subject") == [triple.subject]
        assert objects(triples, iri, RDF + "predicate") == [triple.predicate]
        assert objects(triples, iri, RDF + "object") == [triple.object]
