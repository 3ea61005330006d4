"""The edge constraints of the reification dialect (shapes/edges-reification.ttl) against their
rule: an edge is a triple reference iff it is typed rdf:Statement and has exactly one
rdf:subject, one rdf:predicate and one rdf:object; a reference to a fact also names a triple
of the data graph.

The shipped queries read each statement once (its three terms in one pattern, its own triples
once for any second value). These tests hold them to the rule, to the formulation that tested
each condition with its own EXISTS, and to each other in a whole-store and a scoped run."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import product

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tgsparql.rdf import vocab
from tgsparql.stores.store import EmbeddedStore
from tgsparql.validation import Shapes, Validator

TG = vocab.TG
RDF = vocab.RDF
TGS = "https://trustgraph.ai/shapes/"
GRAPH = ox.NamedNode("urn:graph:explainability")
RETRIEVAL = ox.NamedNode("urn:trustgraph:prov:retrieval:00000000-0000-4000-8000-000000000001")
SUBGRAPH = ox.NamedNode("https://trustgraph.ai/subgraph/00000000-0000-4000-8000-000000000002")
SELECTION = ox.NamedNode("urn:trustgraph:prov:selection:00000000-0000-4000-8000-000000000001")
SUBJECTS = (ox.NamedNode("https://example.org/a"), ox.NamedNode("https://example.org/b"))
PREDICATES = (ox.NamedNode("https://example.org/p"), ox.NamedNode("https://example.org/q"))
OBJECTS = (ox.NamedNode("https://example.org/c"), ox.Literal("c"))

FACT_RULE = {"RetrievedEdgeIsAFact": True, "ContainedTripleIsAFact": True,
             "SelectedEdgeIsATriple": False}
"""Each rewritten constraint, and whether it also asks for the fact (else only the reference)."""

ONE_EXISTS_PER_CONDITION = """
    PREFIX tg: <https://trustgraph.ai/ns/>
    PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
    SELECT DISTINCT ?this ?value WHERE {
        { ?this tg:retrievedEdge ?value } UNION { ?this tg:contains ?value }
        FILTER(NOT EXISTS { ?value a rdf:Statement ; rdf:subject ?s ; rdf:predicate ?p ; rdf:object ?o
                            FILTER EXISTS { ?s ?p ?o } }
               || EXISTS { ?value rdf:subject ?one, ?other FILTER(!sameTerm(?one, ?other)) }
               || EXISTS { ?value rdf:predicate ?one, ?other FILTER(!sameTerm(?one, ?other)) }
               || EXISTS { ?value rdf:object ?one, ?other FILTER(!sameTerm(?one, ?other)) })
    }"""
"""The formulation before the rewrite, for the two "is a fact" constraints: an EXISTS per
condition, reading each statement four times."""


@dataclass(frozen=True)
class Statement:
    """What the data says of one edge IRI (each set may be empty or hold two terms)."""

    typed: bool
    subjects: frozenset[ox.NamedNode]
    predicates: frozenset[ox.NamedNode]
    objects: frozenset[ox.Term]

    def is_reference(self) -> bool:
        return self.typed and len(self.subjects) == len(self.predicates) == len(self.objects) == 1

    def names_a_fact(self, facts: frozenset[ox.Triple]) -> bool:
        return self.is_reference() and any(
            ox.Triple(*terms) in facts for terms in product(self.subjects, self.predicates, self.objects)
        )


def edge(index: int) -> ox.NamedNode:
    return ox.NamedNode(f"urn:trustgraph:stmt:{index:064x}")


def store_of(statements: list[Statement], facts: frozenset[ox.Triple]) -> EmbeddedStore:
    """Facts in the default graph; each edge retrieved, contained in a subgraph and selected, and
    described in the record's graph."""
    store = EmbeddedStore()
    quads = [ox.Quad(fact.subject, fact.predicate, fact.object) for fact in facts]
    quads.append(ox.Quad(SUBGRAPH, vocab.RDF_TYPE, vocab.TG_SUBGRAPH_CLASS, GRAPH))
    for index, statement in enumerate(statements):
        value = edge(index)
        selected = ox.NamedNode(f"urn:trustgraph:prov:edge:00000000-0000-4000-8000-000000000001:{index}")
        quads += [ox.Quad(RETRIEVAL, ox.NamedNode(TG + "retrievedEdge"), value, GRAPH),
                  ox.Quad(SUBGRAPH, ox.NamedNode(TG + "contains"), value, GRAPH),
                  ox.Quad(SELECTION, ox.NamedNode(TG + "selectedEdge"), selected, GRAPH),
                  ox.Quad(selected, ox.NamedNode(TG + "edge"), value, GRAPH)]
        if statement.typed:
            quads.append(ox.Quad(value, vocab.RDF_TYPE, ox.NamedNode(RDF + "Statement"), GRAPH))
        for name, terms in (("subject", statement.subjects), ("predicate", statement.predicates),
                            ("object", statement.objects)):
            quads += [ox.Quad(value, ox.NamedNode(RDF + name), term, GRAPH) for term in terms]
    store.oxigraph.extend(quads)
    return store


