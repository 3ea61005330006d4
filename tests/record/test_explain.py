"""Reading the record back: one session explained in full, and the list of sessions."""

from __future__ import annotations

import json
import uuid as uuidlib

import pyoxigraph as ox
import pytest

from tests.record.test_trace import CountingStore
from tgsparql.asking.llm.base import LLMError, SelectionOutput, SelectionRequest
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.messages import GraphRagResponse
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.record.explain import SessionNotFound, explain_session, list_sessions

QUESTION = "Where was the scientist who discovered polonium born?"
TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"
XSD = "http://www.w3.org/2001/XMLSchema#"
ENT = "https://example.org/demo/entity/"
REL = "https://example.org/demo/rel/"
DOC = "https://example.org/demo/doc/marie-curie"
EXPLAINABILITY = ox.NamedNode("urn:graph:explainability")

DISCOVERED = ox.Triple(
    ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "discovered"), ox.NamedNode(ENT + "Polonium")
)
BORN_IN = ox.Triple(
    ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "bornIn"), ox.NamedNode(ENT + "Warsaw")
)
CHUNK_0 = "urn:chunk:73279646-822c-4a72-96b1-9c31356333ba"
CHUNK_1 = "urn:chunk:c109fd02-e445-4c61-82d6-10161a2a9191"


def asked(rag: GraphRag, question: str = QUESTION) -> list[GraphRagResponse]:
    return list(rag.query(question, stream=True))


def uuid_of(messages: list[GraphRagResponse]) -> str:
    return messages[0].explain_id.rsplit(":", 1)[1]


@pytest.fixture
def demo_session(tgsparql_demo_pipeline: GraphRag):
    messages = asked(tgsparql_demo_pipeline)
    assert messages[-1].error is None
    return tgsparql_demo_pipeline, messages, explain_session(
        tgsparql_demo_pipeline.store, vocab.DEFAULT_COLLECTION, messages[0].explain_id)


def stored_reasoning(store, iri: str) -> str:
    rows = store.select(
        f"SELECT ?r WHERE {{ GRAPH {EXPLAINABILITY} {{ <{iri}> <{TG}reasoning> ?r }} }}"
    )
    assert len(rows) == 1
    return rows[0]["r"].value


def test_explain_session_reports_the_question_status_and_retrieval(demo_session) -> None:
    _, messages, explanation = demo_session
    uuid = uuid_of(messages)
    assert explanation.session == f"urn:trustgraph:session:{uuid}"
    assert explanation.collection == "explainability"
    assert explanation.question == QUESTION
    assert explanation.status == "complete"
    assert explanation.error is None
    assert explanation.started is not None and explanation.ended is not None
    assert explanation.edge_count == 15
    assert explanation.retrieved_edges_recorded == 15
    assert explanation.concepts == ["born", "discovered", "polonium", "scientist"]
    assert explanation.entities == [(ENT + "Polonium", "polonium")]
    assert explanation.invalid_ids == 0
    assert explanation.selection_usage == {} and explanation.answer_usage == {}


def test_explain_session_counts_the_edges_not_selected_and_labels_the_first_asked_for(
    demo_session,
) -> None:
    rag, messages, explanation = demo_session
    selected = {edge.edge for edge in explanation.selected}
    assert explanation.unselected_count == explanation.edge_count - len(selected) > 2
    assert explanation.unselected == []  # none asked for
    asked_for = explain_session(rag.store, vocab.DEFAULT_COLLECTION,
                                messages[0].explain_id, unselected=2)
    assert asked_for.unselected_count == explanation.unselected_count
    assert len(asked_for.unselected) == 2
    assert not {u.edge for u in asked_for.unselected} & selected
    assert all(not label.startswith("http") for u in asked_for.unselected for label in u.labels)
    assert sorted(asked_for.unselected, key=lambda u: str(u.edge)) == asked_for.unselected


def test_explain_session_keeps_each_citation_with_its_sentence_where_it_stands(
    demo_session,
) -> None:
    _, _, explanation = demo_session
    assert explanation.citations
    indexes = {edge.index for edge in explanation.selected}
    for citation in explanation.citations:
        assert citation.edge_index in indexes
        assert citation.offset is not None and citation.length == len(citation.sentence)
        assert explanation.answer[citation.offset:citation.offset + citation.length] \
            == citation.sentence
    offsets = [citation.offset for citation in explanation.citations]
    assert offsets == sorted(offsets)
    assert json.loads(json.dumps(explanation.to_json()))["citations"][0]["sentence"] \
        == explanation.citations[0].sentence


