"""SHACL-SPARQL read from the shapes graph: `sh:sparql` constraints (§5) and SPARQL-based
constraint components (§6), as query text split where the focus nodes and $PATH go.

Where one query serves every focus node (prebinding.one_query_for_all), the compiler's template
joins the focus-node pattern at the start of the query's outermost group; otherwise the query
runs once per focus node with $this pre-bound (prebinding.insert_values). Parameters,
$currentShape and $shapesGraph are pre-bound here: the same for every focus node.
"""

from __future__ import annotations

import itertools
import re
from typing import NamedTuple

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.templates import Sparql, render_term
from tgsparql.rdf.terms import Term
from tgsparql.validation.errors import ShapesError
from tgsparql.validation.model import SHAPE_PROPERTIES, Shape, ShapesReader
from tgsparql.validation.prebinding import (
    insert_values, one_query_for_all, projects, refuse_forbidden, tokens, uses,
)

SH = vocab.SH
OWL_IMPORTS = ox.NamedNode("http://www.w3.org/2002/07/owl#imports")
_PREFIX_NAME = re.compile(r"(?:[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9_-]|[A-Za-z])?")
CONSTRAINT_KEYS = frozenset({"select", "prefixes", "message", "deactivated"})
CONTEXT = ("this", "shapesGraph", "currentShape")
"""The variables every SHACL-SPARQL query may have pre-bound (§5.3.1)."""


class SparqlConstraint(NamedTuple):
    """An `sh:sparql` SELECT constraint, or a SPARQL-based constraint component's validator as a
    shape uses it (parameters already in the text); `body` is split at each `$PATH`."""

    node: ox.NamedNode | ox.BlankNode
    prefixes: tuple[tuple[Sparql, ox.NamedNode], ...]
    head: Sparql
    body: tuple[Sparql, ...]
    messages: tuple[ox.Literal, ...]
    one_query: bool = True
    """Whether one query serves every focus node (see prebinding.one_query_for_all); else the
    query runs once per focus node, with $this replaced by it."""
    component: ox.NamedNode | None = None
    ask: bool = False
    parameters: tuple[tuple[str, Term], ...] = ()
    shapes_graph: bool = False
    """Whether the query reads $shapesGraph: the run needs the shapes graph in the dataset."""

    def text(self, path: str) -> str:
        """The whole query with $PATH as `path` (plain text: adding markup would escape it)."""
        return str(self.head) + str(path).join(map(str, self.body))


def read_sparql_constraint(reader: ShapesReader, shape: Shape, node: Term) -> SparqlConstraint | None:
    """The constraint at `node`, or None when it is deactivated. The node may be a shape too
    (its own constraint, even): its shape properties are the shape's, read as such."""
    owner = shape.node
    if not isinstance(node, (ox.NamedNode, ox.BlankNode)):
        raise reader.fail(owner, "sh:sparql must be an IRI or a blank node")
    also_shape = reader.is_shape(node)
    values: dict[str, list[Term]] = {}
    for predicate, obj in reader.about(node):
        if predicate.value.startswith(SH):
            local = predicate.value[len(SH):]
            if local not in CONSTRAINT_KEYS and not (also_shape and local in SHAPE_PROPERTIES):
                raise reader.fail(owner, f"sh:sparql with sh:{local} is not supported")
            values.setdefault(local, []).append(obj)
    if reader.boolean(owner, values.get("deactivated", []), "sh:deactivated"):
        return None
    selects = values.get("select", [])
    if len(selects) != 1 or not isinstance(selects[0], ox.Literal):
        raise reader.fail(owner, "sh:sparql needs exactly one sh:select literal")
    messages = reader.messages(owner, values.get("message", []))
    prefixes = prefixes_of(reader, owner, values.get("prefixes", []))
    where = f"{_name(owner)}: sh:sparql"
    text = selects[0].value
    refuse_forbidden(text, CONTEXT, where)
    if not projects(text, "this"):
        raise ShapesError(f"{where}: sh:select must project $this (SHACL §5.2)")
    one_query = one_query_for_all(text, {"this"})
    head, body = split_select(insert_values(text, context(reader, text, owner, where)), where)
    if shape.path is None and len(body) > 1:
        raise reader.fail(owner, "$PATH in the sh:select of a node shape")
    return SparqlConstraint(node, prefixes, head, body, messages, one_query,
                            shapes_graph=uses(text, "shapesGraph"))


def context(reader: ShapesReader, text: str, shape: Term, where: str) -> dict[str, str]:
    """The values of $currentShape and $shapesGraph, for those the query uses (§5.3.1): the
    shape, and the name the shapes graph has in the data's dataset while validation runs."""
    values = {}
    if uses(text, "currentShape"):
        if not isinstance(shape, ox.NamedNode):
            raise ShapesError(f"{where}: $currentShape of a blank-node shape cannot be pre-bound "
                              "in a query (a query's text cannot name a blank node)")
        values["currentShape"] = render_term(shape, "rdf12")
    if uses(text, "shapesGraph"):
        values["shapesGraph"] = render_term(reader.graph_name, "rdf12")
    return values


