"""Reading plain values out of RDF terms, the one way every reader of the record does."""

from __future__ import annotations

from collections.abc import Callable

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