def test_explain_session_lists_selected_edges_in_index_order_with_labels_and_sources(
    demo_session,
) -> None:
    rag, messages, explanation = demo_session
    uuid = uuid_of(messages)
    assert [(e.index, e.iri, e.edge, e.labels) for e in explanation.selected] == [
        (0, f"urn:trustgraph:prov:edge:{uuid}:0", DISCOVERED, ("Marie Curie", "discovered", "polonium")),
        (1, f"urn:trustgraph:prov:edge:{uuid}:1", BORN_IN, ("Marie Curie", "born in", "Warsaw")),
    ]
    for edge in explanation.selected:
        assert edge.reasoning == stored_reasoning(rag.store, edge.iri)
        assert edge.reasoning.startswith("offline selector: this edge matches ")
    assert [
        [(s.edge_selection, s.document, s.chunk, s.page_number, s.char_offset)
         for s in e.answer_sources()]
        for e in explanation.selected
    ] == [
        [(f"urn:trustgraph:prov:edge:{uuid}:0", DOC, CHUNK_1, 1, 302)],
        [(f"urn:trustgraph:prov:edge:{uuid}:1", DOC, CHUNK_0, 1, 0)],
    ]
    assert explanation.selected[1].answer_sources()[0].text == (
        "Marie Curie was born Maria Skłodowska in Warsaw in 1867."
    )
    streamed_sources = messages[-1].sources
    assert [s for e in explanation.selected for s in e.answer_sources()] == streamed_sources


def test_explain_session_returns_the_answer_text_intact(demo_session) -> None:
    _, messages, explanation = demo_session
    streamed = "".join(m.response for m in messages if m.message_type == "chunk")
    assert streamed
    assert explanation.answer == streamed
    assert explanation.answer_intact is True


def test_explain_session_triples_are_every_triple_recorded_for_the_session(demo_session) -> None:
    rag, messages, explanation = demo_session
    asked(rag, "Who married Pierre Curie?")  # another session must not leak in
    explained = {t for m in messages for t in m.explain_triples}
    assert set(explanation.triples) == explained
    assert len(explanation.triples) == len(explained)


@pytest.mark.parametrize(
    "tamper",
    [
        (f"<{TG}contentSha256>", '"' + "0" * 64 + '"'),
        (f"<{TG}content>", '"Paris."'),
    ],
    ids=["sha", "content"],
)
def test_tampering_with_the_stored_answer_makes_it_not_intact(demo_session, tamper) -> None:
    rag, messages, _ = demo_session
    predicate, value = tamper
    document = f"<urn:trustgraph:answer:{uuid_of(messages)}>"
    rag.store.update(
        f"""DELETE {{ GRAPH <urn:graph:library> {{ {document} {predicate} ?old }} }}
        INSERT {{ GRAPH <urn:graph:library> {{ {document} {predicate} {value} }} }}
        WHERE {{ GRAPH <urn:graph:library> {{ {document} {predicate} ?old }} }}"""
    )
    explanation = explain_session(rag.store, vocab.DEFAULT_COLLECTION, messages[0].explain_id)
    assert explanation.answer_intact is False
    assert explanation.answer == ("Paris." if predicate.endswith("content>") else messages_text(messages))


def messages_text(messages: list[GraphRagResponse]) -> str:
    return "".join(m.response for m in messages if m.message_type == "chunk")


def test_an_unknown_session_raises_session_not_found(tgsparql_demo_store) -> None:
    with pytest.raises(SessionNotFound):
        explain_session(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                        f"urn:trustgraph:session:{uuidlib.uuid4()}")


def test_a_session_of_another_collection_is_not_found(demo_session) -> None:
    rag, messages, _ = demo_session
    with pytest.raises(SessionNotFound):
        explain_session(rag.store, vocab.Collection("other"), messages[0].explain_id)


@pytest.mark.parametrize("text", ["not-a-session", "urn:trustgraph:session:xyz", ""])
def test_a_malformed_session_reference_is_a_value_error(tgsparql_demo_store, text) -> None:
    with pytest.raises(ValueError, match="not a session IRI"):
        explain_session(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, text)


def test_explain_session_accepts_the_bare_uuid(demo_session) -> None:
    rag, messages, explanation = demo_session
    uuid = uuid_of(messages)
    for reference in (uuid, uuid.upper(), f"  {messages[0].explain_id} "):
        by_uuid = explain_session(rag.store, vocab.DEFAULT_COLLECTION, reference)
        assert by_uuid.session == explanation.session
        assert set(by_uuid.triples) == set(explanation.triples)
        assert by_uuid.to_json() == explanation.to_json()


