"""Retrieval: the subgraph around the seeds, within the limits of docs/spec.md §5."""

from __future__ import annotations

from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tgsparql.asking import retrieval
from tgsparql.asking.grounding import ground, update_label_index
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.asking.retrieval import (
    RANKING_RULE, RetrievalLimits, _schema_predicates_in_use, retrieve, retrieve_subgraph,
)
from tgsparql.rdf import vocab
from tgsparql.rdf.stems import stem
from tgsparql.stores.store import EmbeddedStore, WithTemplates, open_store

EX = "http://example.org/"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")

PREFIXES = """
@prefix ex: <http://example.org/> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def t(s: str, p: str, o: str | ox.Literal | ox.NamedNode) -> ox.Triple:
    obj = o if isinstance(o, (ox.Literal, ox.NamedNode)) else ex(o)
    return ox.Triple(ex(s), ex(p), obj)


def load(store: EmbeddedStore, data: str, fmt: ox.RdfFormat = ox.RdfFormat.TURTLE) -> None:
    store.oxigraph.load(PREFIXES + data, format=fmt)


def limits(**changes: int) -> RetrievalLimits:
    return RetrievalLimits(**changes)


KG = """
ex:a ex:knows ex:b .
ex:c ex:likes ex:a .
ex:a ex:age "42"^^xsd:integer .
ex:a rdf:type ex:Person .
ex:b ex:worksAt ex:d .
ex:c ex:bornIn ex:e .
ex:d ex:partOf ex:f .

