"""Literals as the data wrote them: which ones the store rewrites, and the records that keep them."""

from __future__ import annotations

import io

import pyoxigraph as ox

from tgsparql.rdf.lexical import GRAPH_LEXICAL, records, stored_forms
from tgsparql.rdf.vocab import TG_DATATYPE, TG_LEXICAL_FORM
from tgsparql.stores.store import EmbeddedStore

XSD = "http://www.w3.org/2001/XMLSchema#"


def typed(lexical: str, datatype: str) -> ox.Literal:
    return ox.Literal(lexical, datatype=ox.NamedNode(XSD + datatype))


def test_the_store_rewrites_subtypes_of_integer_and_non_canonical_values() -> None:
    assert stored_forms([
        typed("3", "byte"), typed("300", "byte"), typed("+5", "int"), typed("4.0", "decimal"),
        typed("01", "integer"), typed("1", "boolean"),
    ]) == {
        typed("3", "byte"): typed("3", "integer"),
        typed("300", "byte"): typed("300", "integer"),
        typed("+5", "int"): typed("5", "integer"),
        typed("4.0", "decimal"): typed("4", "decimal"),
        typed("01", "integer"): typed("1", "integer"),
        typed("1", "boolean"): typed("true", "boolean"),
    }


def test_canonical_ill_formed_and_other_literals_are_kept_as_written() -> None:
    assert stored_forms([
        typed("3", "integer"), typed("abc", "integer"), typed("c", "byte"), typed("x", "string"),
        ox.Literal("chat", language="fr"), ox.Literal("x", datatype=ox.NamedNode("urn:dt")),
    ]) == {}


def test_one_record_per_rewritten_statement_with_the_written_form() -> None:
    subject, predicate = ox.NamedNode("urn:s"), ox.NamedNode("urn:p")
    quads = [ox.Quad(subject, predicate, typed("3", "byte")), ox.Quad(subject, predicate, typed("3", "integer"))]
    found = records(quads)
    assert {q.graph_name for q in found} == {GRAPH_LEXICAL}
    assert len({q.subject for q in found}) == 1
    by_predicate = {q.predicate: q.object for q in found}
    assert by_predicate[TG_LEXICAL_FORM] == ox.Literal("3")
    assert by_predicate[TG_DATATYPE] == ox.NamedNode(XSD + "byte")


def test_a_bulk_load_writes_the_records_and_loading_again_adds_nothing() -> None:
    store = EmbeddedStore()
    data = b'<urn:s> <urn:p> "3"^^<http://www.w3.org/2001/XMLSchema#byte> , "x" .\n'
    store.bulk_load(io.BytesIO(data), ox.RdfFormat.TURTLE)
    count = len(store.oxigraph)
    assert count == 2 + 5
    store.bulk_load(io.BytesIO(data), ox.RdfFormat.TURTLE)
    assert len(store.oxigraph) == count
