"""RDF terms and the dialects a store writes edges in, below every module that renders or runs
SPARQL; and reading plain values out of terms, the one way every reader of the record does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Final, get_args
from typing import Literal as TypingLiteral

import pyoxigraph as ox

Dialect = TypingLiteral["rdf12", "rdfstar", "reification"]
"""How a store writes an edge reference: an RDF 1.2 triple term, an RDF-star quoted triple, or a
statement IRI (SPARQL 1.1 alone)."""
DIALECTS: Final[tuple[str, ...]] = get_args(Dialect)
DEFAULT_DIALECT: Final[Dialect] = "rdf12"
"""The dialect of the embedded store, and of every store or renderer not told otherwise."""

Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple


class TemplateError(ValueError):
    """A template could not be rendered safely: a bad value, a missing one, or an unescaped one."""


def check_text(value: str, what: str = "text") -> str:
    """Reject what no RDF literal can hold (lone surrogates), naming the position."""
    if not isinstance(value, str):
        raise TemplateError(f"{what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(value[error.start])
        raise TemplateError(
            f"{what} contains an unpaired surrogate U+{code:04X} at position {error.start}"
        ) from None
    return value


def term_text(term: Term | None) -> str | None:
    """An IRI's or a literal's lexical form; None for a blank node, a triple term or nothing."""
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else None


def term_integer(term: Term | None) -> int | None:
    """A literal's value as an integer; None where it is not one (or not there)."""
    if isinstance(term, ox.Literal):
        try:
            return int(term.value)
        except ValueError:
            return None
    return None


def term_datetime(term: Term | None) -> dt.datetime | None:
    """An xsd:dateTime's moment, when it has a time zone; None for anything else."""
    if not isinstance(term, ox.Literal):
        return None
    return text_datetime(term.value)


def text_datetime(text: str | None) -> dt.datetime | None:
    """The moment an xsd:dateTime's lexical form names, when it has a time zone; None else."""
    try:
        moment = dt.datetime.fromisoformat(text) if text is not None else None
    except ValueError:
        return None
    return moment if moment is not None and moment.tzinfo is not None else None


_NO_MOMENT: Final = dt.datetime.min.replace(tzinfo=dt.timezone.utc)


def oldest_first(started: str | None, tie: str) -> tuple[bool, dt.datetime, str, str]:
    """A sort key for records by their xsd:dateTime start: by the moment, never by the text
    (stores write the canonical form, which drops a fraction's trailing zeros, so "…:01.12Z"
    sorts after "…:01.123Z" as text); a start that names no moment goes last, by its text."""
    moment = text_datetime(started)
    return (moment is None, moment or _NO_MOMENT, "" if moment else started or "", tie)


Parts = tuple[Term | None, Term | None, Term | None]


def edge_of(reference: Term | None, parts: Callable[[Term], Parts]) -> ox.Triple | None:
    """The edge an edge reference names (docs/spec.md §3): a triple term as it is; a reified
    statement as the triple of the rdf:subject, rdf:predicate and rdf:object that `parts`
    reads of it, a statement nested in the object resolved the same way. None where the parts
    make no triple."""
    if reference is None or isinstance(reference, ox.Triple):
        return reference
    s, p, o = parts(reference)
    if o is not None and parts(o)[0] is not None:
        o = edge_of(o, parts)
    if isinstance(p, ox.NamedNode) and isinstance(s, (ox.NamedNode, ox.BlankNode)) \
            and o is not None:
        return ox.Triple(s, p, o)
    return None