ex:a rdfs:label "A" .
ex:a rdfs:seeAlso ex:x .
ex:a owl:sameAs ex:a2 .
ex:a2 ex:knows ex:z .
ex:a rdf:value ex:y .
ex:a rdf:_1 ex:first .
ex:a owl:someFutureTerm ex:w .
ex:a ex:friend _:anon .
_:anon ex:knows ex:a .
"""

HOP1 = {
    t("a", "knows", "b"),
    t("c", "likes", "a"),
    t(
        "a",
        "age",
        ox.Literal("42", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
    ),
    ox.Triple(ex("a"), RDF_TYPE, ex("Person")),
}
HOP2 = {t("b", "worksAt", "d"), t("c", "bornIn", "e")}


@pytest.fixture
def kg(tgsparql_store: EmbeddedStore) -> EmbeddedStore:
    load(tgsparql_store, KG)
    return tgsparql_store


def test_retrieval_follows_edges_in_both_directions(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=1))
    assert t("a", "knows", "b") in edges  # the seed as subject
    assert t("c", "likes", "a") in edges  # the seed as object


def test_one_hop_retrieves_only_edges_touching_the_seeds(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=1))
    assert set(edges) == HOP1
    assert len(edges) == len(HOP1)


def test_two_hops_add_the_edges_of_the_neighbours(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=2))
    assert set(edges) == HOP1 | HOP2
    assert len(edges) == len(HOP1 | HOP2)
    # the default is two hops
    assert retrieve_subgraph(kg, [ex("a")], RetrievalLimits()) == edges


def test_hops_are_returned_in_the_order_they_were_reached(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=2))
    assert set(edges[: len(HOP1)]) == HOP1
    assert set(edges[len(HOP1) :]) == HOP2


def test_three_hops_reach_further(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=3))
    assert set(edges) == HOP1 | HOP2 | {t("d", "partOf", "f")}


def test_schema_predicates_are_left_out_but_rdf_type_is_kept(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=3))
    predicates = {edge.predicate.value for edge in edges}
    assert RDF_TYPE.value in predicates
    assert not any(
        p.startswith(("http://www.w3.org/2000/01/rdf-schema#", "http://www.w3.org/2002/07/owl#"))
        for p in predicates
    )
    rdf_predicates = {p for p in predicates if p.startswith("http://www.w3.org/1999/02/22-rdf")}
    assert rdf_predicates == {RDF_TYPE.value}


def test_schema_predicates_beyond_the_well_known_list_are_left_out_too(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=1))
    assert set(edges) == HOP1


def test_the_store_is_asked_which_schema_predicates_it_uses(kg: EmbeddedStore) -> None:
    used = [p.value for p in _schema_predicates_in_use(kg)]
    assert used == [
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#value",
        "http://www.w3.org/2000/01/rdf-schema#label",
        "http://www.w3.org/2000/01/rdf-schema#seeAlso",
        "http://www.w3.org/2002/07/owl#sameAs",
    ]


def test_schema_predicates_given_by_grounding_spare_the_probe(kg: EmbeddedStore) -> None:
    asked: list[str] = []

    class Watching(WithTemplates):
        dialect = kg.dialect

        def select(self, query: str, **kwargs):  # type: ignore[no-untyped-def]
            asked.append(query)
            return kg.select(query, **kwargs)

        def construct(self, query: str):  # type: ignore[no-untyped-def]
            asked.append(query)
            return kg.construct(query)

    used = _schema_predicates_in_use(kg)
    given = retrieve_subgraph(Watching(), [ex("a")], RetrievalLimits(), used)  # type: ignore[arg-type]
    assert not any(query.startswith("# Retrieval: which") for query in asked)
    # the first hop: the degrees with the seed's edges; the second: the degrees, then the edges
    # of the nodes read whole (no node here has more)
    counts = "# Retrieval, one hop, first request: which nodes retrieve_subgraph.rq reads whole (at most"
    edges = "# Retrieval, one hop, after retrieve_degrees.rq: the edges the caller ranks."
    assert [query.split("\n", 1)[0] for query in asked] == [counts, counts, edges]
    assert given == retrieve_subgraph(kg, [ex("a")], RetrievalLimits())


def test_nodes_behind_a_schema_edge_are_not_walked_to(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=3))
    assert t("a2", "knows", "z") not in edges


def test_edges_with_blank_nodes_are_left_out(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(kg, [ex("a")], limits(max_path_length=3))
    assert not any(
        isinstance(term, ox.BlankNode) for edge in edges for term in (edge.subject, edge.object)
    )


def test_only_the_default_graph_is_retrieved(tgsparql_store: EmbeddedStore) -> None:
    load(
        tgsparql_store,
        """
        ex:a ex:knows ex:b .
        GRAPH ex:other { ex:a ex:knows ex:secret . ex:b ex:knows ex:hidden . }
        GRAPH <urn:graph:source> { ex:hidden ex:knows ex:a . }
        """,
        ox.RdfFormat.TRIG,
    )
    edges = retrieve_subgraph(tgsparql_store, [ex("a")], limits(max_path_length=3))
    assert edges == [t("a", "knows", "b")]


def test_a_seed_used_only_in_a_named_graph_retrieves_nothing(tgsparql_store: EmbeddedStore) -> None:
    tgsparql_store.oxigraph.add(ox.Quad(ex("a"), ex("knows"), ex("b"), ex("g")))
    assert retrieve_subgraph(tgsparql_store, [ex("a")], RetrievalLimits()) == []


def test_triple_terms_as_objects_are_retrieved(tgsparql_store: EmbeddedStore) -> None:
    quoted = t("b", "knows", "c")
    tgsparql_store.oxigraph.add(ox.Quad(ex("a"), ex("says"), quoted))
    edges = retrieve_subgraph(tgsparql_store, [ex("a")], limits(max_path_length=2))
    assert edges == [ox.Triple(ex("a"), ex("says"), quoted)]


def hub(store: EmbeddedStore, name: str, count: int) -> set[ox.Triple]:
    edges = {t(name, "has", f"{name}-{i:03d}") for i in range(count)}
    for edge in edges:
        store.oxigraph.add(ox.Quad(edge.subject, edge.predicate, edge.object))
    return edges


def test_triple_limit_caps_edges_per_node(tgsparql_store: EmbeddedStore) -> None:
    big = hub(tgsparql_store, "big", 10)
    other = hub(tgsparql_store, "other", 10)
    edges = retrieve_subgraph(
        tgsparql_store, [ex("big"), ex("other")], limits(max_path_length=1, triple_limit=3)
    )
    assert len(edges) == 6
    assert len(set(edges) & big) == 3
    assert len(set(edges) & other) == 3


def test_triple_limit_applies_to_each_node_of_later_hops(tgsparql_store: EmbeddedStore) -> None:
    tgsparql_store.oxigraph.add(ox.Quad(ex("seed"), ex("to"), ex("big")))
    big = hub(tgsparql_store, "big", 10)
    edges = retrieve_subgraph(
        tgsparql_store, [ex("seed")], limits(max_path_length=2, triple_limit=4)
    )
    assert edges[0] == t("seed", "to", "big")
    # hop 2 asks for 4 edges of "big"; one of them may be the edge already held
    assert 3 <= len(set(edges) & big) <= 4
    assert len(edges) == 1 + len(set(edges) & big)


def test_max_subgraph_size_caps_the_total(tgsparql_store: EmbeddedStore) -> None:
    hub(tgsparql_store, "big", 40)
    edges = retrieve_subgraph(
        tgsparql_store, [ex("big")], limits(triple_limit=100, max_subgraph_size=7)
    )
    assert len(edges) == 7


def test_capped_nodes_take_turns(tgsparql_store: EmbeddedStore) -> None:
    big = hub(tgsparql_store, "big", 100)
    small = hub(tgsparql_store, "small", 5)
    edges = retrieve_subgraph(
        tgsparql_store,
        [ex("big"), ex("small")],
        limits(triple_limit=100, max_subgraph_size=20),
    )
    assert len(edges) == 20
    assert set(edges) >= small
    assert len(set(edges) & big) == 15


def test_capped_nodes_take_turns_whatever_the_seed_order(tgsparql_store: EmbeddedStore) -> None:
    big = hub(tgsparql_store, "big", 100)
    small = hub(tgsparql_store, "small", 5)
    edges = retrieve_subgraph(
        tgsparql_store,
        [ex("small"), ex("big")],
        limits(triple_limit=100, max_subgraph_size=6),
    )
    assert len(edges) == 6
    assert len(set(edges) & small) == 3
    assert len(set(edges) & big) == 3


def test_the_cap_holds_across_hops(kg: EmbeddedStore) -> None:
    edges = retrieve_subgraph(
        kg, [ex("a")], limits(max_path_length=3, max_subgraph_size=5)
    )
    assert len(edges) == 5
    assert set(edges[:4]) == HOP1
    assert edges[4] in HOP2


def test_no_seeds_retrieve_nothing(kg: EmbeddedStore) -> None:
    assert retrieve_subgraph(kg, [], RetrievalLimits()) == []


def test_an_unknown_seed_retrieves_nothing(kg: EmbeddedStore) -> None:
    assert retrieve_subgraph(kg, [ex("nobody")], RetrievalLimits()) == []


def test_repeated_seeds_count_once(kg: EmbeddedStore) -> None:
    once = retrieve_subgraph(kg, [ex("a")], RetrievalLimits())
    twice = retrieve_subgraph(kg, [ex("a"), ex("a")], RetrievalLimits())
    assert twice == once


def test_an_edge_between_two_seeds_is_retrieved_once(tgsparql_store: EmbeddedStore) -> None:
    load(tgsparql_store, "ex:a ex:knows ex:b .")
    edges = retrieve_subgraph(tgsparql_store, [ex("a"), ex("b")], RetrievalLimits())
    assert edges == [t("a", "knows", "b")]


def test_retrieval_is_deterministic_for_the_same_store(kg: EmbeddedStore) -> None:
    for leaf in hub(kg, "a", 50):
        hub(kg, leaf.object.value.removeprefix(EX), 3)
    runs = [
        retrieve_subgraph(
            kg, [ex("a"), ex("c")], limits(triple_limit=10, max_subgraph_size=25)
        )
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) == 25


def test_retrieval_does_not_depend_on_load_order() -> None:
    lines = [line for line in KG.strip().splitlines() if line.strip() and "_:" not in line]
    forward, backward = open_store(), open_store()
    load(forward, "\n".join(lines))
    load(backward, "\n".join(reversed(lines)))
    assert retrieve_subgraph(forward, [ex("a")], RetrievalLimits()) == retrieve_subgraph(
        backward, [ex("a")], RetrievalLimits()
    )


def test_default_limits_are_those_of_the_spec() -> None:
    assert RetrievalLimits() == RetrievalLimits(
        max_path_length=2, triple_limit=30, entity_limit=50, max_subgraph_size=150
    )


@pytest.mark.parametrize(
    "field", ["max_path_length", "triple_limit", "entity_limit", "max_subgraph_size"]
)
@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3", None])
def test_limits_must_be_positive_integers(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        RetrievalLimits(**{field: value})  # type: ignore[arg-type]


def test_limits_reject_zero_hops_positionally() -> None:
    with pytest.raises(ValueError, match="max_path_length"):
        RetrievalLimits(0)


def test_limits_accept_one_everywhere() -> None:
    one = RetrievalLimits(1, 1, 1, 1)
    assert (one.max_path_length, one.triple_limit, one.entity_limit, one.max_subgraph_size) == (
        1,
        1,
        1,
        1,
    )


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=4),
    triple_limit=st.integers(min_value=1, max_value=15),
    cap=st.integers(min_value=1, max_value=30),
)
def test_star_retrieval_respects_every_limit(sizes: list[int], triple_limit: int, cap: int) -> None:
    store = open_store()
    hubs = {f"h{i}": hub(store, f"h{i}", size) for i, size in enumerate(sizes)}
    seeds = [ex(name) for name in hubs]
    edges = retrieve_subgraph(
        store,
        seeds,
        limits(max_path_length=1, triple_limit=triple_limit, max_subgraph_size=cap),
    )
    available = [min(len(found), triple_limit) for found in hubs.values()]
    assert len(edges) == len(set(edges)) == min(cap, sum(available))
    taken = [len(set(edges) & found) for found in hubs.values()]
    assert taken == round_robin(available, cap)


def round_robin(available: list[int], cap: int) -> list[int]:
    """What taking turns means: each round, every node with edges left takes one, in seed order."""
    taken = [0] * len(available)
    total = 0
    while total < cap and any(t < a for t, a in zip(taken, available, strict=True)):
        for i, a in enumerate(available):
            if total < cap and taken[i] < a:
                taken[i] += 1
                total += 1
    return taken


# ---- ranking: the edges that matter come first, then the limit cuts


def labelled_hub(store: EmbeddedStore, count: int) -> None:
    """ex:star with `count` "knows" edges to people, one "mother" edge and one "born in"
    edge, every term labelled and indexed."""
    lines = [f"ex:star ex:knows ex:p{i:05d} . ex:p{i:05d} rdfs:label \"Person {i}\" ."
             for i in range(count)]
    lines += [
        'ex:star rdfs:label "Star" ; ex:mother ex:mum ; ex:bornIn ex:town .',
        'ex:mum rdfs:label "Ada" . ex:town rdfs:label "Springfield" .',
        'ex:knows rdfs:label "knows" . ex:mother rdfs:label "mother" .',
        'ex:bornIn rdfs:label "place of birth" .',
    ]
    load(store, "\n".join(lines))
    update_label_index(store)


def one_hop(triple_limit: int) -> RetrievalLimits:
    return limits(max_path_length=1, triple_limit=triple_limit)


@pytest.mark.parametrize("count", [50, 500, 12_000])
def test_on_a_hub_the_edge_the_question_names_survives_the_limit(
    tgsparql_store: EmbeddedStore, count: int
) -> None:
    labelled_hub(tgsparql_store, count)
    edges = retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(3), stems=["mother"])
    assert edges[0] == t("star", "mother", "mum")


@pytest.mark.parametrize("count", [50, 500, 12_000])
def test_a_neighbour_the_question_names_is_reached_on_a_hub(
    tgsparql_store: EmbeddedStore, count: int
) -> None:
    labelled_hub(tgsparql_store, count)
    edges = retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(2), stems=["springfield"])
    assert edges[0] == t("star", "bornIn", "town")


@pytest.mark.parametrize("count", [50, 500])
def test_rare_predicates_come_before_ones_the_node_uses_often(
    tgsparql_store: EmbeddedStore, count: int
) -> None:
    labelled_hub(tgsparql_store, count)
    edges = retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(4))
    assert set(edges[:2]) == {t("star", "mother", "mum"), t("star", "bornIn", "town")}


def test_a_hub_is_not_read_whole_only_what_the_question_names_competes(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
    monkeypatch.setattr(retrieval, "COUNT_UP_TO", 40)
    labelled_hub(tgsparql_store, 50)
    assert retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(30)) == []
    assert retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(30), stems=["birth"]) == [
        t("star", "bornIn", "town")
    ]


def test_edges_to_other_seeds_come_first(tgsparql_store: EmbeddedStore) -> None:
    labelled_hub(tgsparql_store, 50)
    edges = retrieve_subgraph(
        tgsparql_store, [ex("star"), ex("p00042")], one_hop(1), stems=["mother"]
    )
    assert edges[0] == t("star", "knows", "p00042")


def test_ties_are_broken_by_the_terms_strings(tgsparql_store: EmbeddedStore) -> None:
    edges = hub(tgsparql_store, "big", 40)
    kept = retrieve_subgraph(tgsparql_store, [ex("big")], one_hop(5))
    assert kept == sorted(edges, key=lambda edge: edge.object.value)[:5]


@pytest.mark.parametrize(("stems", "kept"), [
    # "Person" is in every neighbour's label: those matches go; "mother" names one edge's
    # predicate, a match of another kind, and stays.
    (["person", "mother"], [t("star", "mother", "mum")]),
    # "knows" names the predicate of all of the star's edges and tells none apart;
    # "Springfield" still finds its neighbour.
    (["know", "springfield"], [t("star", "bornIn", "town")]),
])
def test_a_word_too_many_edges_match_tells_nothing_and_only_its_kind_of_match_is_dropped(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch,
    stems: list[str], kept: list[ox.Triple],
) -> None:
    monkeypatch.setattr(retrieval, "MATCHES_UP_TO", 20)
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
    monkeypatch.setattr(retrieval, "COUNT_UP_TO", 40)
    labelled_hub(tgsparql_store, 50)
    assert retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(3), stems=stems) == kept


def test_the_retrieval_counts_each_seeds_candidate_edges(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "COUNT_UP_TO", 40)
    labelled_hub(tgsparql_store, 50)
    hub(tgsparql_store, "small", 7)
    found = retrieve(tgsparql_store, [ex("small"), ex("star")], one_hop(3))
    assert found.candidates == {ex("small"): 7, ex("star"): 41}
    assert found.rule == RANKING_RULE == ox.NamedNode(
        "https://trustgraph.ai/ns/QuestionPathRarityRanking")


def test_a_node_read_whole_keeps_the_edges_the_stores_ranking_keeps(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    labelled_hub(tgsparql_store, 50)
    whole = retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(2), stems=["mother"])
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
    by_store = retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(2), stems=["mother"])
    assert whole == by_store == [t("star", "mother", "mum"), t("star", "bornIn", "town")]


@pytest.fixture(params=["neighbours-by-value", "neighbours-from-the-index"])
def fan_of_a_big_star(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> EmbeddedStore:
    """ex:fan likes ex:star, which has more edges than a node read whole; the star's matches
    by neighbour either looked up one by one or joined from the label index (same edges)."""
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
    if request.param == "neighbours-from-the-index":
        monkeypatch.setattr(retrieval, "NEIGHBOURS_BY_VALUE", 0)
    labelled_hub(tgsparql_store, 50)
    load(tgsparql_store, "ex:fan ex:likes ex:star .")
    return tgsparql_store


FAN_TWO_HOPS = RetrievalLimits(max_path_length=2, triple_limit=3)


def test_a_big_node_on_the_way_gives_its_edges_to_seeds_and_to_what_the_question_names(
    fan_of_a_big_star: EmbeddedStore
) -> None:
    store = fan_of_a_big_star
    assert retrieve_subgraph(store, [ex("fan")], FAN_TWO_HOPS) == [
        t("fan", "likes", "star")
    ]
    assert retrieve_subgraph(
        store, [ex("fan")], FAN_TWO_HOPS, stems=["springfield"]
    ) == [t("fan", "likes", "star"), t("star", "bornIn", "town")]


@pytest.mark.parametrize("big", [False, True])
def test_a_node_on_the_way_ranks_its_edges_to_the_seeds_as_any_other(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch, big: bool
) -> None:
    """Only a seed's edges to other seeds score as such: the star, reached from the fan, has its
    path back already, and its other edges to the fan and to the second seed say no more than
    noise would; the edge that answers the question ("home") goes on, whether the star is read
    whole or is a big node whose matches alone compete."""
    if big:
        monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
        labelled_hub(tgsparql_store, 50)
    load(tgsparql_store, """
        ex:fan ex:likes ex:star . ex:star ex:met ex:fan . ex:star ex:saw ex:critic .
        ex:critic ex:wrote ex:review .
        ex:star ex:homeTown ex:home . ex:homeTown rdfs:label "home town" .
    """)
    update_label_index(tgsparql_store)
    edges = retrieve_subgraph(tgsparql_store, [ex("fan"), ex("critic")],
                              limits(max_path_length=2, triple_limit=1), stems=["home"])
    assert edges == [t("fan", "likes", "star"), t("critic", "wrote", "review"),
                     t("star", "homeTown", "home")]


def test_a_big_node_on_the_way_drops_its_matches_in_a_direction_too_many_edges_match(
    fan_of_a_big_star: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "MATCHES_UP_TO", 20)
    edges = retrieve_subgraph(
        fan_of_a_big_star, [ex("fan")], FAN_TWO_HOPS, stems=["person"]
    )
    assert edges == [t("fan", "likes", "star")]


def test_a_stem_too_many_labels_hold_ranks_nothing(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "COMMON_STEM", 20)
    labelled_hub(tgsparql_store, 50)
    edges = retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(1), stems=["person"])
    assert edges == retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(1))


def test_on_a_seed_ranked_by_the_store_a_rare_match_beats_a_common_one(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row of the store's ranking has a predicate count (not rare when the seeds or the
    question brought the edge in), so no engine's MIN over unbound values decides the order."""
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
    labelled_hub(tgsparql_store, 50)
    load(tgsparql_store, "\n".join([f"ex:star ex:birthNear ex:n{i} ." for i in range(12)]
                                   + ['ex:birthNear rdfs:label "near the place of birth" .']))
    update_label_index(tgsparql_store)
    edges = retrieve_subgraph(tgsparql_store, [ex("star")], one_hop(1), stems=["birth"])
    assert edges == [t("star", "bornIn", "town")]


