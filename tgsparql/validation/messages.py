"""Default result messages, written for the person reading a CI log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from tgsparql.stores.store import Solution
from tgsparql.validation.model import Constraint, Path, Shape
from tgsparql.validation.report import show_term

_KIND = {
    "IRI": "an IRI", "BlankNode": "a blank node", "Literal": "a literal",
    "BlankNodeOrIRI": "a blank node or an IRI", "BlankNodeOrLiteral": "a blank node or a literal",
    "IRIOrLiteral": "an IRI or a literal",
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


@dataclass(frozen=True)
class _Words:
    """What a message says of one result, each part worked out only when its sentence uses it."""

    shape: Shape
    constraint: Constraint
    row: Solution

    @property
    def c(self) -> Any:
        """The constraint's main parameter, as the shapes graph gave it."""
        return self.constraint.value

    @property
    def focus(self) -> str:
        return f"{_subject(self.shape)} {show_term(self.row['this'])}"

    @property
    def path(self) -> str:
        return show_path(self.shape.path)

    @property
    def value(self) -> str:
        if "value" not in self.row or (self.shape.path is None
                                       and self.row.get("value") == self.row["this"]):
            return ""
        return show_term(self.row.get("value"))

    @property
    def subject(self) -> str:
        """The focus node, the path and the value node at fault, as far as there are."""
        where = f"{self.focus}: {self.path}" if self.shape.path is not None else self.focus
        return f"{where} {self.value}".strip()

    @property
    def count(self) -> int | None:
        found = self.row.get("count")
        return int(found.value) if isinstance(found, ox.Literal) else None

    @property
    def how_many(self) -> str:
        return "no" if not self.count else f"only {self.count}"

    @property
    def count_or_no(self) -> int | str:
        return self.count or "no"

    @property
    def qualified(self) -> object:
        return self.constraint.extra["count"]

    @property
    def term(self) -> str:
        return show_term(self.c)

    @property
    def terms(self) -> str:
        return ", ".join(show_term(t) for t in self.c)

    @property
    def languages(self) -> str:
        return ", ".join(self.c)

    @property
    def kind(self) -> str:
        return _KIND[self.c]

    @property
    def shape_name(self) -> str:
        return self.c.name  # type: ignore[no-any-return]

    @property
    def shape_names(self) -> str:
        return ", ".join(s.name for s in self.c)

    @property
    def lang(self) -> str:
        return show_term(self.row.get("lang"))

    @property
    def closed_property(self) -> str:
        return show_term(self.row.get("path"))


_MESSAGES = {
    "MinCount": "{w.focus} has {w.how_many} {w.path} (at least {w.c} required)",
    "MaxCount": "{w.focus} has {w.count} values of {w.path} (at most {w.c} allowed)",
    "QualifiedMinCount": "{w.focus} has {w.count_or_no} values of {w.path} conforming to "
                         "{w.shape_name} (at least {w.qualified} required)",
    "QualifiedMaxCount": "{w.focus} has {w.count} values of {w.path} conforming to "
                         "{w.shape_name} (at most {w.qualified} allowed)",
    "Class": "{w.subject} is not an instance of {w.term}",
    "Datatype": "{w.subject} is not a well-formed literal of type {w.term}",
    "NodeKind": "{w.subject} is not {w.kind}",
    "MinExclusive": "{w.subject} is not greater than {w.term}",
    "MinInclusive": "{w.subject} is not at least {w.term}",
    "MaxExclusive": "{w.subject} is not less than {w.term}",
    "MaxInclusive": "{w.subject} is not at most {w.term}",
    "MinLength": "{w.subject} is shorter than {w.c} characters",
    "MaxLength": "{w.subject} is longer than {w.c} characters",
    "Pattern": "{w.subject} does not match the pattern {w.c!r}",
    "LanguageIn": "{w.subject} is not in one of the languages {w.languages}",
    "UniqueLang": "{w.focus} has more than one {w.path} in language {w.lang}",
    "Equals": "{w.subject} is not also a value of {w.term}",
    "Disjoint": "{w.subject} is also a value of {w.term}",
    "LessThan": "{w.subject} is not less than every value of {w.term}",
    "LessThanOrEquals": "{w.subject} is greater than a value of {w.term}",
    "Not": "{w.subject} conforms to {w.shape_name}, which it must not",
    "And": "{w.subject} does not conform to all of {w.shape_names}",
    "Or": "{w.subject} conforms to none of {w.shape_names}",
    "Xone": "{w.subject} does not conform to exactly one of {w.shape_names}",
    "Node": "{w.subject} does not conform to {w.shape_name}",
    "Closed": "{w.focus} has {w.closed_property} {w.value}, a property the closed shape does "
              "not allow",
    "HasValue": "{w.focus} lacks the required {w.path} {w.term}",
    "In": "{w.subject} is not one of {w.terms}",
}
"""Each core component's sentence; the parts come from _Words."""


def default_message(shape: Shape, constraint: Constraint, row: Solution) -> str:
    """A sentence naming the focus node, what is wrong and what was expected."""
    words = _Words(shape, constraint, row)
    sentence = _MESSAGES.get(constraint.component)
    if sentence is not None:
        return sentence.format(w=words)
    return f"{words.focus} fails the SPARQL constraint of {shape.name}" + (
        f" at {words.value}" if words.value else "")
