"""Reading values out of RDF terms: an edge reference resolved to its triple."""

from __future__ import annotations

import datetime as dt

import pyoxigraph as ox
from hypothesis import given
from hypothesis import strategies as st

from tgsparql.rdf import vocab
from tgsparql.rdf.terms import Parts, edge_of, oldest_first, term_datetime

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


@given(st.lists(st.datetimes(timezones=st.just(dt.timezone.utc)), min_size=2, max_size=6))
def test_records_sort_by_the_moment_they_started_whatever_their_canonical_text(
    moments: list[dt.datetime]
) -> None:
    """Oxigraph writes an xsd:dateTime in canonical form: "…:01.12Z" names an earlier moment
    than "…:01.123Z" and sorts after it as text."""
    written = [ox.Literal(m.isoformat(), datatype=vocab.XSD_DATETIME) for m in moments]
    canonical = [ox.Store().query(f"SELECT ({term} AS ?t) {{}}").__next__()["t"].value
                 for term in written]
    by_key = sorted(range(len(moments)), key=lambda i: oldest_first(canonical[i], str(i)))
    assert [moments[i] for i in by_key] == sorted(moments)


def test_a_start_that_names_no_moment_goes_last_and_reads_as_none() -> None:
    texts = ["not a time", "2026-03-01T10:00:01", None, "2026-03-01T10:00:01.5Z"]
    assert sorted(texts, key=lambda t: oldest_first(t, "")) == [
        "2026-03-01T10:00:01.5Z", None, "2026-03-01T10:00:01", "not a time"]
    assert term_datetime(ox.Literal("2026-03-01T10:00:01")) is None
    assert term_datetime(ox.NamedNode(EX + "time")) is None
    assert term_datetime(ox.Literal("2026-03-01T10:00:01.5+02:00")) == dt.datetime(
        2026, 3, 1, 8, 0, 1, 500000, tzinfo=dt.timezone.utc)