def test_a_big_node_on_the_way_drops_only_the_kind_of_match_too_many_edges_make(
    fan_of_a_big_star: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "MATCHES_UP_TO", 20)
    edges = retrieve_subgraph(
        fan_of_a_big_star, [ex("fan")], FAN_TWO_HOPS, stems=["know", "springfield"]
    )
    assert edges == [t("fan", "likes", "star"), t("star", "bornIn", "town")]


BIRDS = "\n".join(
    f'ex:star ex:sees ex:b{i:02d} . ex:b{i:02d} rdfs:label "Blue Bird {i}" .' for i in range(12)
)
SPOTTED = "\n".join(
    [f"ex:star ex:spots ex:s{i:02d} ." for i in range(12)]
    + ['ex:spots rdfs:label "spots a blue bird" .']
)


@pytest.mark.parametrize(("data", "stems", "kept"), [
    # 12 birds hold "blue": 12 matches, few enough to tell them apart (the star's edge back to
    # the seed is no match: the star's three places go to birds).
    (BIRDS, ["blue"], [t("fan", "likes", "star"), t("star", "sees", "b00"),
                       t("star", "sees", "b01"), t("star", "sees", "b02")]),
    # They hold "bird" too: 24 matches, one a neighbour and stem, more than 20 — the way is
    # dropped.
    (BIRDS, ["blue", "bird"], [t("fan", "likes", "star")]),
    # 12 edges whose predicate's label holds "blue": 12 edges of one predicate, few enough.
    (SPOTTED, ["blue"], [t("fan", "likes", "star"), t("star", "spots", "s00"),
                         t("star", "spots", "s01"), t("star", "spots", "s02")]),
    # The label holds "bird" too: still 12 edges of that predicate — a label that holds more of
    # the question's words tells its edges apart no worse.
    (SPOTTED, ["blue", "bird"], [t("fan", "likes", "star"), t("star", "spots", "s00"),
                                 t("star", "spots", "s01"), t("star", "spots", "s02")]),
])
def test_a_big_node_on_the_way_counts_neighbour_matches_by_stem_and_predicate_matches_by_edge(
    fan_of_a_big_star: EmbeddedStore, monkeypatch: pytest.MonkeyPatch,
    data: str, stems: list[str], kept: list[ox.Triple],
) -> None:
    monkeypatch.setattr(retrieval, "MATCHES_UP_TO", 20)
    load(fan_of_a_big_star, data)
    update_label_index(fan_of_a_big_star)
    edges = retrieve_subgraph(fan_of_a_big_star, [ex("fan")], FAN_TWO_HOPS, stems=stems)
    assert edges == kept


