"""SHACL-SPARQL read from the shapes graph: `sh:sparql` constraints (§5) and SPARQL-based
constraint components (§6), as query text split where the focus nodes and $PATH go.

Where one query serves every focus node (prebinding.one_query_for_all), the compiler's template
joins the focus-node pattern at the start of the query's outermost group; otherwise the query
runs once per focus node with $this written in. Parameters and $currentShape are written in here.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.templates import Sparql, render_term
from tgsparql.rdf.terms import Term
from tgsparql.validation.errors import ShapesError
from tgsparql.validation.model import Shape, ShapesReader
from tgsparql.validation.prebinding import (
    one_query_for_all, refuse_forbidden, substitute, tokens, uses,
)

SH = vocab.SH
OWL_IMPORTS = ox.NamedNode("http://www.w3.org/2002/07/owl#imports")
_TOKEN = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|<[^<>\"{}|^`\\\x00-\x20]*>"
    r"|#[^\n]*"
    r"|[?$][A-Za-z0-9_\u00b7\u00c0-\uffff]+"
    r"|\{",
    re.DOTALL,
)
_PREFIX_NAME = re.compile(r"(?:[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9_-]|[A-Za-z])?")
SHAPES_GRAPH_REFUSED = (
    "$shapesGraph is not supported: this processor does not keep the shapes graph in the data's "
    "dataset, and SHACL §5.3.1 has processors without it report a failure"
)
CONSTRAINT_KEYS = frozenset({"select", "prefixes", "message", "deactivated"})


@dataclass(frozen=True)
class SparqlConstraint:
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

    def text(self, path: str) -> str:
        """The whole query with $PATH as `path` (plain text: adding markup would escape it)."""
        return str(self.head) + str(path).join(map(str, self.body))


def read_sparql_constraint(reader: ShapesReader, shape: Shape, node: Term) -> SparqlConstraint | None:
    """The constraint at `node`, or None when it is deactivated."""
    owner = shape.node
    if not isinstance(node, (ox.NamedNode, ox.BlankNode)):
        raise reader.fail(owner, "sh:sparql must be an IRI or a blank node")
    values: dict[str, list[Term]] = {}
    for predicate, obj in reader.about(node):
        if predicate.value.startswith(SH):
            local = predicate.value[len(SH):]
            if local not in CONSTRAINT_KEYS:
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
    text = bind_current_shape(selects[0].value, owner, where)
    refuse_forbidden(text, {"this"}, where)
    head, body = split_select(text, owner_name=_name(owner))
    if shape.path is None and len(body) > 1:
        raise reader.fail(owner, "$PATH in the sh:select of a node shape")
    return SparqlConstraint(node, prefixes, head, body, messages, one_query_for_all(text, {"this"}))


def bind_current_shape(text: str, shape: Term, where: str) -> str:
    """The query with $currentShape replaced by the shape; $shapesGraph refused (§5.3.1)."""
    if uses(text, "shapesGraph"):
        raise ShapesError(f"{where}: {SHAPES_GRAPH_REFUSED}")
    if not uses(text, "currentShape"):
        return text
    if not isinstance(shape, ox.NamedNode):
        raise ShapesError(f"{where}: $currentShape of a blank-node shape cannot be written in a query")
    return substitute(text, {"currentShape": f"<{shape.value}>"})


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


def split_select(text: str, owner_name: str = "a shape") -> tuple[Sparql, tuple[Sparql, ...]]:
    """(text up to and including the outermost `{`, the rest split at `$PATH`).

    Raises ShapesError for a query that is not a SELECT, does not project `$this`, or needs a
    pre-bound variable other than `$this` and `$PATH`.
    """
    opening: int | None = None
    cuts: list[tuple[int, int]] = []
    projects_this = False
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token == "{" and opening is None:
            opening = match.end()
        elif token[0] in "?$" and len(token) > 1:
            name = token[1:]
            if name == "PATH":
                if opening is None:
                    raise ShapesError(f"{owner_name}: $PATH before the WHERE clause")
                cuts.append((match.start(), match.end()))
            if name == "this" and opening is None:
                projects_this = True
    if opening is None:
        raise ShapesError(f"{owner_name}: sh:select has no WHERE clause")
    prologue = _strip_comments(text[: opening - 1])
    select = re.search(r"\bSELECT\b", prologue, re.IGNORECASE)
    if select is None or re.search(r"\b(ASK|CONSTRUCT|DESCRIBE)\b", prologue, re.IGNORECASE):
        raise ShapesError(f"{owner_name}: sh:select must be a SELECT query")
    if not projects_this and not re.search(r"\bSELECT\s+(DISTINCT\s+|REDUCED\s+)?\*", prologue, re.IGNORECASE):
        raise ShapesError(f"{owner_name}: sh:select must project $this")
    if "this" not in {m.group(0)[1:] for m in _TOKEN.finditer(text) if m.group(0)[0] in "?$"}:
        raise ShapesError(f"{owner_name}: sh:select does not use $this")
    parts: list[Sparql] = []
    start = opening
    for begin, end in cuts:
        parts.append(Sparql(text[start:begin]))
        start = end
    parts.append(Sparql(text[start:]))
    return Sparql(text[:opening]), tuple(parts)


def _strip_comments(text: str) -> str:
    """The text with comments blanked and strings emptied, so keywords are found only in code."""
    return _TOKEN.sub(lambda m: " " if m.group(0)[0] in "#\"'" else m.group(0), text)


def _name(node: Term) -> str:
    return f"shape <{node.value}>" if isinstance(node, ox.NamedNode) else "a blank-node shape"


RESERVED = frozenset({"this", "shapesGraph", "currentShape", "value", "PATH"})
VALIDATOR_KINDS = {"validator": True, "nodeValidator": False, "propertyValidator": False}
"""Each validator property, and whether its validators are ASK (else SELECT) queries (§6.2)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    """The variable the value is pre-bound to: the local name of its sh:path."""
    path: ox.NamedNode
    optional: bool


@dataclass(frozen=True)
class Component:
    """A SPARQL-based constraint component (SHACL §6) declared in the shapes graph."""

    node: ox.NamedNode
    parameters: tuple[Parameter, ...]
    validators: dict[str, Term]


def read_components(reader: ShapesReader) -> list[Component]:
    found = []
    kind = ox.NamedNode(SH + "ConstraintComponent")
    for node in reader.subjects(vocab.RDF_TYPE, kind):
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
    text = bind_current_shape(texts[0].value, shape.node, where)
    refuse_forbidden(text, {"this", *parameters, *(["value"] if ask else [])}, where)
    text = substitute(text, constants)
    messages = reader.messages(shape.node, reader.objects(node, ox.NamedNode(SH + "message")))
    prefixes = prefixes_of(reader, shape.node, reader.objects(node, ox.NamedNode(SH + "prefixes")))
    if ask:
        head, body = _split_ask(text, where)
        one_query = True
    else:
        head, body = split_select(text, owner_name=where)
        one_query = one_query_for_all(text, {"this"})
    if shape.path is None and len(body) > 1:
        raise ShapesError(f"{where}: $PATH in the validator of a node shape")
    return SparqlConstraint(
        node, prefixes, head, body, messages, one_query, component.node, ask,
        tuple(sorted(parameters.items())),
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
