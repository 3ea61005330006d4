"""Shapes as the validator sees them: typed shapes, their paths and constraints.

The reader (reader.py) builds them from a shapes graph that shapes.py loads; the parts of it
that read SHACL-SPARQL (sparql.py) reach the graph through `ShapesReader`, so that sparql.py
needs nothing of the reader's module and the two import in one direction.
"""

from __future__ import annotations

import itertools
from typing import Literal as TypingLiteral
from typing import NamedTuple, Protocol

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.terms import Term
from tgsparql.validation.errors import ShapesError

SH = vocab.SH
RDF_FIRST = ox.NamedNode(vocab.RDF + "first")
RDF_REST = ox.NamedNode(vocab.RDF + "rest")
RDF_NIL = ox.NamedNode(vocab.RDF + "nil")
VIOLATION = ox.NamedNode(SH + "Violation")


def sh(name: str) -> ox.NamedNode:
    return ox.NamedNode(SH + name)


PathKind = TypingLiteral[
    "predicate", "inverse", "sequence", "alternative", "zeroOrMore", "oneOrMore", "zeroOrOne"
]


class Path(NamedTuple):
    """A SHACL property path; `node` is its node in the shapes graph (copied into reports)."""

    kind: PathKind
    node: ox.NamedNode | ox.BlankNode
    items: tuple[Path, ...] = ()

    @property
    def iri(self) -> ox.NamedNode | None:
        return self.node if isinstance(self.node, ox.NamedNode) and self.kind == "predicate" else None

    @property
    def nullable(self) -> bool:
        """Whether the path reaches a node from itself in zero steps. The store finds those
        zero-length solutions only for nodes of the graph, while SHACL counts any focus node,
        so the compiled query adds them."""
        if self.kind in ("zeroOrMore", "zeroOrOne"):
            return True
        if self.kind == "sequence":
            return all(item.nullable for item in self.items)
        if self.kind in ("alternative", "inverse"):
            return any(item.nullable for item in self.items)
        return False

    def copy(self) -> tuple[ox.NamedNode | ox.BlankNode, list[ox.Triple]]:
        """The path as a fresh tree of blank nodes (a node shared in the shapes graph is copied
        at each use), as a report's sh:resultPath holds it."""
        if self.kind == "predicate":
            return self.node, []
        root = ox.BlankNode()
        out: list[ox.Triple] = []
        children = []
        for item in self.items:
            child, triples = item.copy()
            children.append(child)
            out += triples
        if self.kind in ("sequence", "alternative"):
            cells = [ox.BlankNode() for _ in children]
            if self.kind == "sequence":
                cells[0] = root
            else:
                out.append(ox.Triple(root, sh("alternativePath"), cells[0]))
            for index, (cell, child) in enumerate(zip(cells, children)):
                rest = cells[index + 1] if index + 1 < len(cells) else RDF_NIL
                out += [ox.Triple(cell, RDF_FIRST, child), ox.Triple(cell, RDF_REST, rest)]
        else:
            key = next(k for k, kind in PATH_KINDS.items() if kind == self.kind)
            out.append(ox.Triple(root, sh(key), children[0]))
        return root, out


class Constraint:
    """One use of a constraint component by a shape, with its parameter values.

    This class and Shape are written out rather than made dataclasses: generating a
    dataclass's methods costs every process that loads the validator about 0.5 ms a class,
    and `validate --session` loads it to check a handful of nodes."""

    def __init__(
        self, component: str, value: object = None, extra: dict[str, object] | None = None
    ) -> None:
        self.component = component
        """Local name of the component IRI without "ConstraintComponent", e.g. "MinCount"."""
        self.value = value
        """The main parameter: a term, an int, a string, a shape, or a tuple of these."""
        self.extra: dict[str, object] = {} if extra is None else extra

    def __repr__(self) -> str:
        return f"Constraint({self.component!r}, {self.value!r}, {self.extra!r})"

    @property
    def component_iri(self) -> ox.NamedNode:
        if self.component == "Sparql":  # the one component whose IRI is not its camel-case name
            return sh("SPARQLConstraintComponent")
        if self.component == "SparqlComponent":  # declared in the shapes graph (SHACL §6)
            return self.value.component  # type: ignore[attr-defined,no-any-return]
        return sh(self.component + "ConstraintComponent")


_SHAPE_KEYS = itertools.count()