WHERE_DID_THE_COMPOSER_DIE = """
ex:film rdfs:label "Camille" ; ex:composer ex:axt ; ex:placeOfDeath ex:elsewhere .
ex:axt rdfs:label "William Axt" ; ex:causeOfDeath ex:illness ; ex:dateOfDeath ex:day ;
    ex:placeOfDeath ex:ukiah .
ex:composer rdfs:label "composer" . ex:placeOfDeath rdfs:label "place of death" .
ex:causeOfDeath rdfs:label "cause of death" . ex:dateOfDeath rdfs:label "date of death" .
ex:elsewhere rdfs:label "Elsewhere" . ex:illness rdfs:label "Illness" . ex:day rdfs:label "Day" .
ex:ukiah rdfs:label "Ukiah" .
"""
"""A path the question walks (the film's composer, then where he died) beside edges that
answer its words at the wrong step: a place of death of the film, a cause and a date of death
of the composer."""


@pytest.mark.parametrize("noise", [0, 30])
def test_what_the_question_word_asks_for_ranks_first_at_the_end_of_a_path_not_at_the_seed(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch, noise: int
) -> None:
    """"Where did the composer of Camille die?": at the seed the composer edge is as good as a
    place of death (the question word counts only beyond the seeds), and at the composer, read
    whole or too big to be, the place of death beats his cause and date of death."""
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
    monkeypatch.setattr(retrieval, "COUNT_UP_TO", 40)
    load(tgsparql_store, WHERE_DID_THE_COMPOSER_DIE + "".join(
        f"ex:axt ex:knows ex:k{i} . " for i in range(noise)))
    update_label_index(tgsparql_store)
    grounding = ground(tgsparql_store, "Where did the composer of Camille die?", 50)
    assert (grounding.relations, grounding.kinds) == (("compos", "death"), ("place",))
    edges = retrieve_subgraph(tgsparql_store, grounding.seeds, limits(triple_limit=1),
                              grounding.schema_predicates, grounding.stems, grounding.relations,
                              grounding.kinds)
    assert edges == [t("film", "composer", "axt"), t("axt", "placeOfDeath", "ukiah")]