def prefixes_of(
    reader: ShapesReader, owner: Term, nodes: list[Term]
) -> tuple[tuple[Sparql, ox.NamedNode], ...]:
    """The prefixes declared (sh:declare) by each sh:prefixes value and what it owl:imports."""
    declared: dict[str, ox.NamedNode] = {}
    holders: list[Term] = []
    pending = list(nodes)
    while pending:
        holder = pending.pop()
        if holder not in holders:
            holders.append(holder)
            pending += reader.objects(holder, OWL_IMPORTS)
    for holder in holders:
        for declaration in reader.objects(holder, ox.NamedNode(SH + "declare")):
            names = reader.objects(declaration, ox.NamedNode(SH + "prefix"))
            spaces = reader.objects(declaration, ox.NamedNode(SH + "namespace"))
            if len(names) != 1 or len(spaces) != 1 or not all(
                isinstance(t, ox.Literal) for t in (*names, *spaces)
            ):
                raise reader.fail(owner, "sh:declare needs one sh:prefix and one sh:namespace")
            name, space = names[0].value, spaces[0].value  # type: ignore[union-attr]
            if not _PREFIX_NAME.fullmatch(name):
                raise reader.fail(owner, f"invalid prefix name {name!r} in sh:declare")
            try:
                iri = ox.NamedNode(space)
            except ValueError:
                raise reader.fail(owner, f"invalid namespace {space!r} in sh:declare") from None
            if declared.get(name, iri) != iri:
                raise reader.fail(owner, f"prefix {name!r} is declared twice differently")
            declared[name] = iri
    return tuple((Sparql(name), iri) for name, iri in sorted(declared.items()))


