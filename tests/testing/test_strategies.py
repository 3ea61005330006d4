"""The hypothesis strategies and the scripted backend of `tgsparql.testing` do what they say:
terms survive the store, drawn KGs and provenance conform, selector output parses as
announced, recorded sessions conform (and interrupted ones do not)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tgsparql.labels import get_labelgraph
from tgsparql.pipeline import GraphRag
from tgsparql.selection import parse_selection
from tgsparql.store import open_store
from tgsparql.testing import NonConformance, assert_conforms
from tgsparql.testing.fakes import Script, ScriptedBackend, UnscriptedRequest
from tgsparql.testing.strategies import (
    knowledge_graphs,
    provenanced_graphs,
    selection_texts,
    session_lists,
    session_records,
    terms,
)

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GRAPH = ox.NamedNode("urn:graph:test")


@FAST
@given(st.lists(terms(), min_size=1, max_size=5))
def test_drawn_terms_are_stored_and_read_back_unchanged(objects: list) -> None:
    store = open_store()
    subject, predicate = ox.NamedNode("urn:s"), ox.NamedNode("urn:p")
    quads = [ox.Quad(subject, predicate, term, GRAPH) for term in objects]
    store.oxigraph.extend(quads)
    assert set(store.oxigraph.quads_for_pattern(None, None, None, GRAPH)) == set(quads)
    dumped = store.oxigraph.dump(format=ox.RdfFormat.N_QUADS)
    assert set(ox.parse(dumped, ox.RdfFormat.N_QUADS)) == set(quads)


@FAST
@given(provenanced_graphs())
def test_drawn_provenance_conforms_to_the_bundled_shapes_without_warnings(graph) -> None:
    store = open_store()
    graph.load_into(store)
    assert_conforms(store, warnings=False)


@FAST
@given(knowledge_graphs(max_facts=8).flatmap(
    lambda kg: st.tuples(st.just(kg), session_lists(kg, max_size=4))))
def test_drawn_sessions_record_and_conform(data) -> None:
    kg, sessions = data
    store = open_store()
    kg.load_into(store)
    for session in sessions:
        session.record(store)
    assert_conforms(store)


@settings(max_examples=10, deadline=None)
@given(knowledge_graphs(max_facts=4).flatmap(
    lambda kg: st.tuples(st.just(kg), session_records(kg, outcomes=["interrupted"]))))
def test_an_interrupted_session_does_not_conform(data) -> None:
    kg, session = data
    store = open_store()
    kg.load_into(store)
    session.record(store)
    with pytest.raises(NonConformance, match="never left open"):
        assert_conforms(store, session=session.ids.session.value)


@settings(max_examples=150, deadline=None)
@given(knowledge_graphs(max_facts=10, literal_objects=True).flatmap(
    lambda kg: st.tuples(st.just(kg), st.sampled_from(["valid", "partial", "hostile"]))),
       st.data())
def test_selection_texts_parse_exactly_as_announced(data, draw) -> None:
    kg, kind = data
    store = open_store()
    kg.load_into(store)
    labelgraph = get_labelgraph(store, list(kg.facts))
    text = draw.draw(selection_texts(labelgraph.labeled_edges, kind))
    parsed = parse_selection(text.text, labelgraph.uri_map)
    assert tuple(edge.id for edge in parsed.edges) == text.expected_ids
    assert tuple(parsed.invalid_ids) == text.expected_invalid


# ---- the scripted backend ------------------------------------------------------------------

QUESTION = "Where was Marie Curie born?"


def test_an_unscripted_question_fails_its_session_saying_so(demo_store) -> None:
    rag = GraphRag(demo_store, ScriptedBackend({"Who won?": Script()}))
    answer, messages = rag.ask(QUESTION)
    assert answer == ""
    assert messages[-1].error.message == (
        f"selection failed: no script for the question {QUESTION!r}; "
        "scripted questions: 'Who won?'"
    )


def test_a_scripted_edge_that_was_not_retrieved_is_named(demo_store) -> None:
    missing = ("Marie Curie", "born in", "Atlantis")
    rag = GraphRag(demo_store, ScriptedBackend({QUESTION: Script(select=[(missing, "why")])}))
    _, messages = rag.ask(QUESTION)
    error = messages[-1].error.message
    assert error.startswith(f"selection failed: the scripted edge {missing!r} is not among the ")
    assert "Marie Curie — born in — Warsaw" in error


def test_edges_are_scripted_by_labels_and_raw_output_is_passed_verbatim(demo_store) -> None:
    born = ("Marie Curie", "born in", "Warsaw")
    rag = GraphRag(demo_store, ScriptedBackend({
        QUESTION: Script(select=[(born, "birthplace"), (born, "again")], answer="In Warsaw."),
        "Who discovered polonium?": Script(raw='```\n{"id": "ffffffff"}\nprose\n```'),
    }))
    answer, messages = rag.ask(QUESTION)
    assert answer == "In Warsaw."
    assert [t for t in messages[2].explain_triples
            if t.predicate.value.endswith("reasoning")][0].object.value == "birthplace"
    assert_conforms(demo_store, session=messages[0].explain_id)
    _, messages = rag.ask("Who discovered polonium?")
    counts = [t.object.value for t in messages[2].explain_triples
              if t.predicate.value.endswith("invalidIdCount")]
    assert counts == ["1"]


def test_scripted_extraction_and_unscripted_chunks() -> None:
    from tgsparql.llm.base import ExtractionRequest

    backend = ScriptedBackend({}, extractions={"Ada was born in London.": '{"s": "Ada"}'})
    assert backend.extract(ExtractionRequest("Ada was born in London.", "t")).text == '{"s": "Ada"}'
    with pytest.raises(UnscriptedRequest, match="no extraction scripted for the chunk 'Other.'"):
        backend.extract(ExtractionRequest("Other.", "t"))
    assert backend.calls == [("extract", "Ada was born in London."), ("extract", "Other.")]