IN_LAWS = "\n".join(
    [f"ex:star ex:inLaw{k} ex:r{k}{i:02d} ." for k in range(3) for i in range(10)]
    + [f'ex:inLaw{k} rdfs:label "parent in law {k}" .' for k in range(3)]
)
"""30 edges of three predicates whose labels hold "parent": more question-matching edges in
one direction than MATCHES_UP_TO (20 here), each predicate's few enough to tell apart."""


def test_on_a_hub_a_predicate_keeps_its_edge_among_many_of_other_matching_predicates(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hub ranked by the store (too big to count its predicates): "mother" keeps its one edge
    though 30 other edges match "parent", and ranks first as the rarer predicate."""
    monkeypatch.setattr(retrieval, "MATCHES_UP_TO", 20)
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 20)
    monkeypatch.setattr(retrieval, "COUNT_UP_TO", 40)
    labelled_hub(tgsparql_store, 50)
    load(tgsparql_store, IN_LAWS)
    update_label_index(tgsparql_store)
    edges = retrieve_subgraph(
        tgsparql_store, [ex("star")], one_hop(2), stems=["mother", "parent"])
    assert edges == [t("star", "mother", "mum"), t("star", "inLaw0", "r000")]


def test_a_big_node_on_the_way_keeps_a_predicates_edge_among_many_of_other_matching_ones(
    fan_of_a_big_star: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "MATCHES_UP_TO", 20)
    load(fan_of_a_big_star, IN_LAWS)
    update_label_index(fan_of_a_big_star)
    edges = retrieve_subgraph(
        fan_of_a_big_star, [ex("fan")], FAN_TWO_HOPS, stems=["mother", "parent"])
    assert edges == [t("fan", "likes", "star"), t("star", "mother", "mum"),
                     t("star", "inLaw0", "r000"), t("star", "inLaw0", "r001")]


def test_a_predicate_with_more_matching_edges_than_the_cap_tells_none_apart(
    fan_of_a_big_star: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut per predicate: one of 30 edges drops them all, the other predicate's edge stays."""
    monkeypatch.setattr(retrieval, "MATCHES_UP_TO", 20)
    load(fan_of_a_big_star, IN_LAWS.replace("ex:inLaw1 ", "ex:inLaw0 ").replace(
        "ex:inLaw2 ", "ex:inLaw0 "))
    update_label_index(fan_of_a_big_star)
    edges = retrieve_subgraph(
        fan_of_a_big_star, [ex("fan")], FAN_TWO_HOPS, stems=["mother", "parent"])
    assert edges == [t("fan", "likes", "star"), t("star", "mother", "mum")]


LOOK_ALIKE_BIRTHS = "\n".join(
    ['ex:tara rdfs:label "Ballad of Tara" ; ex:director ex:eddie .',
     'ex:director rdfs:label "director" . ex:dateOfBirth rdfs:label "date of birth" .']
    + [f"ex:tara ex:dateOfBirth ex:d{i:02d} ." for i in range(6)]
)
"""A film with its one director and six look-alike "date of birth" edges, which answer two
of the words of "the director who was born earlier" ("born", "earlier") to the director's one."""
LOOK_ALIKE_STEMS = [stem(word) for word in ("director", "born", "earlier")]
TURNS = [t("tara", "dateOfBirth", "d00"), t("tara", "director", "eddie"),
         t("tara", "dateOfBirth", "d01")]


@pytest.mark.parametrize("read", ["whole", "by-the-store"])
def test_matching_predicates_take_turns_so_many_look_alikes_leave_the_one_edge_a_place(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch, read: str
) -> None:
    if read == "by-the-store":
        monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 5)
    load(tgsparql_store, LOOK_ALIKE_BIRTHS)
    update_label_index(tgsparql_store)
    edges = retrieve_subgraph(tgsparql_store, [ex("tara")], one_hop(3), stems=LOOK_ALIKE_STEMS)
    assert edges == TURNS