def test_to_json_is_json_serialisable_with_terms_as_text(demo_session) -> None:
    rag, messages, explanation = demo_session
    data = json.loads(json.dumps(explanation.to_json()))
    assert data["question"] == QUESTION
    assert data["status"] == "complete"
    assert data["edge_count"] == 15
    assert data["entities"] == [{"iri": ENT + "Polonium", "label": "polonium"}]
    assert data["answer_intact"] is True
    first = data["selected"][0]
    assert first["edge"] == f"<<( <{ENT}Marie_Curie> <{REL}discovered> <{ENT}Polonium> )>>"
    assert first["labels"] == ["Marie Curie", "discovered", "polonium"]
    assert first["sources"][0]["document"] == DOC
    when = asked(rag, "When was Marie Curie born?")[0].explain_id
    year = explain_session(rag.store, vocab.DEFAULT_COLLECTION, when).to_json()["selected"][0]
    assert json.loads(json.dumps(year))["edge"] == (
        f'<<( <{ENT}Marie_Curie> <{REL}birthYear> "1867"^^<{XSD}integer> )>>'
    )


def test_turtle_parses_back_to_the_same_triples(demo_session) -> None:
    _, _, explanation = demo_session
    text = explanation.turtle()
    parsed = {quad.triple for quad in ox.parse(text, ox.RdfFormat.TURTLE)}
    assert parsed == set(explanation.triples)
    assert any(isinstance(t.object, ox.Triple) for t in parsed)


def test_turtle_is_the_record_alone_not_what_its_query_read_beside_it(demo_session) -> None:
    """One query reads the record with the KG's labels, the sources and the librarian's text;
    the Turtle holds the record, and no triple of another graph."""
    rag, messages, explanation = demo_session
    turtle = {quad.triple for quad in ox.parse(explanation.turtle(), ox.RdfFormat.TURTLE)}
    assert turtle == {t for m in messages for t in m.explain_triples}
    assert explanation.entities == [(ENT + "Polonium", "polonium")]
    assert explanation.selected[0].sources and explanation.answer_intact
    elsewhere = {quad.triple for quad in rag.store.oxigraph.quads_for_pattern(None, None, None)
                 if quad.graph_name != EXPLAINABILITY}
    assert elsewhere and not turtle & elsewhere


NESTED = "https://example.org/nested/"


def add_retrieved_edge(rag: GraphRag, session: str, edge: str, names: list[str]) -> None:
    """`edge` (RDF 1.2 syntax over the ex: prefix) recorded as retrieved for `session`, each of
    `names` labelled in the KG by itself in capitals."""
    labels = " ".join(f'ex:{name} rdfs:label "{name.upper()}" .' for name in names)
    rag.store.update(
        f"PREFIX ex: <{NESTED}> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
        f"INSERT DATA {{ GRAPH {EXPLAINABILITY} {{ "
        f"{SessionIds.from_session_iri(session).retrieval} <{TG}retrievedEdge> {edge} }} "
        f"{labels} }}")


def test_the_terms_of_a_nested_edge_are_labelled_by_the_one_query_down_to_its_object(
    demo_session,
) -> None:
    rag, messages, _ = demo_session
    session = messages[0].explain_id
    add_retrieved_edge(rag, session, "<<( ex:a0 ex:p0 <<( ex:a1 ex:p1 ex:o1 )>> )>>",
                       ["a0", "p0", "a1", "p1", "o1"])
    counting = CountingStore(rag.store)
    explained = explain_session(counting, vocab.DEFAULT_COLLECTION, session, unselected=100)
    assert len(counting.requests) == 1
    nested = [u.labels for u in explained.unselected if str(u.edge.subject).startswith(f"<{NESTED}")]
    assert nested == [("A0", "P0", "(A1 P1 O1)")]


def test_the_terms_nested_deeper_are_labelled_by_a_second_request(demo_session) -> None:
    rag, messages, _ = demo_session
    session = messages[0].explain_id
    add_retrieved_edge(rag, session,
                       "<<( ex:b0 ex:p0 <<( ex:b1 ex:p1 <<( ex:b2 ex:p2 ex:o2 )>> )>> )>>",
                       ["b0", "p0", "b1", "p1", "b2", "p2", "o2"])
    counting = CountingStore(rag.store)
    explained = explain_session(counting, vocab.DEFAULT_COLLECTION, session, unselected=100)
    nested = [u.labels for u in explained.unselected if str(u.edge.subject).startswith(f"<{NESTED}")]
    assert nested == [("B0", "P0", "(B1 P1 (B2 P2 O2))")]
    assert len(counting.requests) == 2
    assert counting.requests[1] == rag.templates.render(
        "fetch_labels", terms=[ox.NamedNode(NESTED + name) for name in ("b2", "o2", "p2")])


