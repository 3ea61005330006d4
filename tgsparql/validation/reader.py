"""A shapes graph read into typed shapes, refusing whatever the validator cannot check.

Other engines skip what they do not understand and so pass data they never checked; here every
`sh:` term on a shape must be one the compiler turns into SPARQL, or construction fails.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.terms import Term
from tgsparql.validation.errors import ShapesError
from tgsparql.validation.model import (
    PATH_KINDS, RDF_FIRST, RDF_NIL, RDF_REST, SH, SHAPE_PROPERTIES, TARGETS, Constraint, Path,
    Shape, sh,
)
from tgsparql.validation.sparql import (
    CONSTRAINT_KEYS, component_constraints, read_components, read_sparql_constraint,
)

RDFS_CLASS = ox.NamedNode(vocab.RDFS + "Class")
RDFS_SUBCLASS = ox.NamedNode(vocab.RDFS + "subClassOf")
XSD_BOOLEAN = vocab.XSD_BOOLEAN
NODE_KINDS = frozenset(
    {"IRI", "BlankNode", "Literal", "BlankNodeOrIRI", "BlankNodeOrLiteral", "IRIOrLiteral"}
)
SIMPLE = {
    "class": "Class", "datatype": "Datatype", "nodeKind": "NodeKind", "minCount": "MinCount",
    "maxCount": "MaxCount", "minExclusive": "MinExclusive", "minInclusive": "MinInclusive",
    "maxExclusive": "MaxExclusive", "maxInclusive": "MaxInclusive", "minLength": "MinLength",
    "maxLength": "MaxLength", "languageIn": "LanguageIn", "equals": "Equals",
    "disjoint": "Disjoint", "lessThan": "LessThan", "lessThanOrEquals": "LessThanOrEquals",
    "not": "Not", "and": "And", "or": "Or", "xone": "Xone", "node": "Node",
    "hasValue": "HasValue", "in": "In",
}


def read_shapes(graph: ShapesGraph, origin: str) -> list[Shape]:
    """Every shape of the graph, IRIs first; ShapesError names the first thing not supported."""
    return Reader(graph, origin).read_all()


class ShapesGraph:
    """The shapes graph (all its named graphs merged), indexed the ways the reader looks."""

    def __init__(self, statements: Iterable[ox.Triple | ox.Quad]) -> None:
        self.by_subject: dict[Term, list[tuple[ox.NamedNode, Term]]] = {}
        self.by_predicate: dict[ox.NamedNode, list[tuple[Term, Term]]] = {}
        self.name = ox.NamedNode(f"urn:uuid:{uuid.uuid4()}")
        """The name the graph has in the data's dataset while a run needs it ($shapesGraph): one
        no store holds already."""
        self.triples: list[ox.Triple] = []
        seen: set[tuple[Term, Term, Term]] = set()
        for st in statements:
            key = (st.subject, st.predicate, st.object)
            if key in seen:
                continue
            seen.add(key)
            self.triples.append(ox.Triple(*key))
            self.by_subject.setdefault(st.subject, []).append((st.predicate, st.object))
            self.by_predicate.setdefault(st.predicate, []).append((st.subject, st.object))

    def about(self, subject: Term) -> list[tuple[ox.NamedNode, Term]]:
        return self.by_subject.get(subject, [])


class Reader:
    """Reads each shape once, following sh:property, sh:node and the logical constraints."""

    def __init__(self, graph: ShapesGraph, origin: str) -> None:
        self.data = graph
        self.origin = origin
        self.graph_name = graph.name
        self._subclasses: dict[Term, frozenset[Term]] = {}
        self.parsed: dict[Term, Shape] = {}
        self.in_progress: list[Term] = []
        self.components = read_components(self)

    # --- graph access ---------------------------------------------------------------------
    def about(self, subject: Term) -> list[tuple[ox.NamedNode, Term]]:
        return self.data.about(subject)

    def objects(self, subject: Term, predicate: ox.NamedNode) -> list[Term]:
        return sorted({o for p, o in self.data.about(subject) if p == predicate}, key=str)

    def subjects(self, predicate: ox.NamedNode, obj: Term | None) -> list[Term]:
        pairs = self.data.by_predicate.get(predicate, [])
        return sorted({s for s, o in pairs if obj is None or o == obj}, key=str)

    def has(self, subject: Term, predicate: ox.NamedNode, obj: Term) -> bool:
        return (predicate, obj) in self.data.about(subject)

    def subclasses(self, cls: Term) -> frozenset[Term]:
        """`cls` and its SHACL subclasses: rdfs:subClassOf* in the shapes graph, cycles and all
        (found once per class)."""
        if cls not in self._subclasses:
            found = {cls}
            pending = [cls]
            while pending:
                for sub in self.subjects(RDFS_SUBCLASS, pending.pop()):
                    if sub not in found:
                        found.add(sub)
                        pending.append(sub)
            self._subclasses[cls] = frozenset(found)
        return self._subclasses[cls]

    def instances(self, cls: ox.NamedNode) -> list[Term]:
        """The SHACL instances of `cls` in the shapes graph: rdf:type/rdfs:subClassOf*."""
        return sorted({s for c in self.subclasses(cls) for s in self.subjects(vocab.RDF_TYPE, c)},
                      key=str)

    def instance_of(self, node: Term, cls: ox.NamedNode) -> bool:
        classes = self.subclasses(cls)
        return any(t in classes for t in self.objects(node, vocab.RDF_TYPE))

    def is_shape(self, node: Term) -> bool:
        """Whether the node is read as a shape: one being read or read, or a SHACL instance of
        sh:NodeShape or sh:PropertyShape."""
        return node in self.parsed or node in self.in_progress or any(
            self.instance_of(node, sh(kind)) for kind in ("NodeShape", "PropertyShape"))

    def fail(self, node: Term, feature: str) -> ShapesError:
        return ShapesError(f"{self.origin}: shape {_show(node)}: {feature}")

    def list_items(self, owner: Term, head: Term, what: str) -> tuple[Term, ...]:
        return tuple(item for _, item in self.list_cells(owner, head, what))

    def list_cells(self, owner: Term, head: Term, what: str) -> list[tuple[ox.BlankNode, Term]]:
        items: list[tuple[ox.BlankNode, Term]] = []
        seen: set[Term] = set()
        while head != RDF_NIL:
            if not isinstance(head, ox.BlankNode) or head in seen:
                raise self.fail(owner, f"{what} is not a well-formed RDF list")
            seen.add(head)
            first, rest = self.objects(head, RDF_FIRST), self.objects(head, RDF_REST)
            if len(first) != 1 or len(rest) != 1:
                raise self.fail(owner, f"{what} is not a well-formed RDF list")
            items.append((head, first[0]))
            head = rest[0]
        return items

    # --- shapes ---------------------------------------------------------------------------
    def read_all(self) -> list[Shape]:
        roots: set[Term] = set()
        for kind in ("NodeShape", "PropertyShape"):
            roots.update(self.instances(sh(kind)))
        # A parameter declaration (sh:Parameter is a subclass of sh:PropertyShape) declares,
        # it does not constrain: it is read as a shape only if it has targets.
        roots -= {o for _, o in self.data.by_predicate.get(sh("parameter"), [])}
        for target in (*TARGETS, "target"):
            roots.update(self.subjects(sh(target), None))
        for node in sorted(roots, key=str):
            if isinstance(node, (ox.NamedNode, ox.BlankNode)):
                self.shape(node)
            else:
                raise self.fail(node, "a shape must be an IRI or a blank node")
        return sorted(self.parsed.values(), key=lambda s: (isinstance(s.node, ox.BlankNode), str(s.node)))

    def shape(self, node: Term) -> Shape:
        if node in self.in_progress:
            cycle = " -> ".join(_show(n) for n in [*self.in_progress[self.in_progress.index(node):], node])
            raise self.fail(node, f"recursive shape references are not supported ({cycle})")
        if node in self.parsed:
            return self.parsed[node]
        if not isinstance(node, (ox.NamedNode, ox.BlankNode)):
            raise ShapesError(f"{self.origin}: {_show(node)} is used as a shape but is a literal")
        self.in_progress.append(node)
        try:
            shape = self._read(node)
        finally:
            self.in_progress.pop()
        self.parsed[node] = shape
        return shape

    def _read(self, node: ox.NamedNode | ox.BlankNode) -> Shape:
        shape = Shape(node)
        values: dict[str, list[Term]] = {}
        own_constraint = bool(self.subjects(sh("sparql"), node))
        """Whether the shape is a SPARQL-based constraint too: its keys are read as such."""
        for predicate, obj in self.data.about(node):
            name = predicate.value
            if name.startswith(SH):
                local = name[len(SH):]
                if own_constraint and local in CONSTRAINT_KEYS - SHAPE_PROPERTIES:
                    continue
                if local not in SHAPE_PROPERTIES:
                    raise self.fail(node, f"sh:{local} is not supported")
                values.setdefault(local, []).append(obj)
            elif predicate == vocab.RDFS_LABEL and isinstance(obj, ox.Literal):
                shape.label = shape.label or obj.value
        for key in values:
            values[key] = sorted(set(values[key]), key=str)
        paths = values.pop("path", [])
        if len(paths) > 1:
            raise self.fail(node, "a property shape has exactly one sh:path")
        if paths:
            shape.path = self.path(node, paths[0], [])
        shape.deactivated = self.boolean(node, values.pop("deactivated", []), "sh:deactivated")
        severities = values.pop("severity", [])
        if len(severities) > 1 or any(not isinstance(s, ox.NamedNode) for s in severities):
            raise self.fail(node, "sh:severity must be one IRI")
        if severities:
            shape.severity = severities[0]  # type: ignore[assignment]
        shape.messages = self.messages(node, values.pop("message", []))
        for key in ("name", "description", "order", "group", "defaultValue"):
            values.pop(key, None)
        self._targets(shape, values)
        self._constraints(shape, values)
        return shape

    def boolean(self, node: Term, found: list[Term], what: str) -> bool:
        if not found:
            return False
        if len(found) > 1 or not isinstance(found[0], ox.Literal) or found[0].datatype != XSD_BOOLEAN:
            raise self.fail(node, f"{what} must be one xsd:boolean")
        return found[0].value in ("true", "1")

    def messages(self, node: Term, found: list[Term]) -> tuple[ox.Literal, ...]:
        if any(not isinstance(m, ox.Literal) for m in found):
            raise self.fail(node, "sh:message must be literals")
        return tuple(found)  # type: ignore[arg-type]

    def _targets(self, shape: Shape, values: dict[str, list[Term]]) -> None:
        if "target" in values:
            raise self.fail(shape.node, "sh:target (SHACL-AF custom targets) is not supported")
        for target in TARGETS:
            found = tuple(values.pop(target, []))
            if target != "targetNode" and any(not isinstance(t, ox.NamedNode) for t in found):
                raise self.fail(shape.node, f"sh:{target} must be an IRI")
            if any(isinstance(t, ox.BlankNode) for t in found):
                raise self.fail(shape.node, f"sh:{target} with a blank node cannot be queried")
            if found:
                shape.targets[target] = found
        for kind in ("NodeShape", "PropertyShape"):
            if self.instance_of(shape.node, RDFS_CLASS) and self.instance_of(shape.node, sh(kind)):
                if isinstance(shape.node, ox.BlankNode):
                    raise self.fail(shape.node, "an implicit class target on a blank node")
                shape.targets["targetClass"] = tuple(
                    sorted({*shape.targets.get("targetClass", ()), shape.node}, key=str)
                )

    def path(self, owner: Term, node: Term, seen: list[Term]) -> Path:
        if isinstance(node, ox.NamedNode):
            return Path("predicate", node)
        if not isinstance(node, ox.BlankNode) or node in seen:
            raise self.fail(owner, f"ill-formed sh:path {_show(node)}")
        seen = [*seen, node]
        if self.objects(node, RDF_FIRST):
            cells = self.list_cells(owner, node, "a sequence path")
            if len(cells) < 2:
                raise self.fail(owner, "a sequence path needs at least two members")
            return Path("sequence", node, tuple(self.path(owner, i, seen) for _, i in cells))
        found = [(k, o) for k, kind in PATH_KINDS.items() for o in self.objects(node, sh(k))]
        if len(found) != 1:
            raise self.fail(owner, f"ill-formed sh:path {_show(node)}")
        key, value = found[0]
        kind = PATH_KINDS[key]
        if kind == "alternative":
            cells = self.list_cells(owner, value, "an alternative path")
            if len(cells) < 2:
                raise self.fail(owner, "an alternative path needs at least two members")
            return Path(kind, node, tuple(self.path(owner, i, seen) for _, i in cells))
        return Path(kind, node, (self.path(owner, value, seen),))

    def _constraints(self, shape: Shape, values: dict[str, list[Term]]) -> None:
        node = shape.node
        add = shape.constraints.append
        for key in sorted(values):
            if key in SIMPLE:
                for value in values[key]:
                    parameter = self._parameter(shape, key, value)
                    add(Constraint(SIMPLE[key], parameter, _extra(key, parameter)))
        for value in values.get("property", []):
            child = self.shape(value)
            if child.path is None:
                raise self.fail(node, f"sh:property value {_show(value)} has no sh:path")
            shape.properties.append(child)
            child.parents.append(shape)
        for pattern in values.get("pattern", []):
            flags = values.get("flags", [])
            if not isinstance(pattern, ox.Literal) or len(flags) > 1 or any(
                not isinstance(f, ox.Literal) for f in flags
            ):
                raise self.fail(node, "sh:pattern and sh:flags must be single literals")
            _check_regex(self, node, pattern.value, flags[0].value if flags else "")
            add(Constraint("Pattern", pattern.value, {"flags": flags[0].value if flags else ""}))
        if "flags" in values and "pattern" not in values:
            raise self.fail(node, "sh:flags without sh:pattern")
        for value in values.get("uniqueLang", []):
            self.boolean(node, [value], "sh:uniqueLang")
            if value == ox.Literal(True):  # only `true` activates it; "1" is another term
                add(Constraint("UniqueLang", True))
        self._qualified(shape, values)
        self._closed(shape, values)
        for value in values.get("sparql", []):
            constraint = read_sparql_constraint(self, shape, value)
            if constraint is not None:
                add(Constraint("Sparql", constraint))
        for component in self.components:
            for query in component_constraints(self, shape, component):
                add(Constraint("SparqlComponent", query))

    def _parameter(self, shape: Shape, key: str, value: Term) -> object:
        node = shape.node
        if key in ("minCount", "maxCount", "minLength", "maxLength"):
            if not isinstance(value, ox.Literal) or not re.fullmatch(r"\+?\d+", value.value):
                raise self.fail(node, f"sh:{key} must be a non-negative integer")
            return int(value.value)
        if key in ("class", "datatype", "equals", "disjoint", "lessThan", "lessThanOrEquals"):
            if not isinstance(value, ox.NamedNode):
                raise self.fail(node, f"sh:{key} must be an IRI, not {_show(value)}")
            return value
        if key == "nodeKind":
            if not isinstance(value, ox.NamedNode) or value.value[len(SH):] not in NODE_KINDS or not value.value.startswith(SH):
                raise self.fail(node, f"sh:nodeKind {_show(value)} is not a SHACL node kind")
            return value.value[len(SH):]
        if key in ("minExclusive", "minInclusive", "maxExclusive", "maxInclusive"):
            if not isinstance(value, ox.Literal):
                raise self.fail(node, f"sh:{key} must be a literal")
            return value
        if key == "languageIn":
            items = self.list_items(node, value, "sh:languageIn")
            if any(not isinstance(i, ox.Literal) for i in items):
                raise self.fail(node, "sh:languageIn members must be literals")
            return tuple(i.value for i in items)  # type: ignore[union-attr]
        if key in ("not", "node"):
            return self.shape(value)
        if key in ("and", "or", "xone"):
            return tuple(self.shape(i) for i in self.list_items(node, value, f"sh:{key}"))
        if key == "hasValue":
            return _constant(self, node, value, "sh:hasValue")
        if key == "in":
            items = self.list_items(node, value, "sh:in")
            return tuple(_constant(self, node, i, "sh:in") for i in items)
        raise self.fail(node, f"sh:{key} is not supported")  # pragma: no cover

    def _qualified(self, shape: Shape, values: dict[str, list[Term]]) -> None:
        node = shape.node
        qualified = values.get("qualifiedValueShape", [])
        mins = [self._parameter(shape, "minCount", v) for v in values.get("qualifiedMinCount", [])]
        maxs = [self._parameter(shape, "maxCount", v) for v in values.get("qualifiedMaxCount", [])]
        disjoint = self.boolean(node, values.get("qualifiedValueShapesDisjoint", []), "sh:qualifiedValueShapesDisjoint")
        if not qualified:  # the counts alone declare no constraint (the shape is mandatory)
            return
        if len(mins) > 1 or len(maxs) > 1 or not (mins or maxs):
            raise self.fail(node, "sh:qualifiedValueShape needs one sh:qualifiedMinCount and/or sh:qualifiedMaxCount")
        siblings: list[Shape] = []
        if disjoint:
            for parent in self.subjects(sh("property"), node):
                for other in self.objects(parent, sh("property")):
                    for sibling in self.objects(other, sh("qualifiedValueShape")):
                        if sibling not in qualified:
                            siblings.append(self.shape(sibling))
        for value in qualified:
            q = self.shape(value)
            extra = {"siblings": tuple(siblings)}
            if mins:
                shape.constraints.append(Constraint("QualifiedMinCount", q, {**extra, "count": mins[0]}))
            if maxs:
                shape.constraints.append(Constraint("QualifiedMaxCount", q, {**extra, "count": maxs[0]}))

    def _closed(self, shape: Shape, values: dict[str, list[Term]]) -> None:
        node = shape.node
        closed = self.boolean(node, values.get("closed", []), "sh:closed")
        ignored: list[Term] = []
        for value in values.get("ignoredProperties", []):
            ignored.extend(self.list_items(node, value, "sh:ignoredProperties"))
        if any(not isinstance(i, ox.NamedNode) for i in ignored):
            raise self.fail(node, "sh:ignoredProperties members must be IRIs")
        if not closed:
            return
        allowed: set[Term] = set()
        for value in values.get("property", []):
            for path in self.objects(value, sh("path")):
                if isinstance(path, ox.NamedNode):
                    allowed.add(path)
        shape.constraints.append(
            Constraint("Closed", tuple(sorted({*allowed, *ignored}, key=str)))  # type: ignore[arg-type]
        )


XSD = vocab.XSD
_INTEGER_RANGES: dict[str, tuple[int | None, int | None]] = {
    "integer": (None, None), "long": (-(2**63), 2**63 - 1), "int": (-(2**31), 2**31 - 1),
    "short": (-(2**15), 2**15 - 1), "byte": (-128, 127), "nonNegativeInteger": (0, None),
    "positiveInteger": (1, None), "nonPositiveInteger": (None, 0), "negativeInteger": (None, -1),
    "unsignedLong": (0, 2**64 - 1), "unsignedInt": (0, 2**32 - 1),
    "unsignedShort": (0, 2**16 - 1), "unsignedByte": (0, 255),
}
_INTEGER_LEXICAL = "^[+-]?[0-9]+$"
_CASTABLE = ("boolean", "decimal", "float", "double", "dateTime", "date", "time", "duration",
             "dayTimeDuration", "yearMonthDuration")


def datatype_check(datatype: ox.NamedNode) -> dict[str, object] | None:
    """How SPARQL tells a well-formed literal of `datatype`: the cast that fails on ill-formed
    lexical forms, with the value range of derived integer types and the lexical space the cast
    is tried on (integers: digits; a cast some engines cannot make fails their whole query);
    None when there is no cast."""
    if not datatype.value.startswith(XSD):
        return None
    local = datatype.value[len(XSD):]
    if local in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[local]
        return {"cast": ox.NamedNode(XSD + "integer"), "minimum": low, "maximum": high,
                "lexical": _INTEGER_LEXICAL}
    if local in _CASTABLE:
        return {"cast": datatype, "minimum": None, "maximum": None, "lexical": None}
    return None


_NUMERIC = frozenset({*_INTEGER_RANGES, "decimal", "float", "double"})


def _is_numeric(term: object) -> bool:
    """A literal of an XSD numeric datatype: only numbers compare with it."""
    return (isinstance(term, ox.Literal) and term.datatype.value.startswith(XSD)
            and term.datatype.value[len(XSD):] in _NUMERIC)


def _extra(key: str, parameter: object) -> dict[str, object]:
    if key == "datatype":
        return {"check": datatype_check(parameter)}  # type: ignore[arg-type]
    if key == "nodeKind":
        return {"kinds": [k for k in ("IRI", "BlankNode", "Literal") if k in str(parameter)]}
    if key in ("minExclusive", "minInclusive", "maxExclusive", "maxInclusive"):
        return {"numeric": _is_numeric(parameter)}
    return {}


def _constant(reader: Reader, node: Term, value: Term, what: str) -> Term:
    """A term the query text can hold: blank nodes have no name outside their own graph."""
    if isinstance(value, ox.BlankNode) or (
        isinstance(value, ox.Triple) and any(isinstance(t, ox.BlankNode) for t in _leaves(value))
    ):
        raise reader.fail(node, f"{what} with a blank node cannot be queried")
    return value


def _leaves(triple: ox.Triple) -> Iterator[Term]:
    for term in (triple.subject, triple.predicate, triple.object):
        if isinstance(term, ox.Triple):
            yield from _leaves(term)
        else:
            yield term


def _check_regex(reader: Reader, node: Term, pattern: str, flags: str) -> None:
    if not re.fullmatch(r"[smixq]*", flags):
        raise reader.fail(node, f"unsupported sh:flags {flags!r}")
    try:
        re.compile(pattern)
    except re.error as error:
        raise reader.fail(node, f"invalid sh:pattern {pattern!r}: {error}") from None


def _show(term: Term) -> str:
    if isinstance(term, ox.NamedNode):
        return f"<{term.value}>"
    if isinstance(term, ox.BlankNode):
        return "a blank node"
    return str(term)
