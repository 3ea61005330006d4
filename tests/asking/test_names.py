"""Names as people say them, asked of a small KG of painters: a surname, a given name, a name in
lower case; which of several entities a name grounds to, and what the record says of it."""

from __future__ import annotations

from collections.abc import Callable

import pyoxigraph as ox
import pytest

from tgsparql.asking.grounding import ground, name_runs, update_label_index
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.record.explain import explain_session, render_text
from tgsparql.record.page import render_session
from tgsparql.record.session_view import session_view
from tgsparql.stores.store import Store
from tgsparql.testing import assert_conforms

EX = "http://example.org/"
PAINTERS = """
@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:bornOn rdfs:label "date of birth" .
ex:bornIn rdfs:label "place of birth" .
ex:spouse rdfs:label "spouse" .
ex:vermeer rdfs:label "Johannes Vermeer" ; ex:bornOn "31 October 1632" ; ex:bornIn ex:delft ;
    ex:spouse ex:catharina .
ex:jan rdfs:label "Jan Vermeer" ; ex:bornIn ex:haarlem .
ex:crater rdfs:label "Vermeer crater" .
ex:gogh rdfs:label "Vincent van Gogh" ; ex:bornOn "30 March 1853" ; ex:bornIn ex:zundert .
ex:rembrandt rdfs:label "Rembrandt van Rijn" ; ex:bornIn ex:leiden .
ex:young rdfs:label "Thomas Young" ; ex:bornIn ex:milverton .
ex:catharina rdfs:label "Catharina Bolnes" .
ex:delft rdfs:label "Delft" .
ex:haarlem rdfs:label "Haarlem" .
ex:zundert rdfs:label "Zundert" .
ex:leiden rdfs:label "Leiden" .
ex:milverton rdfs:label "Milverton" .
"""


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


@pytest.fixture
def painters(tgsparql_store: Store,
             tgsparql_pipeline: Callable[..., GraphRag]) -> GraphRag:
    tgsparql_store.oxigraph.load(PAINTERS, format=ox.RdfFormat.TURTLE)  # type: ignore[attr-defined]
    update_label_index(tgsparql_store)
    return tgsparql_pipeline()


def answer(rag: GraphRag, question: str) -> str:
    """The answer's lead: the entity or value it gives."""
    text, _ = rag.ask(question)
    return text.partition(". From the knowledge graph")[0]


@pytest.mark.parametrize("question, expected", [
    ("When was Johannes Vermeer born?", "31 October 1632"),
    ("When was Vermeer born?", "31 October 1632"),
    ("Where was Van Gogh born?", "Zundert"),
    ("Where was Rembrandt born?", "Leiden"),
    ("Who was Vermeer's wife?", "Catharina Bolnes"),
    ("where was vincent gogh born?", "Zundert"),
    ("when was vermeer born?", "31 October 1632"),
])
def test_a_painter_is_found_by_the_name_people_use(
    painters: GraphRag, question: str, expected: str
) -> None:
    assert answer(painters, question) == expected


def test_a_common_word_is_a_name_only_where_the_question_writes_it_as_one(
    painters: GraphRag
) -> None:
    assert ground(painters.store, "Where was Young born?", 50).seeds == [ex("young")]
    assert ground(painters.store, "Which young painter was born in Delft?", 50).seeds == [
        ex("delft")]
    runs = name_runs("Which painters were born in Delft? Young was one.")
    assert [run.words for run in runs] == [("delft",)]
    # in lower case nobody writes it as a name: a common word stays a word
    assert ground(painters.store, "where was young born?", 50).seeds == []


def test_a_surname_in_lower_case_is_found_on_the_demo(tgsparql_demo_pipeline: GraphRag) -> None:
    grounding = ground(tgsparql_demo_pipeline.store, "where was curie born?", 50)
    assert {m.entity.value.rsplit("/", 1)[-1] for m in grounding.names} == {
        "Marie_Curie", "Pierre_Curie"}
    assert answer(tgsparql_demo_pipeline, "where was curie born?") == "Warsaw"


def test_candidates_are_ranked_by_how_the_question_fits_their_edges(painters: GraphRag) -> None:
    grounding = ground(painters.store, "Who was Vermeer's wife?", 50)
    assert [(m.name, m.entity, m.rank, m.candidates) for m in grounding.names] == [
        ("Vermeer", ex("vermeer"), 1, 3), ("Vermeer", ex("jan"), 2, 3)]
    assert grounding.seeds == [ex("vermeer"), ex("jan")]


def test_the_record_says_which_entity_each_name_grounded_to(painters: GraphRag) -> None:
    messages = list(painters.query("Who was Vermeer's wife?"))
    shown = "Vermeer → Johannes Vermeer (1 of 3 candidates)"
    assert [name.text for name in messages[-1].names][0] == shown
    assert messages[-1].to_json()["names"][0] == {
        "name": "Vermeer", "entity": EX + "vermeer", "label": "Johannes Vermeer", "rank": 1,
        "candidates": 3}
    session = messages[0].explain_id
    assert session is not None
    assert_conforms(painters.store, session=session)
    explanation = explain_session(painters.store, vocab.DEFAULT_COLLECTION, session)
    assert [name.text for name in explanation.names] == [
        shown, "Vermeer → Jan Vermeer (2 of 3 candidates)"]
    assert explanation.to_json()["names"][0]["label"] == "Johannes Vermeer"
    assert shown in render_text(explanation)
    page = render_session(session_view(painters.store, vocab.DEFAULT_COLLECTION, session))
    assert "<li title=\"http://example.org/vermeer\">Vermeer → Johannes Vermeer (1 of 3 " \
        "candidates)</li>" in page


def test_a_name_written_in_full_records_no_name_grounding(painters: GraphRag) -> None:
    messages = list(painters.query("When was Johannes Vermeer born?"))
    assert messages[-1].names == []
    assert not any(t.predicate.value == "https://trustgraph.ai/ns/nameGrounding"
                   for m in messages for t in m.explain_triples)
