"""Reading values out of RDF terms: an edge reference resolved to its triple."""

from __future__ import annotations

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.terms import Parts, edge_of

EX = "https://example.org/"
MARIE, BORN, WARSAW, SAID = (ox.NamedNode(EX + name) for name in ("marie", "born", "warsaw", "said"))
EDGE = ox.Triple(MARIE, BORN, WARSAW)


def statements(*records: tuple[ox.NamedNode, ox.Triple]) -> dict[ox.NamedNode, Parts]:
    return {iri: (t.subject, t.predicate, t.object) for iri, t in records}


def reader(found: dict[ox.NamedNode, Parts]):
    return lambda term: found.get(term, (None, None, None))


def test_a_triple_term_is_its_own_edge_and_nothing_is_none() -> None:
    assert edge_of(EDGE, reader({})) == EDGE
    assert edge_of(None, reader({})) is None


def test_a_statement_is_the_triple_of_its_parts() -> None:
    statement = ox.NamedNode(EX + "statement")
    assert edge_of(statement, reader(statements((statement, EDGE)))) == EDGE


def test_a_statement_nested_in_the_object_is_resolved_as_well() -> None:
    inner, outer = ox.NamedNode(EX + "inner"), ox.NamedNode(EX + "outer")
    parts = {**statements((inner, EDGE)), outer: (MARIE, SAID, inner)}
    assert edge_of(outer, reader(parts)) == ox.Triple(MARIE, SAID, EDGE)


def test_parts_that_make_no_triple_are_none() -> None:
    statement = ox.NamedNode(EX + "statement")
    assert edge_of(statement, reader({})) is None
    assert edge_of(statement, reader({statement: (MARIE, None, WARSAW)})) is None
    assert edge_of(statement, reader({statement: (ox.Literal("x"), BORN, WARSAW)})) is None
    assert edge_of(statement, reader({statement: (MARIE, vocab.RDF_SUBJECT, None)})) is None