def expected(statements: list[Statement], facts: frozenset[ox.Triple]) -> set[tuple[str, str]]:
    """(constraint, edge) for each edge the rule says each constraint reports."""
    return {
        (name, edge(index).value)
        for index, statement in enumerate(statements)
        for name, fact in FACT_RULE.items()
        if not (statement.names_a_fact(facts) if fact else statement.is_reference())
    }


@cache
def validator() -> Validator:
    return Validator(Shapes.bundled("reification"), "reification")


def reported(store: EmbeddedStore, scoped: bool) -> set[tuple[str, str]]:
    """(constraint, value) of the results of the rewritten constraints, of a whole-store run or
    one scoped to the record's nodes (as validate --session runs it)."""
    focus = [RETRIEVAL, SUBGRAPH, *(row["e"] for row in store.select(
        f"SELECT ?e WHERE {{ <{SELECTION.value}> <{TG}selectedEdge> ?e }}", default_graph="union"))]
    report = validator().validate(store, default_graph="union", focus=focus if scoped else None)
    found = set()
    for result in report.results:
        name = result.source_constraint.value.removeprefix(TGS) if result.source_constraint else ""
        if name in FACT_RULE:
            found.add((name, result.value.value))  # type: ignore[union-attr]
    return found


def before(store: EmbeddedStore) -> set[str]:
    """The edges the earlier formulation reports (as a Retrieval's and a subgraph's alike)."""
    return {row["value"].value for row in store.select(ONE_EXISTS_PER_CONDITION, default_graph="union")}


A, B = SUBJECTS
P, Q = PREDICATES
C, D = OBJECTS
GOOD = Statement(True, frozenset({A}), frozenset({P}), frozenset({C}))
FACTS = frozenset({ox.Triple(A, P, C), ox.Triple(B, P, C)})
CASES = {
    "a statement naming a fact": (GOOD, set()),
    "its fact missing": (Statement(True, frozenset({A}), frozenset({Q}), frozenset({C})),
                         {"RetrievedEdgeIsAFact", "ContainedTripleIsAFact"}),
    "not typed rdf:Statement": (Statement(False, GOOD.subjects, GOOD.predicates, GOOD.objects),
                                set(FACT_RULE)),
    "no description at all": (Statement(False, frozenset(), frozenset(), frozenset()), set(FACT_RULE)),
    "no rdf:subject": (Statement(True, frozenset(), GOOD.predicates, GOOD.objects), set(FACT_RULE)),
    "no rdf:predicate": (Statement(True, GOOD.subjects, frozenset(), GOOD.objects), set(FACT_RULE)),
    "no rdf:object": (Statement(True, GOOD.subjects, GOOD.predicates, frozenset()), set(FACT_RULE)),
    "two subjects, each naming a fact": (
        Statement(True, frozenset({A, B}), GOOD.predicates, GOOD.objects), set(FACT_RULE)),
    "two predicates": (Statement(True, GOOD.subjects, frozenset({P, Q}), GOOD.objects), set(FACT_RULE)),
    "two objects": (Statement(True, GOOD.subjects, GOOD.predicates, frozenset({C, D})), set(FACT_RULE)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_kind_of_broken_reference_is_reported_by_each_constraint_it_breaks(case) -> None:
    statement, broken = case
    store = store_of([statement], FACTS)
    assert reported(store, scoped=False) == reported(store, scoped=True) == {
        (name, edge(0).value) for name in broken}
    assert expected([statement], FACTS) == reported(store, scoped=False)


terms = st.frozensets(st.sampled_from(SUBJECTS), max_size=2)
statements = st.builds(Statement, st.booleans(), terms, st.frozensets(st.sampled_from(PREDICATES), max_size=2),
                       st.frozensets(st.sampled_from(OBJECTS), max_size=2))
ALL_FACTS = frozenset(ox.Triple(*terms) for terms in product(SUBJECTS, PREDICATES, OBJECTS))
fact_sets = st.frozensets(st.sampled_from(sorted(ALL_FACTS, key=str)), max_size=3).map(
    lambda missing: ALL_FACTS - missing)
"""Most triples facts, so most references break by their shape alone or by the few missing."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(described=st.lists(statements, min_size=1, max_size=4), facts=fact_sets)
def test_the_rewritten_constraints_report_what_the_rule_and_the_earlier_queries_report(
    described: list[Statement], facts: frozenset[ox.Triple]
) -> None:
    store = store_of(described, facts)
    found = reported(store, scoped=False)
    assert found == expected(described, facts) == reported(store, scoped=True)
    fact_constraints = {value for name, value in found if name == "RetrievedEdgeIsAFact"}
    assert fact_constraints == {value for name, value in found if name == "ContainedTripleIsAFact"}
    assert fact_constraints == before(store)