def test_on_a_big_node_on_the_way_matching_predicates_take_turns(
    tgsparql_store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "RANK_WHOLE_UP_TO", 5)
    load(tgsparql_store, LOOK_ALIKE_BIRTHS + "\nex:fan ex:likes ex:tara .")
    update_label_index(tgsparql_store)
    edges = retrieve_subgraph(tgsparql_store, [ex("fan")], FAN_TWO_HOPS, stems=LOOK_ALIKE_STEMS)
    assert edges == [t("fan", "likes", "tara"), *TURNS]


def test_turns_reorder_only_the_best_few_times_the_limit(
    tgsparql_store: EmbeddedStore
) -> None:
    """Past RANK_WINDOW times the limit a predicate's edge has no turn: every engine ranks
    as many edges as that and no more."""
    load(tgsparql_store, LOOK_ALIKE_BIRTHS
         + "".join(f"\nex:tara ex:dateOfBirth ex:e{i:02d} ." for i in range(9)))
    update_label_index(tgsparql_store)
    edges = retrieve_subgraph(tgsparql_store, [ex("tara")], one_hop(1), stems=LOOK_ALIKE_STEMS)
    assert edges == [t("tara", "dateOfBirth", "d00")]
    assert t("tara", "director", "eddie") not in retrieve_subgraph(
        tgsparql_store, [ex("tara")], one_hop(3), stems=LOOK_ALIKE_STEMS)
    assert t("tara", "director", "eddie") in retrieve_subgraph(
        tgsparql_store, [ex("tara")], one_hop(6), stems=LOOK_ALIKE_STEMS)


def test_the_question_stems_holders_come_with_the_first_hops_counts(
    fan_of_a_big_star: EmbeddedStore
) -> None:
    """Two hops with a big node on the way: the first hop's counts with the seed's edges and
    the stems' holders, then the second's counts, then its nodes read whole with the big node's
    matches."""
    asked: list[str] = []

    class Watching(WithTemplates):
        dialect = fan_of_a_big_star.dialect

        def select(self, query: str, **kwargs):  # type: ignore[no-untyped-def]
            asked.append(query.split("\n", 1)[0])
            return fan_of_a_big_star.select(query, **kwargs)

    edges = retrieve_subgraph(
        Watching(), [ex("fan")], FAN_TWO_HOPS, [], stems=["springfield"]  # type: ignore[arg-type]
    )
    assert edges == [t("fan", "likes", "star"), t("star", "bornIn", "town")]
    counts = "# Retrieval, one hop, first request: which nodes retrieve_subgraph.rq reads whole (at most"
    edges = "# Retrieval, one hop, after retrieve_degrees.rq: the edges the caller ranks."
    assert asked == [counts, counts, edges]


