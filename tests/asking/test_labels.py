"""Labels for the LLM, original terms for the record, and edge ids that never lose an edge."""

from __future__ import annotations

import hashlib
import json

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tgsparql.asking import labels as labels_module
from tgsparql.asking.labels import (
    LabeledEdge, build_labelgraph, edge_id, fetch_labels, get_labelgraph, label_of, label_terms,
    local_name,
)
from tgsparql.stores.store import EmbeddedStore

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def sha_id(s: str, p: str, o: str) -> str:
    text = json.dumps([s, p, o], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def add_label(
    store: EmbeddedStore, node: ox.NamedNode, value: str, language: str | None = None
) -> None:
    literal = ox.Literal(value, language=language) if language else ox.Literal(value)
    store.oxigraph.add(ox.Quad(node, RDFS_LABEL, literal))


# edge_id


def test_edge_id_is_the_first_8_hex_of_sha256_of_the_json_array() -> None:
    labels = ("Marie Curie", "discovered", "Polonium")
    expected = hashlib.sha256(b'["Marie Curie", "discovered", "Polonium"]').hexdigest()[:8]
    assert edge_id(labels) == expected


def test_edge_id_hashes_non_ascii_as_utf8_not_as_escapes() -> None:
    labels = ("Maria Skłodowska", "née", "Warszawa \u2603 \U0001f52c")
    utf8 = json.dumps(list(labels), ensure_ascii=False).encode("utf-8")
    escaped = json.dumps(list(labels)).encode("ascii")
    assert edge_id(labels) == hashlib.sha256(utf8).hexdigest()[:8]
    assert edge_id(labels) != hashlib.sha256(escaped).hexdigest()[:8]


def test_edge_id_escapes_quotes_and_backslashes_as_json_does() -> None:
    labels = ('say "hi"', "back\\slash", "new\nline")
    expected = hashlib.sha256(
        '["say \\"hi\\"", "back\\\\slash", "new\\nline"]'.encode("utf-8")
    ).hexdigest()[:8]
    assert edge_id(labels) == expected


@settings(max_examples=200)
@given(st.tuples(st.text(), st.text(), st.text()).filter(lambda t: all(_encodable(x) for x in t)))
def test_edge_id_matches_hashlib_for_any_labels(labels: tuple[str, str, str]) -> None:
    result = edge_id(labels)
    assert result == sha_id(*labels)
    assert len(result) == 8 and all(c in "0123456789abcdef" for c in result)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_edge_id_depends_on_the_order_of_the_labels() -> None:
    assert edge_id(("a", "b", "c")) != edge_id(("c", "b", "a"))


# local_name


@pytest.mark.parametrize(
    ("iri", "expected"),
    [
        ("http://example.org/people#Marie_Curie", "Marie_Curie"),
        ("http://example.org/people/Marie_Curie", "Marie_Curie"),
        ("http://example.org/a/b#c", "c"),
        ("http://example.org/a#b/c", "c"),
        ("urn:isbn:0451450523", "0451450523"),
        ("http://example.org/people/Marie%20Curie", "Marie Curie"),
        ("http://example.org/Sk%C5%82odowska", "Skłodowska"),
        ("http://example.org/", "http://example.org/"),
        ("http://example.org/ns#", "http://example.org/ns#"),
    ],
)
def test_local_name(iri: str, expected: str) -> None:
    assert local_name(iri) == expected


# label_of


def test_label_of_an_iri_with_a_label_is_the_label() -> None:
    assert label_of(ex("marie"), {ex("marie"): "Marie Curie"}) == "Marie Curie"


def test_label_of_an_iri_without_a_label_is_its_local_name() -> None:
    assert label_of(ex("Pierre_Curie"), {ex("marie"): "Marie Curie"}) == "Pierre_Curie"


def test_label_of_an_iri_with_an_empty_label_falls_back_to_its_local_name() -> None:
    assert label_of(ex("marie"), {ex("marie"): ""}) == "marie"


def test_label_of_a_literal_is_its_value() -> None:
    assert label_of(ox.Literal("1867", datatype=ox.NamedNode(XSD + "integer")), {}) == "1867"
    assert label_of(ox.Literal("Varsovie", language="fr"), {}) == "Varsovie"
    assert label_of(ox.Literal("plain"), {}) == "plain"


def test_label_of_a_triple_term_labels_its_parts() -> None:
    quoted = ox.Triple(ex("marie"), ex("discovered"), ox.Literal("Po"))
    assert label_of(quoted, {ex("marie"): "Marie Curie"}) == "(Marie Curie discovered Po)"


def test_label_of_a_nested_triple_term() -> None:
    inner = ox.Triple(ex("marie"), ex("discovered"), ex("polonium"))
    outer = ox.Triple(ex("pierre"), ex("said"), inner)
    names = {ex("marie"): "Marie Curie", ex("polonium"): "Polonium"}
    assert label_of(outer, names) == "(pierre said (Marie Curie discovered Polonium))"


# fetch_labels


def test_fetch_labels_prefers_english(tgsparql_store: EmbeddedStore) -> None:
    add_label(tgsparql_store, ex("warsaw"), "Warszawa", "pl")
    add_label(tgsparql_store, ex("warsaw"), "Warsaw city")
    add_label(tgsparql_store, ex("warsaw"), "Warsaw", "en")
    assert fetch_labels(tgsparql_store, [ex("warsaw")]) == {ex("warsaw"): "Warsaw"}


def test_fetch_labels_counts_english_regions_as_english(tgsparql_store: EmbeddedStore) -> None:
    add_label(tgsparql_store, ex("colour"), "untagged colour")
    add_label(tgsparql_store, ex("colour"), "Colour", "en-GB")
    assert fetch_labels(tgsparql_store, [ex("colour")]) == {ex("colour"): "Colour"}


def test_fetch_labels_prefers_untagged_over_other_languages(tgsparql_store: EmbeddedStore) -> None:
    add_label(tgsparql_store, ex("warsaw"), "Warszawa", "pl")
    add_label(tgsparql_store, ex("warsaw"), "Varsovie", "fr")
    add_label(tgsparql_store, ex("warsaw"), "Warsaw (untagged)")
    assert fetch_labels(tgsparql_store, [ex("warsaw")]) == {ex("warsaw"): "Warsaw (untagged)"}


def test_fetch_labels_falls_back_to_any_language_smallest_value_first(
    tgsparql_store: EmbeddedStore
) -> None:
    add_label(tgsparql_store, ex("warsaw"), "Warszawa", "pl")
    add_label(tgsparql_store, ex("warsaw"), "Varsovie", "fr")
    assert fetch_labels(tgsparql_store, [ex("warsaw")]) == {ex("warsaw"): "Varsovie"}


def test_fetch_labels_breaks_ties_by_value(tgsparql_store: EmbeddedStore) -> None:
    add_label(tgsparql_store, ex("marie"), "Marie Curie", "en")
    add_label(tgsparql_store, ex("marie"), "Madame Curie", "en")
    assert fetch_labels(tgsparql_store, [ex("marie")]) == {ex("marie"): "Madame Curie"}


def test_fetch_labels_omits_terms_without_labels(tgsparql_store: EmbeddedStore) -> None:
    add_label(tgsparql_store, ex("marie"), "Marie Curie")
    found = fetch_labels(tgsparql_store, [ex("marie"), ex("nobody"), ex("marie")])
    assert found == {ex("marie"): "Marie Curie"}


def test_fetch_labels_of_nothing_is_empty(tgsparql_store: EmbeddedStore) -> None:
    assert fetch_labels(tgsparql_store, []) == {}


def test_fetch_labels_reads_the_default_graph_only(tgsparql_store: EmbeddedStore) -> None:
    tgsparql_store.oxigraph.add(ox.Quad(ex("marie"), RDFS_LABEL, ox.Literal("Secret"), ex("g")))
    assert fetch_labels(tgsparql_store, [ex("marie")]) == {}


def test_label_terms_include_the_parts_of_triple_terms() -> None:
    inner = ox.Triple(ex("b"), ex("q"), ex("c"))
    found = label_terms(
        [ox.Triple(ex("a"), ex("p"), inner), ox.Triple(ex("a"), ex("p"), ox.Literal("x"))]
    )
    assert found == [ex("a"), ex("p"), ex("b"), ex("q"), ex("c"), ex("a"), ex("p")]


# build_labelgraph / get_labelgraph


def test_build_labelgraph_labels_each_edge_and_maps_its_id() -> None:
    triple = ox.Triple(ex("marie"), ex("discovered"), ex("polonium"))
    names = {ex("marie"): "Marie Curie", ex("polonium"): "Polonium"}
    graph = build_labelgraph([triple], names)
    expected_id = sha_id("Marie Curie", "discovered", "Polonium")
    assert graph.labeled_edges == [
        LabeledEdge(expected_id, ("Marie Curie", "discovered", "Polonium"), triple)
    ]
    assert graph.uri_map == {expected_id: triple}
    assert graph.by_id() == {expected_id: graph.labeled_edges[0]}


def test_identical_labels_get_suffixed_ids_and_all_survive() -> None:
    triples = [
        ox.Triple(ex("fr/Paris"), ex("locatedIn"), ex("fr/Country")),
        ox.Triple(ex("us/Paris"), ex("locatedIn"), ex("us/Country")),
        ox.Triple(ex("ca/Paris"), ex("locatedIn"), ex("ca/Country")),
    ]
    names = {ex("fr/Paris"): "Paris", ex("us/Paris"): "Paris", ex("ca/Paris"): "Paris"}
    graph = build_labelgraph(triples, names)
    h = sha_id("Paris", "locatedIn", "Country")
    assert [edge.id for edge in graph.labeled_edges] == [h, f"{h}-2", f"{h}-3"]
    assert [edge.labels for edge in graph.labeled_edges] == [("Paris", "locatedIn", "Country")] * 3
    assert graph.uri_map == {h: triples[0], f"{h}-2": triples[1], f"{h}-3": triples[2]}


def test_uri_map_keeps_the_original_literal_terms() -> None:
    integer = ox.Literal("1867", datatype=ox.NamedNode(XSD + "integer"))
    gyear = ox.Literal("1867", datatype=ox.NamedNode(XSD + "gYear"))
    french = ox.Literal("1867", language="fr")
    triples = [ox.Triple(ex("marie"), ex("born"), value) for value in (integer, gyear, french)]
    graph = build_labelgraph(triples, {ex("marie"): "Marie Curie"})
    h = sha_id("Marie Curie", "born", "1867")
    assert list(graph.uri_map) == [h, f"{h}-2", f"{h}-3"]
    assert [graph.uri_map[i].object for i in graph.uri_map] == [integer, gyear, french]
    assert graph.uri_map[f"{h}-2"].object.datatype == ox.NamedNode(XSD + "gYear")
    assert graph.uri_map[f"{h}-3"].object.language == "fr"


def test_forced_hash_collision_keeps_every_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(labels_module, "edge_id", lambda _labels: "deadbeef")
    triples = [
        ox.Triple(ex("marie"), ex("discovered"), ex("polonium")),
        ox.Triple(ex("marie"), ex("discovered"), ex("radium")),
        ox.Triple(ex("pierre"), ex("spouse"), ex("marie")),
        ox.Triple(
            ex("pierre"), ex("born"), ox.Literal("1859", datatype=ox.NamedNode(XSD + "integer"))
        ),
    ]
    graph = labels_module.build_labelgraph(triples, {})
    ids = ["deadbeef", "deadbeef-2", "deadbeef-3", "deadbeef-4"]
    assert [edge.id for edge in graph.labeled_edges] == ids
    assert graph.uri_map == dict(zip(ids, triples, strict=True))
    assert [edge.labels for edge in graph.labeled_edges] == [
        ("marie", "discovered", "polonium"),
        ("marie", "discovered", "radium"),
        ("pierre", "spouse", "marie"),
        ("pierre", "born", "1859"),
    ]


def test_build_labelgraph_of_no_edges_is_empty() -> None:
    graph = build_labelgraph([], {})
    assert graph.labeled_edges == []
    assert graph.uri_map == {}


@settings(max_examples=100)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 3)),
        unique=True,
        max_size=30,
    ),
    st.dictionaries(
        st.integers(0, 3), st.sampled_from(["Paris", "Texas", "France", ""]), max_size=4
    ),
)
def test_build_labelgraph_never_loses_an_edge(
    shape: list[tuple[int, int, int]], label_choice: dict[int, str]
) -> None:
    triples = [ox.Triple(ex(f"n{s}"), ex(f"p{p}"), ex(f"n{o}")) for s, p, o in shape]
    names = {ex(f"n{k}"): v for k, v in label_choice.items()}
    graph = build_labelgraph(triples, names)
    assert list(graph.uri_map.values()) == triples
    assert len(graph.uri_map) == len(graph.labeled_edges) == len(triples)
    for edge in graph.labeled_edges:
        base = edge_id(edge.labels)
        assert edge.id == base or edge.id.startswith(base + "-")
        assert graph.uri_map[edge.id] == edge.triple