def split_select(text: str, where: str) -> tuple[Sparql, tuple[Sparql, ...]]:
    """(text up to and including the outermost `{`, the rest split at `$PATH`); ShapesError for
    a query that is not a SELECT, or has $PATH before its WHERE clause."""
    found = tokens(text)
    opening = next((t for t in found if t.text == "{"), None)
    if opening is None:
        raise ShapesError(f"{where}: sh:select has no WHERE clause")
    forms = [t.word for t in found if t.word in ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")]
    if not forms or forms[0] != "SELECT":
        raise ShapesError(f"{where}: sh:select must be a SELECT query")
    parts: list[Sparql] = []
    start = opening.end
    for token in found:
        if token.variable == "PATH":
            if token.start < opening.start:
                raise ShapesError(f"{where}: $PATH before the WHERE clause")
            parts.append(Sparql(text[start:token.start]))
            start = token.end
    parts.append(Sparql(text[start:]))
    return Sparql(text[:opening.end]), tuple(parts)


def _name(node: Term) -> str:
    return f"shape <{node.value}>" if isinstance(node, ox.NamedNode) else "a blank-node shape"


RESERVED = frozenset({"this", "shapesGraph", "currentShape", "path", "PATH", "value"})
"""Names no parameter may have (§6.1.1)."""
VALIDATOR_KINDS = {"validator": True, "nodeValidator": False, "propertyValidator": False}
"""Each validator property, and whether its validators are ASK (else SELECT) queries (§6.2)."""
VALIDATOR_CLASSES = {True: "SPARQLAskValidator", False: "SPARQLSelectValidator"}


class Parameter(NamedTuple):
    name: str
    """The variable the value is pre-bound to: the local name of its sh:path."""
    path: ox.NamedNode
    optional: bool


class Component(NamedTuple):
    """A SPARQL-based constraint component (SHACL §6) declared in the shapes graph."""

    node: ox.NamedNode
    parameters: tuple[Parameter, ...]
    validators: dict[str, Term]


def read_components(reader: ShapesReader) -> list[Component]:
    """Every SPARQL-based constraint component: each SHACL instance of sh:ConstraintComponent
    (its type, or a subclass of it through rdfs:subClassOf in the shapes graph)."""
    found = []
    for node in reader.instances(ox.NamedNode(SH + "ConstraintComponent")):
        if not isinstance(node, ox.NamedNode):
            raise reader.fail(node, "a constraint component must be an IRI")
        parameters = []
        for declaration in reader.objects(node, ox.NamedNode(SH + "parameter")):
            paths = reader.objects(declaration, ox.NamedNode(SH + "path"))
            if len(paths) != 1 or not isinstance(paths[0], ox.NamedNode):
                raise reader.fail(node, "each sh:parameter needs one sh:path IRI")
            name = re.split(r"[#/:]", paths[0].value)[-1]
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in RESERVED:
                raise reader.fail(node, f"the parameter {paths[0].value} has no usable variable "
                                        f"name (its local name {name!r})")
            optional = reader.boolean(
                node, reader.objects(declaration, ox.NamedNode(SH + "optional")), "sh:optional")
            parameters.append(Parameter(name, paths[0], optional))
        if not parameters:
            raise reader.fail(node, "a constraint component needs at least one sh:parameter")
        validators = {}
        for key in VALIDATOR_KINDS:
            values = reader.objects(node, ox.NamedNode(SH + key))
            if len(values) > 1:
                raise reader.fail(node, f"more than one sh:{key}")
            if values:
                validators[key] = values[0]
        found.append(Component(node, tuple(parameters), validators))
    return found


def component_constraints(
    reader: ShapesReader, shape: Shape, component: Component
) -> list[SparqlConstraint]:
    """One constraint per combination of the shape's parameter values; none when a mandatory
    parameter has no value or no validator fits the kind of shape (both ignored, §6.2)."""
    values: list[list[tuple[str, Term]]] = []
    for parameter in component.parameters:
        found = reader.objects(shape.node, parameter.path)
        if not found and not parameter.optional:
            return []
        if found:
            values.append([(parameter.name, value) for value in found])
    key = "nodeValidator" if shape.path is None else "propertyValidator"
    key = key if key in component.validators else "validator"
    if key not in component.validators:
        return []
    return [
        _validator(reader, shape, component, key, dict(combination))
        for combination in itertools.product(*values)
    ]


def _validator(
    reader: ShapesReader, shape: Shape, component: Component, key: str, parameters: dict[str, Term]
) -> SparqlConstraint:
    node = component.validators[key]
    where = f"{_name(shape.node)}: validator of <{component.node.value}>"
    ask = VALIDATOR_KINDS[key]
    kind = ox.NamedNode(SH + VALIDATOR_CLASSES[ask])
    if reader.objects(node, vocab.RDF_TYPE) and not reader.instance_of(node, kind):
        raise ShapesError(f"{where}: the value of sh:{key} is typed, but not as a SHACL instance "
                          f"of sh:{VALIDATOR_CLASSES[ask]} (SHACL §6.2)")
    texts = reader.objects(node, ox.NamedNode(SH + ("ask" if ask else "select")))
    if len(texts) != 1 or not isinstance(texts[0], ox.Literal):
        query = "sh:ask" if ask else "sh:select"
        raise ShapesError(f"{where}: sh:{key} needs exactly one {query} literal")
    constants = {}
    for name, value in parameters.items():
        if not isinstance(value, (ox.NamedNode, ox.Literal)):
            raise ShapesError(f"{where}: the value of ${name} is not an IRI or a literal, so it "
                              "cannot be pre-bound in a query")
        constants[name] = render_term(value, "rdf12")
    text = texts[0].value
    names = [parameter.name for parameter in component.parameters]
    refuse_forbidden(text, {*CONTEXT, *names, *(["value"] if ask else [])}, where)
    if not ask and not projects(text, "this"):
        raise ShapesError(f"{where}: sh:select must project $this (SHACL §6.2.2)")
    one_query = ask or one_query_for_all(text, {"this"})
    bound = insert_values(text, {**context(reader, text, shape.node, where), **constants})
    messages = reader.messages(shape.node, reader.objects(node, ox.NamedNode(SH + "message")))
    prefixes = prefixes_of(reader, shape.node, reader.objects(node, ox.NamedNode(SH + "prefixes")))
    head, body = _split_ask(bound, where) if ask else split_select(bound, where)
    if shape.path is None and len(body) > 1:
        raise ShapesError(f"{where}: $PATH in the validator of a node shape")
    return SparqlConstraint(
        node, prefixes, head, body, messages, one_query, component.node, ask,
        tuple(sorted(parameters.items())), uses(text, "shapesGraph"),
    )


def _split_ask(text: str, where: str) -> tuple[Sparql, tuple[Sparql, ...]]:
    """(the prologue, the WHERE group split at `$PATH`); solution modifiers are dropped."""
    found = tokens(text)
    ask = next((i for i, t in enumerate(found) if t.word == "ASK"), None)
    if ask is None or any(t.word in ("SELECT", "CONSTRUCT", "DESCRIBE") for t in found[:ask]):
        raise ShapesError(f"{where}: sh:ask must be an ASK query")
    depth, opening, closing = 0, None, None
    for token in found[ask:]:
        if token.text == "{":
            opening = token.start if opening is None else opening
            depth += 1
        elif token.text == "}":
            depth -= 1
            if depth == 0:
                closing = token.end
                break
    if opening is None or closing is None:
        raise ShapesError(f"{where}: sh:ask has no complete WHERE clause")
    parts, start = [], opening
    for token in found:
        if opening < token.start < closing and token.variable == "PATH":
            parts.append(Sparql(text[start:token.start]))
            start = token.end
    parts.append(Sparql(text[start:closing]))
    return Sparql(text[: found[ask].start]), tuple(parts)
