"""Typed literals as the data wrote them, where the store keeps another form.

pyoxigraph (and the Oxigraph server) stores the literals of some XSD datatypes by value: on
load, `INSERT DATA` and in query constants alike, `"300"^^xsd:byte` becomes `"300"^^xsd:integer`
(every type derived from xsd:integer collapses to it), `"4.0"^^xsd:decimal` becomes `"4"`,
`"+5"^^xsd:int` becomes `"5"^^xsd:integer`, `"1"^^xsd:boolean` becomes `"true"`; a lexical form
that does not parse (`"abc"^^xsd:integer`, `"c"^^xsd:byte`) is kept as written. The data's own
datatype and lexical form are then lost to every query, and SHACL needs both (sh:datatype, and
sh:value in reports).

So whatever tgsparql loads carries, in the graph `urn:graph:lexical` (docs/spec.md §1), one record
per statement whose literal object the store rewrites: the statement as stored and the literal
as written. Which literals are rewritten is asked of pyoxigraph itself (a scratch in-memory
store), so the records follow the store's rules exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.iris import sha256_hex

GRAPH_LEXICAL = vocab.GRAPH_LEXICAL
RECORD = "urn:tgsparql:lexical:"
_XSD = vocab.XSD
BY_VALUE = frozenset(
    _XSD + name
    for name in (
        "boolean float double decimal integer byte short int long unsignedByte unsignedShort "
        "unsignedInt unsignedLong positiveInteger negativeInteger nonPositiveInteger "
        "nonNegativeInteger dateTime dateTimeStamp time date gYearMonth gYear gMonthDay gDay "
        "gMonth duration yearMonthDuration dayTimeDuration"
    ).split()
)
"""The datatypes pyoxigraph 0.5 encodes by value (its storage's numeric encoder); a literal of
any other datatype is stored as written."""
_SCRATCH_SUBJECT = "urn:x-tgsparql:scratch:"
_SCRATCH_PREDICATE = ox.NamedNode("urn:x-tgsparql:scratch")
BATCH = 50_000


def stored_forms(literals: Iterable[ox.Literal]) -> dict[ox.Literal, ox.Literal]:
    """The store's form of each literal it would not keep as written (others are left out)."""
    candidates = list(dict.fromkeys(
        literal for literal in literals
        if literal.language is None and literal.datatype.value in BY_VALUE
    ))
    if not candidates:
        return {}
    scratch = ox.Store()
    scratch.extend(
        ox.Quad(ox.NamedNode(f"{_SCRATCH_SUBJECT}{i}"), _SCRATCH_PREDICATE, literal)
        for i, literal in enumerate(candidates)
    )
    found: dict[ox.Literal, ox.Literal] = {}
    for quad in scratch:
        written = candidates[int(quad.subject.value[len(_SCRATCH_SUBJECT):])]
        if quad.object != written:
            found[written] = quad.object  # type: ignore[assignment]
    return found


def records(quads: list[ox.Quad]) -> list[ox.Quad]:
    """The records (in GRAPH_LEXICAL) of the quads whose literal object the store rewrites."""
    rewritten = stored_forms(q.object for q in quads if isinstance(q.object, ox.Literal))
    out: list[ox.Quad] = []
    for quad in quads:
        stored = rewritten.get(quad.object) if isinstance(quad.object, ox.Literal) else None
        if stored is None:
            continue
        written: ox.Literal = quad.object  # type: ignore[assignment]
        record = ox.NamedNode(RECORD + sha256_hex(f"{quad.triple} ."))
        out += [
            ox.Quad(record, vocab.TG_LITERAL_SUBJECT, quad.subject, GRAPH_LEXICAL),
            ox.Quad(record, vocab.TG_LITERAL_PREDICATE, quad.predicate, GRAPH_LEXICAL),
            ox.Quad(record, vocab.TG_STORED_LITERAL, stored, GRAPH_LEXICAL),
            ox.Quad(record, vocab.TG_LEXICAL_FORM, ox.Literal(written.value), GRAPH_LEXICAL),
            ox.Quad(record, vocab.TG_DATATYPE, written.datatype, GRAPH_LEXICAL),
        ]
    return out


def with_records(quads: Iterable[ox.Quad], size: int = BATCH) -> Iterator[list[ox.Quad]]:
    """The quads in batches of `size`, each followed by the records of its rewritten literals."""
    iterator = iter(quads)
    while batch := list(itertools.islice(iterator, size)):
        yield batch + records(batch)