def test_get_labelgraph_uses_the_store_labels(tgsparql_store: EmbeddedStore) -> None:
    add_label(tgsparql_store, ex("marie"), "Marie Curie", "en")
    add_label(tgsparql_store, ex("marie"), "Maria Skłodowska", "pl")
    add_label(tgsparql_store, ex("discovered"), "discovered")
    add_label(tgsparql_store, ex("polonium"), "Polonium")
    year = ox.Literal("1898", datatype=ox.NamedNode(XSD + "gYear"))
    triples = [
        ox.Triple(ex("marie"), ex("discovered"), ex("polonium")),
        ox.Triple(ex("marie"), ex("discoveredIn"), year),
    ]
    graph = get_labelgraph(tgsparql_store, triples)
    assert [edge.labels for edge in graph.labeled_edges] == [
        ("Marie Curie", "discovered", "Polonium"),
        ("Marie Curie", "discoveredIn", "1898"),
    ]
    assert graph.uri_map == {
        sha_id("Marie Curie", "discovered", "Polonium"): triples[0],
        sha_id("Marie Curie", "discoveredIn", "1898"): triples[1],
    }


def test_get_labelgraph_keeps_two_same_labelled_facts_from_the_store(
    tgsparql_store: EmbeddedStore
) -> None:
    paris_fr, paris_tx = ex("fr/Paris"), ex("us/Paris")
    for node in (paris_fr, paris_tx):
        add_label(tgsparql_store, node, "Paris")
    add_label(tgsparql_store, ex("capitalOf"), "capital of")
    add_label(tgsparql_store, ex("fr/seat"), "the county")
    add_label(tgsparql_store, ex("us/seat"), "the county")
    triples = [
        ox.Triple(paris_fr, ex("capitalOf"), ex("fr/seat")),
        ox.Triple(paris_tx, ex("capitalOf"), ex("us/seat")),
    ]
    graph = get_labelgraph(tgsparql_store, triples)
    h = sha_id("Paris", "capital of", "the county")
    assert graph.uri_map == {h: triples[0], f"{h}-2": triples[1]}