def test_a_node_that_grew_past_its_count_is_ranked_as_a_bigger_node(
    fan_of_a_big_star: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node the count found small but that gives more edges than RANK_WHOLE_UP_TO (the KG
    grew between the count and the read, two requests after the first hop) is ranked as the
    bigger node it is, a seed by the store and any other node by its matches."""
    store = fan_of_a_big_star
    asked = {"fan": (FAN_TWO_HOPS, [ex("fan")]), "star": (one_hop(3), [ex("star")])}
    expected = {name: retrieve_subgraph(store, seeds, lim, stems=["springfield"])
                for name, (lim, seeds) in asked.items()}
    counted = retrieval.RankedQuery._degrees
    def undercounted(self: retrieval.RankedQuery, nodes: list[ox.NamedNode]) -> tuple[
        dict[ox.NamedNode, int], dict[ox.NamedNode, list[Any]] | None
    ]:
        degrees, whole = counted(self, nodes)
        return {node: min(degree, 1) for node, degree in degrees.items()}, whole

    monkeypatch.setattr(retrieval.RankedQuery, "_degrees", undercounted)
    for name, (lim, seeds) in asked.items():
        assert retrieve_subgraph(store, seeds, lim, stems=["springfield"]) == (
            expected[name]), name
    assert t("star", "bornIn", "town") in expected["fan"] + expected["star"]


# ---- real-term noise: a hub whose other edges use the KG's own predicates and entities

NOISY_FILM = """
ex:tara rdfs:label "Ballad of Tara" ; ex:director ex:eddie ; ex:birthplace ex:lookalike .
ex:eddie rdfs:label "Eddie Morris" ; ex:birthplace ex:dublin ; ex:award ex:prize .
ex:dublin rdfs:label "Dublin" . ex:lookalike rdfs:label "Cork" .
ex:prize rdfs:label "Ballad of Tara Film Prize" .
ex:lookalike ex:award ex:medal . ex:medal rdfs:label "Silver Medal" .
ex:director rdfs:label "director" . ex:birthplace rdfs:label "place of birth" .
ex:award rdfs:label "award received" . ex:knows rdfs:label "knows" .
""" + "".join(
    f'ex:tara ex:knows ex:n{i} . ex:n{i} rdfs:label "Person {i}" .\n'
    + "".join(f"ex:n{i} ex:knows ex:m{i}x{j} .\n" for j in range(5))
    for i in range(8)
)
"""A film with a director born in Dublin, among the edges real noise gives a hub: a "place of
birth" of the film itself (the question's word, on the wrong hop), a prize of the director's
named with the film's title (three of the question's words, so it outranks the birthplace at
the director), and eight neighbours with neighbours of their own."""
NOISY_QUESTION = "Where was the director of film Ballad Of Tara born?"
NOISY_PATH = [t("tara", "director", "eddie"), t("eddie", "birthplace", "dublin")]
NOISY_LIMITS = limits(max_subgraph_size=14)
"""The film's ten edges, then four more: too few for every neighbour's turn."""


def retrieved_for(store: EmbeddedStore, question: str, lim: RetrievalLimits) -> list[ox.Triple]:
    """The subgraph retrieval gives the question, from what grounding finds in it."""
    grounding = ground(store, question, 50)
    return retrieve_subgraph(store, grounding.seeds, lim, grounding.schema_predicates,
                             grounding.stems, grounding.relations)


def answered(store: EmbeddedStore, question: str, lim: RetrievalLimits
             ) -> tuple[list[ox.Term], str]:
    """The edges the offline selector selects for the question and the answer's text."""
    messages = list(GraphRag(store, OfflineBackend(), limits=lim).query(question))
    selected = [triple.object for message in messages for triple in message.explain_triples
                if triple.predicate == vocab.TG_EDGE]
    return selected, "".join(m.response for m in messages if m.message_type == "chunk")


def test_under_real_term_noise_the_nodes_a_path_reaches_expand_first(
    tgsparql_store: EmbeddedStore
) -> None:
    load(tgsparql_store, NOISY_FILM)
    update_label_index(tgsparql_store)
    edges = retrieved_for(tgsparql_store, NOISY_QUESTION, NOISY_LIMITS)
    # the film's "place of birth" and its director were reached by a predicate the question
    # names: they take their turns first, and a neighbour reached otherwise only the place
    # they leave
    assert edges[10:] == [
        t("lookalike", "award", "medal"), t("eddie", "award", "prize"),
        t("eddie", "birthplace", "dublin"), t("n0", "knows", "m0x0"),
    ]
    assert set(NOISY_PATH) <= set(edges)


def test_under_real_term_noise_only_the_path_the_question_walks_is_selected(
    tgsparql_store: EmbeddedStore
) -> None:
    load(tgsparql_store, NOISY_FILM)
    update_label_index(tgsparql_store)
    selected, answer = answered(tgsparql_store, NOISY_QUESTION, NOISY_LIMITS)
    assert selected == NOISY_PATH
    assert answer.startswith("Dublin. ")


