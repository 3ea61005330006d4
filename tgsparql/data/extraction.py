"""Reading the extractor's JSONL facts: tolerant of what LLMs write, strict about what it keeps.

A fact is an object with string fields "s", "p", "o" (the object may also be a JSON number)
and an optional string "evidence". Code fences, prose around objects and broken lines are
survived; objects with a missing, empty, non-string or oversized field are dropped and counted.
Nothing of the text is ever interpreted: names become IRIs through `entity_iri`/`relation_iri`
and literals through typed-literal construction, never through SPARQL or RDF syntax.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Final

import pyoxigraph as ox

from tgsparql.asking.jsonl import object_lines
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import entity_iri, relation_iri
from tgsparql.rdf.text import normalize_label

MAX_NAME_CHARS: Final = 300
MAX_EVIDENCE_CHARS: Final = 5000
MAX_FACTS: Final = 500
"""Facts kept from one reply at most: a runaway reply does not flood the KG."""
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?[0-9]*\.[0-9]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MARKER = re.compile(
    r"(?:(?:begin|end|start|top|bottom)(?: of)?(?: the)? )?"
    r"(?:page|passage|chunk|document|text|section)(?: [0-9]+)?(?: (?:begin|end|start))?"
    r"|begin|end|start"
)
"""The words of the prompt's passage markers and of page markers ("BEGIN PASSAGE", "page 3"),
which a small model takes for names."""
# Names recur across the facts and chunks of a document, and minting normalises each one
# (NFKC, case folding, a regex), so each distinct name is minted once.
_entity_iri = lru_cache(maxsize=65_536)(entity_iri)
_relation_iri = lru_cache(maxsize=4_096)(relation_iri)


@dataclass(frozen=True)
class Fact:
    """One extracted statement with the names it was given, for labels."""

    triple: ox.Triple
    subject_name: str
    predicate_name: str
    object_name: str | None
    """None when the object is a literal value rather than an entity."""
    evidence: str | None


@dataclass
class ParsedFacts:
    facts: list[Fact] = field(default_factory=list)
    skipped_lines: int = 0
    """Non-blank lines that held no JSON object."""
    rejected: int = 0
    """Objects that were not a usable fact (missing, empty, non-string or oversized fields)."""
    duplicates: int = 0
    truncated: int = 0
    """Facts beyond MAX_FACTS, dropped."""


def parse_facts(text: str) -> ParsedFacts:
    result = ParsedFacts()
    seen: set[ox.Triple] = set()
    for objects in object_lines(text):
        if not objects:
            result.skipped_lines += 1
            continue
        for obj in objects:
            fact = to_fact(obj)
            if fact is None:
                result.rejected += 1
            elif fact.triple in seen:
                result.duplicates += 1
            elif len(result.facts) >= MAX_FACTS:
                result.truncated += 1
            else:
                seen.add(fact.triple)
                result.facts.append(fact)
    return result


def to_fact(obj: dict[str, Any]) -> Fact | None:
    """The fact an object states, or None when it is not a usable one."""
    subject, predicate = _name(obj.get("s")), _name(obj.get("p"))
    if subject is None or predicate is None:
        return None
    raw_object = obj.get("o")
    value = object_literal(raw_object)
    object_name: str | None = None
    if value is None:
        object_name = _name(raw_object)
        if object_name is None:
            return None
    evidence = obj.get("evidence")
    if not isinstance(evidence, str) or not evidence.strip() or len(evidence) > MAX_EVIDENCE_CHARS:
        evidence = None
    target = value if value is not None else _entity_iri(object_name or "")
    try:
        triple = ox.Triple(_entity_iri(subject), _relation_iri(predicate), target)
    except ValueError:
        return None
    return Fact(triple, subject, predicate, object_name, evidence)


def is_marker(name: str) -> bool:
    """Whether a name is a prompt or page marker rather than anything the text speaks of."""
    return _MARKER.fullmatch(normalize_label(name)) is not None


def object_literal(value: Any) -> ox.Literal | None:
    """A typed literal when the object is a value rather than a name; None otherwise.

    JSON integers and integer strings ("1867") are xsd:integer, decimal strings ("3.14")
    xsd:decimal, other finite JSON numbers xsd:double, valid ISO dates ("1867-11-07")
    xsd:date. Everything else names an entity.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ox.Literal(str(value), datatype=vocab.XSD_INTEGER)
    if isinstance(value, float):
        return ox.Literal(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _INTEGER.fullmatch(text):
        return ox.Literal(str(int(text)), datatype=vocab.XSD_INTEGER)
    if _DECIMAL.fullmatch(text):
        return ox.Literal(_canonical_decimal(text), datatype=vocab.XSD_DECIMAL)
    if _DATE.fullmatch(text):
        try:
            return ox.Literal(dt.date.fromisoformat(text).isoformat(), datatype=vocab.XSD_DATE)
        except ValueError:
            return None
    return None


def _canonical_decimal(text: str) -> str:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return text
    digits = format(number.normalize(), "f")
    return digits if "." in digits else digits + ".0"


def _name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    name = " ".join(value.split())
    if not name or len(name) > MAX_NAME_CHARS:
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return name
