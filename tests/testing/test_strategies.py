"""The hypothesis strategies of `tgsparql.testing` do what they say: terms survive the store,
drawn KGs and provenance conform, selector output parses as announced, recorded sessions
conform (and interrupted ones do not)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tgsparql.asking.labels import get_labelgraph
from tgsparql.asking.selection import parse_selection
from tgsparql.stores.store import open_store
from tgsparql.testing import NonConformance, assert_conforms
from tgsparql.testing.strategies import (
    knowledge_graphs, provenanced_graphs, selection_texts, session_lists, session_records, terms,
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
