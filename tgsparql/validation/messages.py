"""Default result messages, written for the person reading a CI log."""

from __future__ import annotations

import pyoxigraph as ox

from tgsparql.store import Solution
from tgsparql.validation.report import show_term
from tgsparql.validation.shapes import Constraint, Path, Shape

_KIND = {
    "IRI": "an IRI", "BlankNode": "a blank node", "Literal": "a literal",
    "BlankNodeOrIRI": "a blank node or an IRI", "BlankNodeOrLiteral": "a blank node or a literal",
    "IRIOrLiteral": "an IRI or a literal",
}
_RANGE = {
    "MinExclusive": "greater than", "MinInclusive": "at least",
    "MaxExclusive": "less than", "MaxInclusive": "at most",
}


def show_path(path: Path | None) -> str:
    if path is None:
        return "value"
    if path.kind == "predicate":
        return show_term(path.node)
    inner = [show_path(item) for item in path.items]
    if path.kind == "inverse":
        return f"^{inner[0]}"
    if path.kind in ("sequence", "alternative"):
        return "(" + (" / " if path.kind == "sequence" else " | ").join(inner) + ")"
    return f"({inner[0]}){ {'zeroOrMore': '*', 'oneOrMore': '+', 'zeroOrOne': '?'}[path.kind] }"


def _subject(shape: Shape) -> str:
    """What the focus node is, in words: the local name of a target class when there is one."""
    for current in [shape, *shape.parents]:
        for cls in current.targets.get("targetClass", ()):
            name = cls.value  # type: ignore[union-attr]
            return name.rsplit("#", 1)[-1].rsplit("/", 1)[-1] or show_term(cls)
    return "Node"


def default_message(shape: Shape, constraint: Constraint, row: Solution) -> str:
    """A sentence naming the focus node, what is wrong and what was expected."""
    k = constraint.component
    c = constraint.value
    focus = f"{_subject(shape)} {show_term(row['this'])}"
    path = show_path(shape.path)
    value = show_term(row.get("value")) if "value" in row else ""
    if shape.path is None and row.get("value") == row["this"]:
        value = ""
    count = int(row["count"].value) if isinstance(row.get("count"), ox.Literal) else None
    if k == "MinCount":
        has = "no" if not count else f"only {count}"
        return f"{focus} has {has} {path} (at least {c} required)"
    if k == "MaxCount":
        return f"{focus} has {count} values of {path} (at most {c} allowed)"
    if k == "QualifiedMinCount":
        return (f"{focus} has {count or 'no'} values of {path} conforming to "
                f"{c.name} (at least {constraint.extra['count']} required)")  # type: ignore[union-attr]
    if k == "QualifiedMaxCount":
        return (f"{focus} has {count} values of {path} conforming to "
                f"{c.name} (at most {constraint.extra['count']} allowed)")  # type: ignore[union-attr]
    where = f"{focus}: {path}" if shape.path is not None else focus
    subject = f"{where} {value}".strip()
    if k == "Class":
        return f"{subject} is not an instance of {show_term(c)}"  # type: ignore[arg-type]
    if k == "Datatype":
        return f"{subject} is not a well-formed literal of type {show_term(c)}"  # type: ignore[arg-type]
    if k == "NodeKind":
        return f"{subject} is not {_KIND[c]}"  # type: ignore[index]
    if k in _RANGE:
        return f"{subject} is not {_RANGE[k]} {show_term(c)}"  # type: ignore[arg-type]
    if k == "MinLength":
        return f"{subject} is shorter than {c} characters"
    if k == "MaxLength":
        return f"{subject} is longer than {c} characters"
    if k == "Pattern":
        return f"{subject} does not match the pattern {c!r}"
    if k == "LanguageIn":
        return f"{subject} is not in one of the languages {', '.join(c)}"  # type: ignore[arg-type]
    if k == "UniqueLang":
        return f"{focus} has more than one {path} in language {show_term(row.get('lang'))}"
    if k == "Equals":
        return f"{subject} is not also a value of {show_term(c)}"  # type: ignore[arg-type]
    if k == "Disjoint":
        return f"{subject} is also a value of {show_term(c)}"  # type: ignore[arg-type]
    if k == "LessThan":
        return f"{subject} is not less than every value of {show_term(c)}"  # type: ignore[arg-type]
    if k == "LessThanOrEquals":
        return f"{subject} is greater than a value of {show_term(c)}"  # type: ignore[arg-type]
    if k == "Not":
        return f"{subject} conforms to {c.name}, which it must not"  # type: ignore[union-attr]
    if k == "And":
        return f"{subject} does not conform to all of {_names(c)}"
    if k == "Or":
        return f"{subject} conforms to none of {_names(c)}"
    if k == "Xone":
        return f"{subject} does not conform to exactly one of {_names(c)}"
    if k == "Node":
        return f"{subject} does not conform to {c.name}"  # type: ignore[union-attr]
    if k == "Closed":
        return f"{focus} has {show_term(row.get('path'))} {value}, a property the closed shape does not allow"
    if k == "HasValue":
        return f"{focus} lacks the required {path} {show_term(c)}"  # type: ignore[arg-type]
    if k == "In":
        return f"{subject} is not one of {', '.join(show_term(t) for t in c)}"  # type: ignore[union-attr]
    return f"{focus} fails the SPARQL constraint of {shape.name}" + (f" at {value}" if value else "")


def _names(shapes: object) -> str:
    return ", ".join(s.name for s in shapes)  # type: ignore[attr-defined]
