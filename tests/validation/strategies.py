"""Hypothesis strategies for small data graphs and shapes graphs within the supported SHACL Core.

Both are drawn over one tiny vocabulary (a few nodes, predicates, classes and literals), so
targets hit, paths connect and constraints both pass and fail often. Shapes reference other
shapes only of lower depth: recursive shapes are outside SHACL 1.0's defined semantics.
`triple_terms=True` adds RDF 1.2 triple terms as data values and as `sh:in`/`sh:hasValue`
parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import count

import pyoxigraph as ox
from hypothesis import strategies as st

EX = "http://example.org/"
SH = "http://www.w3.org/ns/shacl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS_SUBCLASS = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#subClassOf")
RDF_TYPE = ox.NamedNode(RDF + "type")
RDF_FIRST = ox.NamedNode(RDF + "first")
RDF_REST = ox.NamedNode(RDF + "rest")
RDF_NIL = ox.NamedNode(RDF + "nil")


def ex(name: str) -> ox.NamedNode:
    return ox.NamedNode(EX + name)


def sh(name: str) -> ox.NamedNode:
    return ox.NamedNode(SH + name)


def xsd(name: str) -> ox.NamedNode:
    return ox.NamedNode(XSD + name)


def integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=xsd("integer"))


TRUE = ox.Literal("true", datatype=xsd("boolean"))
NODES = [ex(f"n{i}") for i in range(4)]
BLANKS = [ox.BlankNode(f"b{i}") for i in range(2)]
PREDICATES = [ex(f"p{i}") for i in range(3)]
CLASSES = [ex(f"C{i}") for i in range(3)]
LITERALS = [
    integer(0),
    integer(1),
    integer(3),
    ox.Literal("2.5", datatype=xsd("decimal")),
    ox.Literal("a"),
    ox.Literal("ab"),
    ox.Literal("Abc"),
    ox.Literal("a", language="en"),
    ox.Literal("b", language="en-GB"),
    ox.Literal("c", language="fr"),
    TRUE,
    ox.Literal("2024-01-01", datatype=xsd("date")),
]
DATATYPES = [
    xsd("integer"),
    xsd("decimal"),
    xsd("string"),
    xsd("boolean"),
    xsd("date"),
    ox.NamedNode(RDF + "langString"),
]
NODE_KINDS = [
    sh(kind)
    for kind in ("IRI", "BlankNode", "Literal", "BlankNodeOrIRI", "BlankNodeOrLiteral", "IRIOrLiteral")
]
SEVERITIES = [sh("Violation"), sh("Warning"), sh("Info")]

Triples = list[ox.Triple]


@dataclass(frozen=True)
class Case:
    """One generated validation problem, as the Turtle texts every engine is given."""

    data: str
    shapes: str

    def __repr__(self) -> str:
        return f"Case(\n--- shapes\n{self.shapes}\n--- data\n{self.data})"


def turtle(triples: Triples) -> str:
    prefixes = {"ex": EX, "sh": SH, "xsd": XSD, "rdf": RDF}
    return ox.serialize(triples, format=ox.RdfFormat.TURTLE, prefixes=prefixes).decode()


def rdf_list(items: list[ox.Term], out: Triples, fresh: Callable[[], ox.BlankNode]) -> ox.Term:
    head: ox.Term = RDF_NIL
    for item in reversed(items):
        cell = fresh()
        out += [ox.Triple(cell, RDF_FIRST, item), ox.Triple(cell, RDF_REST, head)]
        head = cell
    return head


def triple_terms() -> st.SearchStrategy[ox.Triple]:
    objects = st.sampled_from(NODES + LITERALS[:3])
    return st.builds(ox.Triple, st.sampled_from(NODES), st.sampled_from(PREDICATES), objects)


def values(with_triple_terms: bool) -> st.SearchStrategy[ox.Term]:
    plain = st.sampled_from(NODES + BLANKS + LITERALS)
    return st.one_of(plain, triple_terms()) if with_triple_terms else plain


@st.composite
def data_graphs(draw: st.DrawFn, with_triple_terms: bool = False) -> Triples:
    """Facts over the vocabulary, types on nodes and one optional subclass link."""
    subjects = st.sampled_from(NODES + BLANKS)
    facts = draw(
        st.lists(
            st.builds(ox.Triple, subjects, st.sampled_from(PREDICATES), values(with_triple_terms)),
            max_size=14,
        )
    )
    types = draw(
        st.lists(st.builds(ox.Triple, subjects, st.just(RDF_TYPE), st.sampled_from(CLASSES)), max_size=5)
    )
    if draw(st.booleans()):
        types.append(ox.Triple(CLASSES[1], RDFS_SUBCLASS, CLASSES[0]))
    return list(dict.fromkeys(facts + types))


class _ShapesBuilder:
    """Accumulates the triples of a shapes graph while shapes are drawn."""

    def __init__(self, draw: st.DrawFn, with_triple_terms: bool, without: frozenset[str]) -> None:
        self.draw = draw
        self.with_triple_terms = with_triple_terms
        self.without = without
        self.triples: Triples = []
        self._names = count()
        self._blanks = count()

    def fresh(self) -> ox.BlankNode:
        return ox.BlankNode(f"l{next(self._blanks)}")

    def name(self, kind: str) -> ox.NamedNode:
        return ex(f"{kind}{next(self._names)}")

    def add(self, subject: ox.Term, predicate: ox.NamedNode, obj: ox.Term) -> None:
        self.triples.append(ox.Triple(subject, predicate, obj))

    def path(self, depth: int = 0) -> ox.Term:
        """A predicate mostly, else one of the six SHACL path forms over predicates."""
        draw = self.draw
        kind = draw(
            st.sampled_from(["predicate"] * 4 + ["inverse", "sequence", "alternative", "star", "plus", "opt"])
            if depth == 0
            else st.just("predicate")
        )
        if kind == "predicate":
            return draw(st.sampled_from(PREDICATES))
        node = self.fresh()
        if kind in ("sequence", "alternative"):
            items = [self.path(depth + 1) for _ in range(2)]
            head = rdf_list(items, self.triples, self.fresh)
            if kind == "sequence":
                return head
            self.add(node, sh("alternativePath"), head)
            return node
        predicate = {"inverse": "inversePath", "star": "zeroOrMorePath", "plus": "oneOrMorePath"}
        self.add(node, sh(predicate.get(kind, "zeroOrOnePath")), self.path(depth + 1))
        return node

    def value(self) -> ox.Term:
        """A constraint parameter value: never a blank node, which would name nothing in data."""
        plain = st.sampled_from(NODES + LITERALS)
        return self.draw(st.one_of(plain, triple_terms()) if self.with_triple_terms else plain)

    def constraints(self, shape: ox.NamedNode, is_property: bool, depth: int, most: int) -> None:
        """Up to `most` constraints on the shape, each component at most once (SHACL allows one
        value per parameter of most components)."""
        kinds = [
            "class", "datatype", "nodeKind", "range", "length", "pattern", "languageIn",
            "pair", "in", "hasValue",
        ]
        if is_property:
            kinds += ["minCount", "maxCount", "uniqueLang", "order", "qualified"]
        if depth > 0:
            kinds += ["not", "and", "or", "xone", "node"]
        kinds = [kind for kind in kinds if kind not in self.without]
        chosen = self.draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=most, unique=True))
        for kind in chosen:
            self.constraint(shape, kind, depth)

    def constraint(self, shape: ox.NamedNode, kind: str, depth: int) -> None:
        draw = self.draw
        if kind == "class":
            self.add(shape, sh("class"), draw(st.sampled_from(CLASSES)))
        elif kind == "datatype":
            self.add(shape, sh("datatype"), draw(st.sampled_from(DATATYPES)))
        elif kind == "nodeKind":
            self.add(shape, sh("nodeKind"), draw(st.sampled_from(NODE_KINDS)))
        elif kind in ("minCount", "maxCount"):
            self.add(shape, sh(kind), integer(draw(st.integers(0, 2))))
        elif kind == "range":
            bound = draw(st.sampled_from(["minInclusive", "minExclusive", "maxInclusive", "maxExclusive"]))
            limits = [integer(1), LITERALS[3], LITERALS[-1]]
            if "string range" not in self.without:
                limits.append(LITERALS[4])
            limit = draw(st.sampled_from(limits))
            self.add(shape, sh(bound), limit)
        elif kind == "length":
            bound = draw(st.sampled_from(["minLength", "maxLength"]))
            self.add(shape, sh(bound), integer(draw(st.integers(0, 2))))
        elif kind == "pattern":
            self.add(shape, sh("pattern"), ox.Literal(draw(st.sampled_from(["^a", "b", "^A", "[0-9]"]))))
            if draw(st.booleans()):
                self.add(shape, sh("flags"), ox.Literal("i"))
        elif kind == "languageIn":
            tags = draw(st.lists(st.sampled_from(["en", "fr", "de"]), min_size=1, max_size=2, unique=True))
            self.add(shape, sh("languageIn"), rdf_list([ox.Literal(t) for t in tags], self.triples, self.fresh))
        elif kind == "uniqueLang":
            self.add(shape, sh("uniqueLang"), TRUE)
        elif kind == "pair":
            self.add(shape, sh(draw(st.sampled_from(["equals", "disjoint"]))), draw(st.sampled_from(PREDICATES)))
        elif kind == "order":
            self.add(shape, sh(draw(st.sampled_from(["lessThan", "lessThanOrEquals"]))), draw(st.sampled_from(PREDICATES)))
        elif kind == "in":
            members = [self.value() for _ in range(draw(st.integers(1, 3)))]
            self.add(shape, sh("in"), rdf_list(members, self.triples, self.fresh))
        elif kind == "hasValue":
            self.add(shape, sh("hasValue"), self.value())
        elif kind in ("and", "or", "xone"):
            members = [self.shape(depth - 1) for _ in range(draw(st.integers(1, 2)))]
            self.add(shape, sh(kind), rdf_list(members, self.triples, self.fresh))
        elif kind == "not":
            self.add(shape, sh(kind), self.shape(depth - 1))
        elif kind == "node":
            # §4.7.1: the values of sh:node are node shapes.
            self.add(shape, sh(kind), self.shape(depth - 1, node_only=True))
        else:
            self.add(shape, sh("qualifiedValueShape"), self.shape(depth - 1))
            bound = draw(st.sampled_from(["qualifiedMinCount", "qualifiedMaxCount"]))
            self.add(shape, sh(bound), integer(draw(st.integers(0, 2))))

    def shape(self, depth: int, node_only: bool = False) -> ox.NamedNode:
        """A target-less shape used by another: a node shape, or a property shape with a path."""
        is_property = not node_only and self.draw(st.booleans())
        shape = self.name("P" if is_property else "N")
        if is_property:
            self.add(shape, sh("path"), self.path())
        self.constraints(shape, is_property, depth, 2)
        return shape

    def target(self, shape: ox.NamedNode) -> None:
        kind = self.draw(st.sampled_from(["targetClass", "targetNode", "targetSubjectsOf", "targetObjectsOf"]))
        if kind == "targetClass":
            self.add(shape, sh(kind), self.draw(st.sampled_from(CLASSES)))
        elif kind == "targetNode":
            self.add(shape, sh(kind), self.draw(st.sampled_from(NODES + LITERALS[:2])))
        else:
            self.add(shape, sh(kind), self.draw(st.sampled_from(PREDICATES)))

    def top_shape(self) -> None:
        """A node shape with targets, and either its own constraints or property shapes."""
        draw = self.draw
        shape = self.name("S")
        self.add(shape, RDF_TYPE, sh("NodeShape"))
        for _ in range(draw(st.integers(1, 2))):
            self.target(shape)
        if draw(st.booleans()):
            self.add(shape, sh("severity"), draw(st.sampled_from(SEVERITIES)))
        depth = draw(st.integers(0, 2))
        if draw(st.booleans()):
            self.constraints(shape, False, depth, 2)
            return
        for _ in range(draw(st.integers(1, 2))):
            prop = self.name("P")
            self.add(shape, sh("property"), prop)
            self.add(prop, sh("path"), self.path())
            if draw(st.booleans()):
                self.add(prop, sh("severity"), draw(st.sampled_from(SEVERITIES)))
            self.constraints(prop, True, depth, 3)


@st.composite
def shapes_graphs(
    draw: st.DrawFn, with_triple_terms: bool = False, without: frozenset[str] = frozenset()
) -> Triples:
    """Shapes whose constraints are drawn from every supported kind except those `without`."""
    builder = _ShapesBuilder(draw, with_triple_terms, without)
    for _ in range(draw(st.integers(1, 2))):
        builder.top_shape()
    return builder.triples


@st.composite
def cases(
    draw: st.DrawFn, with_triple_terms: bool = False, without: frozenset[str] = frozenset()
) -> Case:
    """Data and shapes together; with triple terms, the data holds at least one."""
    data = draw(data_graphs(with_triple_terms))
    if with_triple_terms and not any(isinstance(t.object, ox.Triple) for t in data):
        data.append(ox.Triple(NODES[0], PREDICATES[0], draw(triple_terms())))
    return Case(turtle(data), turtle(draw(shapes_graphs(with_triple_terms, without))))