TWO_FILMS = """
ex:director rdfs:label "director" . ex:country rdfs:label "country" . ex:knows rdfs:label "knows" .
ex:citizenship rdfs:label "country of citizenship" .
ex:anthemCountry rdfs:label "country of the anthem" . ex:basinCountry rdfs:label "basin country" .
ex:areaCountry rdfs:label "country of the area" . ex:bayCountry rdfs:label "bay country" .
ex:tara rdfs:label "Ballad of Tara" ; ex:director ex:eddie .
ex:kells rdfs:label "Song of Kells" ; ex:director ex:nora .
ex:eddie rdfs:label "Eddie Morris" ; ex:citizenship ex:ireland ;
    ex:anthemCountry ex:anthem ; ex:basinCountry ex:basin .
ex:nora rdfs:label "Nora Quinn" ; ex:citizenship ex:ireland ;
    ex:areaCountry ex:area ; ex:bayCountry ex:bay .
ex:ireland rdfs:label "Ireland" . ex:anthem rdfs:label "Anthem" . ex:basin rdfs:label "Basin" .
ex:area rdfs:label "Area" . ex:bay rdfs:label "Bay" .
""" + "".join(
    f"ex:{film} ex:country ex:{film}{i} .\n"
    + "".join(f"ex:{film}{i} ex:knows ex:{film}{i}x{j} .\n" for j in range(3))
    for film in ("tara", "kells") for i in range(6)
)
"""Two films compared, each a hub of real-term noise in small: six "country" edges to nodes
with neighbours of their own, and a director who has, besides the country of citizenship the
question walks to, two look-alikes ("basin country") one use each, whose predicates sort
first. Each director's look-alikes are his own, as noise spread over a KG's predicates gives
each hub different ones."""
TWO_FILMS_QUESTION = ("Do both films Ballad Of Tara and Song Of Kells have the directors from "
                      "the same country?")
TWO_FILMS_PATHS = [t("tara", "director", "eddie"), t("eddie", "citizenship", "ireland"),
                   t("kells", "director", "nora"), t("nora", "citizenship", "ireland")]
TWO_FILMS_LIMITS = limits(max_subgraph_size=30)
"""The films' fourteen edges, then one a node of the next hop's fourteen, and two more."""


def test_two_seeds_compared_each_keep_their_path_whole_under_look_alike_noise(
    tgsparql_store: EmbeddedStore
) -> None:
    """A comparison asks the same of each option: of each director's edges that answer
    "country", the one by a predicate the other director has too goes on first, and the
    second film's director takes his turn as early as the first's."""
    load(tgsparql_store, TWO_FILMS)
    update_label_index(tgsparql_store)
    assert ground(tgsparql_store, TWO_FILMS_QUESTION, 50).seeds == [ex("tara"), ex("kells")]
    edges = retrieved_for(tgsparql_store, TWO_FILMS_QUESTION, TWO_FILMS_LIMITS)
    assert set(TWO_FILMS_PATHS) <= set(edges)
    assert len(edges) == 30


def test_what_two_seeds_compared_share_is_a_predicate_in_the_same_direction(
    tgsparql_store: EmbeddedStore
) -> None:
    """Noise gives both directors a "country of the anthem" edge, one from him and one to her:
    a look-alike each, not the same thing said of both, so the country of citizenship still
    goes first, into the one place each director has."""
    load(tgsparql_store, TWO_FILMS.replace("ex:areaCountry ex:area", "ex:knows ex:area")
         + "ex:area ex:anthemCountry ex:nora .")
    update_label_index(tgsparql_store)
    edges = retrieved_for(tgsparql_store, TWO_FILMS_QUESTION, limits(max_subgraph_size=28))
    assert set(TWO_FILMS_PATHS) <= set(edges)


def test_two_seeds_compared_under_look_alike_noise_are_answered_from_their_paths(
    tgsparql_store: EmbeddedStore
) -> None:
    load(tgsparql_store, TWO_FILMS)
    update_label_index(tgsparql_store)
    selected, answer = answered(tgsparql_store, TWO_FILMS_QUESTION, TWO_FILMS_LIMITS)
    assert set(selected) == set(TWO_FILMS_PATHS)
    assert answer.startswith("Yes")


def test_a_value_two_seeds_compared_share_goes_first_among_several(
    tgsparql_store: EmbeddedStore
) -> None:
    """Eddie holds three countries of citizenship and Nora one, Ireland, which sorts last of
    his: the value both reach is what "the same country" asks about, so it takes his first
    turn, and the answer is Yes."""
    load(tgsparql_store, TWO_FILMS.replace(
        '"Eddie Morris" ; ex:citizenship ex:ireland',
        '"Eddie Morris" ; ex:citizenship ex:america, ex:austria, ex:ireland',
    ) + 'ex:america rdfs:label "America" . ex:austria rdfs:label "Austria" .')
    update_label_index(tgsparql_store)
    edges = retrieved_for(tgsparql_store, TWO_FILMS_QUESTION, TWO_FILMS_LIMITS)
    assert set(TWO_FILMS_PATHS) <= set(edges)
    selected, answer = answered(tgsparql_store, TWO_FILMS_QUESTION, TWO_FILMS_LIMITS)
    assert set(selected) == set(TWO_FILMS_PATHS)
    assert answer.startswith("Yes")


def test_the_second_seeds_path_takes_its_turns_as_early_as_the_first_seeds(
    tgsparql_store: EmbeddedStore
) -> None:
    """The directors share no predicate but the one that reached them, so nothing tells which
    of their edges the comparison asks for: each has two turns to find it, and the second
    film's director has his as early as the first's, before any film's second noise node."""
    own_words = (TWO_FILMS.replace("ex:basinCountry ex:basin", "ex:knows ex:basin")
                 .replace("ex:bayCountry ex:bay", "ex:knows ex:bay")
                 .replace('"Nora Quinn" ; ex:citizenship', '"Nora Quinn" ; ex:nationality'))
    load(tgsparql_store, own_words + 'ex:nationality rdfs:label "country of nationality" .')
    update_label_index(tgsparql_store)
    edges = retrieved_for(tgsparql_store, TWO_FILMS_QUESTION, TWO_FILMS_LIMITS)
    paths = {t("eddie", "citizenship", "ireland"), t("nora", "nationality", "ireland")}
    assert paths <= set(edges)
