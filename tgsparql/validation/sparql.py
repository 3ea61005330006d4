"""SHACL-SPARQL `sh:sparql` constraints: their SELECT text, split where the focus nodes go.

Pre-binding `$this` for every focus node in one query means joining the focus-node pattern at
the start of the query's outermost group. The text is only lexed (strings, IRIs and comments
skipped), never rewritten: the compiler's template places the focus pattern between the parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyoxigraph as ox

from tgsparql import vocab
from tgsparql.templates import Sparql, Term
from tgsparql.validation.errors import ShapesError

if TYPE_CHECKING:
    from tgsparql.validation.shapes import Shape, _Reader

SH = vocab.SH
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
UNSUPPORTED_BINDINGS = ("shapesGraph", "currentShape")
CONSTRAINT_KEYS = frozenset({"select", "prefixes", "message", "deactivated"})


@dataclass(frozen=True)
class SparqlConstraint:
    """An `sh:sparql` SELECT constraint; `body` is split at each `$PATH`."""

    node: ox.NamedNode | ox.BlankNode
    prefixes: tuple[tuple[Sparql, ox.NamedNode], ...]
    head: Sparql
    body: tuple[Sparql, ...]
    messages: tuple[ox.Literal, ...]


def read_sparql_constraint(reader: _Reader, shape: Shape, node: Term) -> SparqlConstraint | None:
    """The constraint at `node`, or None when it is deactivated."""
    owner = shape.node
    if not isinstance(node, (ox.NamedNode, ox.BlankNode)):
        raise reader.fail(owner, "sh:sparql must be an IRI or a blank node")
    values: dict[str, list[Term]] = {}
    for predicate, obj in reader.data.about(node):
        if predicate.value.startswith(SH):
            local = predicate.value[len(SH):]
            if local not in CONSTRAINT_KEYS:
                raise reader.fail(owner, f"sh:sparql with sh:{local} is not supported")
            values.setdefault(local, []).append(obj)
    if reader._boolean(owner, values.get("deactivated", []), "sh:deactivated"):
        return None
    selects = values.get("select", [])
    if len(selects) != 1 or not isinstance(selects[0], ox.Literal):
        raise reader.fail(owner, "sh:sparql needs exactly one sh:select literal")
    messages = reader._messages(owner, values.get("message", []))
    prefixes = _prefixes(reader, owner, values.get("prefixes", []))
    head, body = split_select(selects[0].value, owner_name=_name(owner))
    if shape.path is None and len(body) > 1:
        raise reader.fail(owner, "$PATH in the sh:select of a node shape")
    return SparqlConstraint(node, prefixes, head, body, messages)


def _prefixes(
    reader: _Reader, owner: Term, nodes: list[Term]
) -> tuple[tuple[Sparql, ox.NamedNode], ...]:
    declared: dict[str, ox.NamedNode] = {}
    for holder in nodes:
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
            if name in UNSUPPORTED_BINDINGS:
                raise ShapesError(f"{owner_name}: sh:select uses ${name}, which is not supported")
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
