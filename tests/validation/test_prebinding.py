"""Pre-binding (SHACL appendix A) over queries drawn from the SPARQL 1.1 grammar: whatever
pyoxigraph parses, the validator runs, and its results are those of the query SHACL means with
the variables pre-bound (values insertion, written out by `sparql_queries.meant`), over every
focus node and over a few named ones."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.validation.sparql_queries import (
    EX, PATH_TEXT, PREFIXES, ask_queries, meant, select_queries, shapes_text,
)
from tgsparql.stores.store import open_store
from tgsparql.validation import Shapes, Validator

SHAPES_PREFIXES = f"""@prefix ex: <{EX}> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:decl sh:declare [ sh:prefix "ex" ; sh:namespace "{EX}"^^xsd:anyURI ] .
"""
SHAPE = ox.NamedNode(EX + "S")
PARAMETER = ox.NamedNode(EX + "b")
"""The value of the parameter $k the drawn validators' shapes have (ex:k ex:b)."""
FOCUS = [ox.NamedNode(EX + "a"), ox.NamedNode(EX + "b"), ox.NamedNode(EX + "c"), ox.Literal("lit")]
TARGETS = 'sh:targetNode ex:a, ex:b, ex:c, "lit"'
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

NODES = [ox.NamedNode(EX + n) for n in "abc"]
PREDICATES = [ox.NamedNode(EX + "p"), ox.NamedNode(EX + "q")]
OBJECTS = [*NODES, ox.Literal("s"), ox.Literal("lit")]
GRAPHS = [ox.DefaultGraph(), ox.DefaultGraph(), ox.NamedNode(EX + "g")]
data_graphs = st.lists(
    st.builds(ox.Quad, st.sampled_from(NODES), st.sampled_from(PREDICATES),
              st.sampled_from(OBJECTS), st.sampled_from(GRAPHS)),
    max_size=8,
)


def parses(text: str) -> bool:
    try:
        ox.Store().query(text)
    except SyntaxError:
        return False
    return True


def store_of(quads: list[ox.Quad]):
    store = open_store()
    store.oxigraph.extend(quads)
    return store


def escaped(query: str) -> str:
    return query.replace("\\", "\\\\").replace('"', '\\"')


def rows(store, text: str) -> list[dict[str, ox.NamedNode | ox.Literal]]:
    solutions = store.oxigraph.query(text)
    names = [v.value for v in solutions.variables]
    return [{n: s[n] for n in names if s[n] is not None} for s in solutions]


def check(report_pairs: Counter, expected: Counter, query: str, per_node_only: bool) -> None:
    if per_node_only:  # which rows LIMIT or OFFSET keep is the engine's choice
        report_pairs = Counter(focus for focus, _ in report_pairs.elements())
        expected = Counter(focus for focus, _ in expected.elements())
    assert report_pairs == expected, query


@SETTINGS
@given(query=select_queries(path=False) | select_queries(path=True), quads=data_graphs)
def test_a_select_constraint_means_what_prebinding_means(query: str, quads: list[ox.Quad]) -> None:
    text = shapes_text(query)
    property_shape = "$PATH" in text
    assume(parses(PREFIXES + text.replace("$PATH", PATH_TEXT)))
    path = "sh:path ex:p ; " if property_shape else ""
    shapes = Shapes.from_text(SHAPES_PREFIXES + f'ex:S {path}{TARGETS} ; sh:sparql [ '
                              f'sh:prefixes ex:decl ; sh:select """{escaped(text)}""" ] .')
    store = store_of(quads)
    validator = Validator(shapes)
    expected: Counter = Counter()
    for focus in FOCUS:
        pre_bound = meant(query, {"this": focus, "currentShape": SHAPE})
        assert parses(pre_bound), pre_bound
        for row in rows(store, pre_bound):
            value = row.get("value", None if property_shape else focus)
            expected[(focus, value)] += 1
    limited = any(word in text for word in ("LIMIT", "OFFSET"))
    whole = validator.validate(store, default_graph=None)
    check(Counter((r.focus_node, r.value) for r in whole.results), expected, text, limited)
    named = [node.value for node in NODES]
    few = validator.validate(store, default_graph=None, focus=named)
    check(Counter((r.focus_node, r.value) for r in few.results),
          Counter({k: n for k, n in expected.items() if isinstance(k[0], ox.NamedNode)}),
          text, limited)


@SETTINGS
@given(query=st.booleans().flatmap(lambda path: select_queries(path=path, parameters=("k",))),
       quads=data_graphs)
def test_a_select_validator_means_what_prebinding_means(query: str, quads: list[ox.Quad]) -> None:
    """A node or property validator of a component with the parameter $k."""
    text = shapes_text(query)
    property_shape = "$PATH" in text
    assume(parses(PREFIXES + text.replace("$PATH", PATH_TEXT)))
    kind = "propertyValidator" if property_shape else "nodeValidator"
    shape = f"ex:S {TARGETS} ; ex:k ex:b" + (" ; sh:path ex:p ." if property_shape else " .")
    shapes = Shapes.from_text(SHAPES_PREFIXES + f"""ex:C a sh:ConstraintComponent ;
        sh:parameter [ sh:path ex:k ] ;
        sh:{kind} [ sh:prefixes ex:decl ; sh:select \"\"\"{escaped(text)}\"\"\" ] .
        {shape}""")
    store = store_of(quads)
    expected: Counter = Counter()
    for focus in FOCUS:
        pre_bound = meant(query, {"this": focus, "currentShape": SHAPE, "k": PARAMETER})
        assert parses(pre_bound), pre_bound
        for row in rows(store, pre_bound):
            expected[(focus, row.get("value", None if property_shape else focus))] += 1
    report = Validator(shapes).validate(store, default_graph=None)
    limited = any(word in text for word in ("LIMIT", "OFFSET"))
    check(Counter((r.focus_node, r.value) for r in report.results), expected, text, limited)


@SETTINGS
@given(query=ask_queries(), quads=data_graphs, property_shape=st.booleans())
def test_an_ask_validator_means_what_prebinding_means(
    query: str, quads: list[ox.Quad], property_shape: bool
) -> None:
    text = shapes_text(query)
    assume(parses(PREFIXES + text))
    shape = (f"ex:S {TARGETS} ; " + ("sh:property [ sh:path ex:p ; ex:k ex:b ] ." if property_shape
                                     else "ex:k ex:b ."))
    shapes = Shapes.from_text(SHAPES_PREFIXES + f"""ex:C a sh:ConstraintComponent ;
        sh:parameter [ sh:path ex:k ] ;
        sh:validator [ sh:prefixes ex:decl ; sh:ask \"\"\"{escaped(text)}\"\"\" ] .
        {shape}""")
    store = store_of(quads)
    expected: Counter = Counter()
    for focus in FOCUS:
        if property_shape:
            values = {q.object for q in quads if q.subject == focus
                      and q.predicate.value == EX + "p" and q.graph_name == ox.DefaultGraph()}
        else:
            values = {focus}
        for value in values:
            pre_bound = meant(query, {"this": focus, "value": value, "k": PARAMETER})
            assert parses(pre_bound), pre_bound
            if not store.oxigraph.query(pre_bound):
                expected[(focus, value)] += 1
    report = Validator(shapes).validate(store, default_graph=None)
    assert Counter((r.focus_node, r.value) for r in report.results) == expected, text
