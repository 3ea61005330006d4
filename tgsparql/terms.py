"""Reading plain values out of RDF terms, the one way every reader of the record does."""

from __future__ import annotations

import pyoxigraph as ox

from tgsparql.templates import Term


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
