"""Testing a GraphRAG pipeline's provenance with tgsparql's pytest plugin and strategies.

Copy this file into your test suite; `pip install tgsparql[test]` registers the plugin (its
fixtures start with `tgsparql_`). Run it against a scratch SPARQL endpoint as well with
`pytest --tgsparql-endpoint http://localhost:7878/query --tgsparql-update-endpoint
http://localhost:7878/update`: the test marked `tgsparql_remote` then uses that endpoint.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings

from tgsparql import Collection, open_store
from tgsparql.record.explain import explain_session
from tgsparql.rdf.iris import SessionIds
from tgsparql.asking.provenance import Recorder, now
from tgsparql.testing import NonConformance, assert_conforms
from tgsparql.testing.fakes import Script
from tgsparql.testing.strategies import knowledge_graphs, session_records

ENT = "https://example.org/demo/entity/"
REL = "https://example.org/demo/rel/"
BORN_IN = ox.Triple(ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "bornIn"),
                    ox.NamedNode(ENT + "Warsaw"))
QUESTION = "Where was Marie Curie born?"


@pytest.mark.tgsparql_remote
def test_the_offline_pipeline_records_a_conforming_session(
    tgsparql_loaded_store, tgsparql_demo_file, tgsparql_pipeline
):
    store = tgsparql_loaded_store(tgsparql_demo_file)
    answer, messages = tgsparql_pipeline().ask(QUESTION)
    assert "Warsaw" in answer
    session = messages[0].explain_id
    assert_conforms(store, session=session)


def test_a_scripted_llm_selects_exactly_the_edge_it_was_told(
    tgsparql_loaded_store, tgsparql_demo_file, tgsparql_pipeline
):
    store = tgsparql_loaded_store(tgsparql_demo_file)
    rag = tgsparql_pipeline({QUESTION: Script(select=[(BORN_IN, "the birthplace")],
                                              answer="In Warsaw.")})
    answer, messages = rag.ask(QUESTION)
    assert answer == "In Warsaw."
    session = messages[0].explain_id
    explained = explain_session(store, Collection("explainability"), session)
    assert [(edge.edge, edge.reasoning) for edge in explained.selected] == [
        (BORN_IN, "the birthplace")
    ]
    assert_conforms(store, session=session)


def test_a_session_left_open_does_not_conform(tgsparql_store):
    """What a crash leaves behind must not pass for a complete session."""
    recorder = Recorder(tgsparql_store)
    recorder.write(recorder.session(SessionIds.new(), "Who discovered radium?", now()))  # only that
    with pytest.raises(NonConformance, match="never left open"):
        assert_conforms(tgsparql_store)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=knowledge_graphs().flatmap(lambda kg: session_records(kg).map(lambda s: (kg, s))))
def test_any_recorded_session_conforms(data):
    kg, session = data
    store = open_store()  # one fresh store per example: fixtures outlive hypothesis examples
    kg.load_into(store)
    session.record(store)
    assert_conforms(store, session=session.ids.session.value)
