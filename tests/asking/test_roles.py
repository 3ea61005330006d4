"""What the KG says a node is, read by one bounded query (tgsparql.asking.roles)."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox

from tgsparql.asking.roles import read_roles
from tgsparql.rdf import vocab

EX = "https://example.org/roles/"
LABEL = ox.NamedNode(vocab.RDFS + "label")


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def load(store, *triples: tuple[str, str, str]) -> None:
    for s, p, o in triples:
        store.oxigraph.add(ox.Quad(ex(s), ex(p), ex(o)))


def test_a_node_is_what_its_edges_say_by_direction_and_predicate_label(tgsparql_store) -> None:
    load(tgsparql_store, ("vienna", "country", "austria"), ("graz", "country", "austria"),
         ("steiner", "citizenship", "austria"), ("austria", "member", "eu"))
    tgsparql_store.oxigraph.add(ox.Quad(ex("country"), LABEL, ox.Literal("country")))
    tgsparql_store.oxigraph.add(ox.Quad(ex("citizenship"), LABEL,
                                        ox.Literal("country of citizenship", language="en")))
    assert read_roles(tgsparql_store, [ex("austria"), ex("nowhere")]) == {
        ex("austria"): Counter({(True, "country"): 2, (True, "country of citizenship"): 1,
                                (False, "member"): 1}),
        ex("nowhere"): Counter(),
    }


def test_edges_outside_the_default_graph_are_no_role(tgsparql_store) -> None:
    tgsparql_store.oxigraph.add(ox.Quad(ex("session"), ex("edge"), ex("austria"), ex("record")))
    load(tgsparql_store, ("vienna", "country", "austria"))
    assert read_roles(tgsparql_store, [ex("austria")]) == {
        ex("austria"): Counter({(True, "country"): 1})}


def test_a_hub_is_read_only_up_to_the_bound_a_direction(tgsparql_store) -> None:
    load(tgsparql_store, *[(f"city{i}", "country", "austria") for i in range(30)],
         *[("austria", "member", f"union{i}") for i in range(3)])
    roles = read_roles(tgsparql_store, [ex("austria")], up_to=10)
    assert roles == {ex("austria"): Counter({(True, "country"): 10, (False, "member"): 3})}


def test_nothing_asked_reads_nothing(tgsparql_store) -> None:
    assert read_roles(tgsparql_store, []) == {}