def test_a_failed_session_is_explained_with_its_error(tgsparql_demo_store) -> None:
    class Broken(OfflineBackend):
        def select(self, request: SelectionRequest) -> SelectionOutput:
            raise LLMError("model unreachable")

    rag = GraphRag(tgsparql_demo_store, Broken())
    messages = asked(rag)
    explanation = explain_session(tgsparql_demo_store, vocab.DEFAULT_COLLECTION,
                                  messages[0].explain_id)
    assert explanation.status == "failed"
    assert explanation.error == messages[-1].error.message
    assert explanation.error.startswith("selection failed: ")
    assert explanation.edge_count == 15
    assert explanation.selected == []
    assert explanation.answer is None and explanation.answer_intact is None


HAND_SESSIONS = f"""
PREFIX tg: <{TG}>
PREFIX prov: <{PROV}>
PREFIX xsd: <{XSD}>
INSERT DATA {{ GRAPH <urn:graph:explainability> {{
  <urn:trustgraph:session:00000000-0000-4000-8000-00000000000a> a prov:Activity ;
      tg:query "question A" ;
      prov:startedAtTime "2026-01-01T10:00:00+05:00"^^xsd:dateTime ;
      prov:endedAtTime "2026-01-01T10:00:01+05:00"^^xsd:dateTime ;
      tg:status "complete" .
  <urn:trustgraph:session:00000000-0000-4000-8000-00000000000b> a prov:Activity ;
      tg:query "question B" ;
      prov:startedAtTime "2026-01-01T06:00:00Z"^^xsd:dateTime ;
      prov:endedAtTime "2026-01-01T06:00:02Z"^^xsd:dateTime ;
      tg:status "complete" .
  <urn:trustgraph:session:00000000-0000-4000-8000-00000000000c> a prov:Activity ;
      tg:query "question C" ;
      prov:startedAtTime "2026-01-01T00:30:00-05:00"^^xsd:dateTime ;
      prov:endedAtTime "2026-01-01T00:30:03-05:00"^^xsd:dateTime ;
      tg:status "failed" ;
      tg:error "selection failed: boom" .
}} }}
"""


def test_list_sessions_is_newest_first_by_real_time_not_text(tgsparql_demo_store) -> None:
    tgsparql_demo_store.update(HAND_SESSIONS)
    listed = list_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, 10)
    # B is 06:00Z, C is 05:30Z, A is 05:00Z; as text A > B > C.
    assert [s.question for s in listed] == ["question B", "question C", "question A"]
    assert [s.started for s in listed] == [
        "2026-01-01T06:00:00Z", "2026-01-01T00:30:00-05:00", "2026-01-01T10:00:00+05:00"
    ]


def test_list_sessions_honours_the_limit(tgsparql_demo_store) -> None:
    tgsparql_demo_store.update(HAND_SESSIONS)
    listed = [[s.question for s in list_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, n)]
              for n in (2, 1)]
    assert listed == [["question B", "question C"], ["question B"]]


def test_list_sessions_with_a_question_keeps_those_that_contain_it_in_any_case(
    tgsparql_demo_store
) -> None:
    tgsparql_demo_store.update(HAND_SESSIONS)
    assert [s.question for s in list_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, 10,
                                              "QUESTION c")] == ["question C"]
    assert [s.question for s in list_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, 10,
                                              "question")] == [
        "question B", "question C", "question A"
    ]
    assert list_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, 10, "nowhere") == []


def test_list_sessions_includes_failed_sessions_with_their_error(tgsparql_demo_store) -> None:
    tgsparql_demo_store.update(HAND_SESSIONS)
    by_question = {s.question: s
                   for s in list_sessions(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, 10)}
    failed = by_question["question C"]
    assert failed.session == "urn:trustgraph:session:00000000-0000-4000-8000-00000000000c"
    assert failed.status == "failed"
    assert failed.error == "selection failed: boom"
    assert failed.ended == "2026-01-01T00:30:03-05:00"
    assert by_question["question B"].status == "complete"
    assert by_question["question B"].error is None


def test_list_sessions_puts_a_new_query_first_and_reads_only_its_collection(
    tgsparql_demo_pipeline: GraphRag) -> None:
    tgsparql_demo_pipeline.store.update(HAND_SESSIONS)
    messages = asked(tgsparql_demo_pipeline)
    listed = list_sessions(tgsparql_demo_pipeline.store, vocab.DEFAULT_COLLECTION, 10)
    assert [s.session for s in listed][:2] == [
        messages[0].explain_id, "urn:trustgraph:session:00000000-0000-4000-8000-00000000000b"
    ]
    assert len(listed) == 4
    assert listed[0].status == "complete" and listed[0].question == QUESTION
    assert json.loads(json.dumps([s.to_json() for s in listed]))[0]["question"] == QUESTION
    assert list_sessions(tgsparql_demo_pipeline.store, vocab.Collection("other"), 10) == []