class Shape:
    """A node or property shape (property shapes have a path); the reader fills it in."""

    def __init__(self, node: ox.NamedNode | ox.BlankNode, path: Path | None = None) -> None:
        self.node = node
        self.path = path
        self.targets: dict[str, tuple[Term, ...]] = {}
        self.constraints: list[Constraint] = []
        self.properties: list[Shape] = []
        self.parents: list[Shape] = []
        """Shapes that reach this one through `sh:property`: their value nodes are its focus
        nodes."""
        self.deactivated = False
        self.severity = VIOLATION
        self.messages: tuple[ox.Literal, ...] = ()
        self.label: str | None = None
        self.key = next(_SHAPE_KEYS)
        """This shape's identity (no two shapes read in one process share it), for stand-ins
        in query text: a field rather than the object's id, so a validator kept on disk
        (tgsparql.validation.cache) finds its shapes under the keys its query texts name."""

    def __repr__(self) -> str:
        return f"Shape({self.name!r}, key={self.key})"

    @property
    def name(self) -> str:
        """How people see the shape: its IRI, else its label, else the path it constrains."""
        if isinstance(self.node, ox.NamedNode):
            return self.node.value
        if self.label:
            return self.label
        if self.path is not None and self.path.iri is not None:
            return f"property {self.path.iri.value}"
        return "an anonymous shape"

    @property
    def target_pairs(self) -> list[tuple[str, Term]]:
        """(target kind, node) pairs in a stable order, one UNION branch each."""
        return [(kind, term) for kind in TARGETS for term in self.targets.get(kind, ())]

    @property
    def chain_depth(self) -> int:
        """How many sh:property steps the longest way from a target to this shape takes: the
        ancestors a query keeps apart to validate a focus node once per way; none for a shape
        reached one way only."""
        if self.reached_one_way:
            return 0
        return max((1 + p.chain_depth for p in self.parents if p.has_focus), default=0)

    @property
    def reached_one_way(self) -> bool:
        """Whether a focus node reaches this shape one way only: by its own targets, or as the
        focus node itself of the one node shape (itself reached one way) that has it as
        sh:property. Its queries then start from that node shape's focus nodes, with no
        ancestors to group by (each grouping key costs the engine on every focus node)."""
        parents = [p for p in self.parents if p.has_focus]
        if self.target_pairs:
            return not parents
        return len(parents) == 1 and parents[0].path is None and parents[0].reached_one_way

    @property
    def has_focus(self) -> bool:
        """Whether any focus node can reach it: targets, or an active shape with it as sh:property."""
        if self.deactivated:
            return False
        return bool(self.target_pairs) or any(p.has_focus for p in self.parents)


TARGETS = ("targetClass", "targetNode", "targetSubjectsOf", "targetObjectsOf")
PATH_KINDS: dict[str, PathKind] = {
    "inversePath": "inverse", "alternativePath": "alternative", "zeroOrMorePath": "zeroOrMore",
    "oneOrMorePath": "oneOrMore", "zeroOrOnePath": "zeroOrOne",
}


SHAPE_PROPERTIES = frozenset(
    {
        "path", "property", "deactivated", "severity", "message", "name", "description",
        "order", "group", "defaultValue", "sparql", *TARGETS,
        "class", "datatype", "nodeKind", "minCount", "maxCount", "minExclusive",
        "minInclusive", "maxExclusive", "maxInclusive", "minLength", "maxLength", "pattern",
        "flags", "languageIn", "uniqueLang", "equals", "disjoint", "lessThan",
        "lessThanOrEquals", "not", "and", "or", "xone", "node", "qualifiedValueShape",
        "qualifiedMinCount", "qualifiedMaxCount", "qualifiedValueShapesDisjoint", "closed",
        "ignoredProperties", "hasValue", "in",
    }
)
"""The `sh:` properties a shape may have."""


class ShapesReader(Protocol):
    """What reading one part of a shape needs of the shapes graph and its reader."""

    graph_name: ox.NamedNode
    """The name the shapes graph has in the data's dataset while validation runs ($shapesGraph)."""

    def about(self, subject: Term) -> list[tuple[ox.NamedNode, Term]]: ...

    def objects(self, subject: Term, predicate: ox.NamedNode) -> list[Term]: ...

    def subjects(self, predicate: ox.NamedNode, obj: Term | None) -> list[Term]: ...

    def instances(self, cls: ox.NamedNode) -> list[Term]: ...

    def instance_of(self, node: Term, cls: ox.NamedNode) -> bool: ...

    def is_shape(self, node: Term) -> bool: ...

    def fail(self, node: Term, feature: str) -> ShapesError: ...

    def boolean(self, node: Term, found: list[Term], what: str) -> bool: ...

    def messages(self, node: Term, found: list[Term]) -> tuple[ox.Literal, ...]: ...
