"""Records: each RDF term as the JSON value a dataframe column wants."""

from __future__ import annotations

import json

import pyoxigraph as ox
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tgsparql.rdf import vocab
from tgsparql.serve.records import serialize_records, typed


def literal(text: str, datatype: str) -> ox.Literal:
    return ox.Literal(text, datatype=ox.NamedNode(vocab.XSD + datatype))


@pytest.mark.parametrize(("term", "expected"), [
    (literal("42", "integer"), 42),
    (literal("-7", "long"), -7),
    (literal("3", "decimal"), 3),
    (literal("0.25", "decimal"), 0.25),
    (literal("1.5E2", "double"), 150.0),
    (literal("NaN", "double"), None),
    (literal("INF", "float"), None),
    (literal("true", "boolean"), True),
    (literal("0", "boolean"), False),
    (literal("2024-05-01", "date"), "2024-05-01"),
    (literal("2024-05-01T09:30:00Z", "dateTime"), "2024-05-01T09:30:00Z"),
    (literal("twelve", "integer"), "twelve"),  # not of its datatype: kept as text
    (ox.Literal("bonjour", language="fr"), "bonjour"),
    (ox.NamedNode("urn:trustgraph:session:x"), "urn:trustgraph:session:x"),
    (ox.BlankNode("b0"), "_:b0"),
    (None, None),
])
def test_typed_values(term: object, expected: object) -> None:
    value = typed(term)
    assert value == expected and type(value) is type(expected)


def test_a_triple_term_is_its_text() -> None:
    triple = ox.Triple(ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), ox.Literal("o"))
    assert typed(triple) == '<<( <urn:s> <urn:p> "o" )>>'


@given(st.lists(st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                          st.booleans(), st.text()), max_size=20))
def test_every_row_is_one_json_line_with_every_variable(values: list[object]) -> None:
    store = ox.Store()
    graph = ox.NamedNode("urn:g")
    for n, value in enumerate(values):
        store.add(ox.Quad(ox.NamedNode(f"urn:r{n}"), ox.NamedNode("urn:v"), ox.Literal(value),
                          graph))
    result = store.query("SELECT ?row ?value ?missing WHERE { GRAPH ?g { ?row ?p ?value } }")
    body = serialize_records(result, "ndjson", 100).body.decode("utf-8")
    lines = body.splitlines()
    assert len(lines) == len(values) and body.endswith("\n") or not values
    for line in lines:
        row = json.loads(line)
        assert list(row) == ["row", "value", "missing"] and row["missing"] is None


def test_a_line_break_inside_a_value_does_not_break_the_line() -> None:
    store = ox.Store()
    result = store.query('SELECT ?text WHERE { VALUES ?text { "a\\u0085b\\u2028c\\u2029d\\ne" } }')
    body = serialize_records(result, "ndjson", 10).body.decode("utf-8")
    assert len(body.splitlines()) == 1
    assert json.loads(body) == {"text": "a\x85b\u2028c\u2029d\ne"}
