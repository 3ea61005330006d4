"""Minting and parsing every IRI tgsparql makes (docs/spec.md §1, §2, §3, §8), in one place.

Patterns (`{uuid}` a session's UUID, `{n}` an index from 0, `{h}` a SHA-256 in hex, `{u}` a
UUID derived from the document's SHA-256 by `stable_uuid`):

- KG terms: entity `https://trustgraph.ai/e/{slug}`, relation `https://trustgraph.ai/r/{slug}`,
  the slug being the name's normalised words joined by '-' (a hash for a name without words)
- extraction: document `urn:trustgraph:doc:{h}`, activity `urn:activity:{u}`, page
  `urn:page:{u}`, chunk `urn:chunk:{u}`, subgraph `https://trustgraph.ai/subgraph/{u}`, mention
  `urn:mention:{u}`
- a session: `urn:trustgraph:session:{uuid}`, its stages
  `urn:trustgraph:prov:{retrieval|selection|answer}:{uuid}`, the answer's document
  `urn:trustgraph:answer:{uuid}`, edge selection `urn:trustgraph:prov:edge:{uuid}:{n}`, seed cut
  `urn:trustgraph:prov:seed:{uuid}:{n}`, citation `urn:trustgraph:prov:citation:{uuid}:{n}`
- reification dialect: statement `urn:trustgraph:stmt:{h}`, `h` the SHA-256 of the triple's
  canonical N-Triples line
- a day that holds sessions `urn:trustgraph:day:{YYYY-MM-DD}`; a collection's rollup
  `urn:trustgraph:rollup`, its figures `urn:trustgraph:rollup:day:{YYYY-MM-DD}`,
  `urn:trustgraph:rollup:usage:{stage}:{model}` (the model percent-encoded),
  `urn:trustgraph:rollup:document:{h}` and `urn:trustgraph:rollup:fact:{h}` (`h` the SHA-256 of
  the document's IRI, of the fact's N-Triples term)
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import NamedTuple
from urllib.parse import quote

import pyoxigraph as ox

from tgsparql.rdf.text import normalize_label

SESSION_PREFIX = "urn:trustgraph:session:"
LLM_PREFIX = "urn:trustgraph:llm:"
ENTITY_PREFIX = "https://trustgraph.ai/e/"
RELATION_PREFIX = "https://trustgraph.ai/r/"
DOCUMENT_PREFIX = "urn:trustgraph:doc:"
EDGE_SELECTION_PREFIX = "urn:trustgraph:prov:edge:"
EDGE_SELECTION = re.compile(
    re.escape(EDGE_SELECTION_PREFIX) + r"([0-9a-fA-F-]{36}):(0|[1-9][0-9]*)"
)
"""An edge selection IRI: group 1 its session's UUID, group 2 its index."""
UUID = re.compile(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
INGEST_AGENT = ox.NamedNode("https://trustgraph.ai/agent/tgsparql-ingest")
_EXTRACTION_NAMESPACE = uuid.UUID("6f1c3a52-8e0b-4d7a-9a57-2f4c1d9b7e10")


def _slug(name: str) -> str:
    """The name's matching key with '-' for spaces, percent-encoded; a hash when it has no words."""
    key = normalize_label(name)
    if not key:
        return "h-" + sha256_hex(name)[:16]
    return quote(key.replace(" ", "-"), safe="-")


def entity_iri(name: str) -> ox.NamedNode:
    """The same IRI for every spelling of a name that grounding would match alike."""
    return ox.NamedNode(ENTITY_PREFIX + _slug(name))


def relation_iri(name: str) -> ox.NamedNode:
    return ox.NamedNode(RELATION_PREFIX + _slug(name))


def llm_iri(model: str) -> ox.NamedNode:
    """The model's name, percent-encoded, so any name the server reports makes a valid IRI."""
    return ox.NamedNode(LLM_PREFIX + quote(model, safe=""))


def day_iri(day: dt.date) -> ox.NamedNode:
    """The day sessions started on (UTC), which each of them names, so that readers find the
    days not yet rolled up without reading every session (docs/spec.md §2)."""
    return ox.NamedNode(f"urn:trustgraph:day:{day.isoformat()}")


ROLLUP = ox.NamedNode("urn:trustgraph:rollup")
"""A collection's rollup (docs/spec.md §2); one per collection graph, replaced whole."""


def rollup_day_iri(day: dt.date) -> ox.NamedNode:
    return ox.NamedNode(f"{ROLLUP.value}:day:{day.isoformat()}")


def rollup_usage_iri(stage: str, model: ox.NamedNode) -> ox.NamedNode:
    """A stage's calls to a model; the model's IRI already percent-encodes its name."""
    return ox.NamedNode(f"{ROLLUP.value}:usage:{stage}:{model.value[len(LLM_PREFIX):]}")


def rollup_document_iri(document: ox.NamedNode) -> ox.NamedNode:
    return ox.NamedNode(f"{ROLLUP.value}:document:{sha256_hex(document.value)}")


def rollup_fact_iri(fact: ox.Triple | ox.NamedNode) -> ox.NamedNode:
    """A fact as edge selections refer to it: a triple term, or a statement IRI."""
    return ox.NamedNode(f"{ROLLUP.value}:fact:{sha256_hex(str(fact))}")


def sha256_hex(text: str) -> str:
    """The SHA-256 of the text's UTF-8, in hex. hashlib is imported on the first call, not with
    this module: loading OpenSSL costs a command that mints nothing (`validate`) about 3 ms."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pasted_iri(text: str) -> str:
    """An IRI as people paste it, without the space around it and the one pair of angle
    brackets N-Triples, Turtle, SPARQL and this tool's own reports write an IRI in."""
    text = text.strip()
    if len(text) > 1 and text[0] == "<" and text[-1] == ">":
        return text[1:-1].strip()
    return text


def stable_uuid(*parts: str) -> str:
    """A UUID derived from its parts, so re-extracting the same text mints the same IRIs."""
    return str(uuid.uuid5(_EXTRACTION_NAMESPACE, "\x1f".join(parts)))


def statement_iri(triple: ox.Triple) -> ox.NamedNode:
    """Content-addressed IRI of a triple for the `reification` dialect (docs/spec.md §3)."""
    return ox.NamedNode(f"urn:trustgraph:stmt:{sha256_hex(canonical_ntriples(triple))}")


def canonical_ntriples(triple: ox.Triple) -> str:
    """The triple as one canonical N-Triples line without the newline: `<s> <p> <o> .`"""
    return f"{triple} ."


def trailing_index(iri: str) -> int:
    """The number an edge selection, seed cut or citation IRI ends with; -1 for none."""
    tail = iri.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else -1


class ExtractionIds(NamedTuple):
    """The IRIs of one document's extraction (docs/spec.md §8), all derived from its text's SHA-256.

    Ingesting the same text again mints the same IRIs, so it can be recognised and skipped.
    """

    sha256: str

    @property
    def document(self) -> ox.NamedNode:
        return ox.NamedNode(f"{DOCUMENT_PREFIX}{self.sha256}")

    @property
    def activity(self) -> ox.NamedNode:
        return ox.NamedNode(f"urn:activity:{stable_uuid(self.sha256, 'activity')}")

    def page(self, number: int) -> ox.NamedNode:
        return ox.NamedNode(f"urn:page:{stable_uuid(self.sha256, 'page', str(number))}")

    def chunk(self, start: int, end: int) -> ox.NamedNode:
        return ox.NamedNode(f"urn:chunk:{stable_uuid(self.sha256, 'chunk', str(start), str(end))}")

    def subgraph(
        self, chunk_start: int, chunk_end: int, span: tuple[int, int] | None,
        unsupported: str | None = None,
    ) -> ox.NamedNode:
        """The facts of a chunk that share an evidence span (`None`: facts without one), and
        for facts kept unsupported, the reason they share."""
        where = "none" if span is None else f"{span[0]}+{span[1]}"
        why = () if unsupported is None else (unsupported,)
        key = stable_uuid(self.sha256, "subgraph", str(chunk_start), str(chunk_end), where, *why)
        return ox.NamedNode(f"https://trustgraph.ai/subgraph/{key}")

    def mention(self, chunk_start: int, chunk_end: int, name: str) -> ox.NamedNode:
        """A name as a chunk's facts give it, with the entity it was linked to."""
        key = stable_uuid(self.sha256, "mention", str(chunk_start), str(chunk_end), name)
        return ox.NamedNode(f"urn:mention:{key}")


class SessionNotFound(LookupError):
    """No session with that IRI in the collection."""


class SessionIds(NamedTuple):
    """The IRIs of one session; all share its UUID (docs/spec.md §2)."""

    uuid: str

    @classmethod
    def new(cls) -> SessionIds:
        return cls(str(uuid.uuid4()))

    @classmethod
    def from_session_iri(cls, iri: str) -> SessionIds:
        """Accepts a session IRI, as written or in angle brackets (`pasted_iri`), or its bare
        UUID."""
        text = pasted_iri(iri)
        if text.startswith(SESSION_PREFIX):
            text = text[len(SESSION_PREFIX) :]
        try:
            return cls(str(uuid.UUID(text)))
        except ValueError:
            raise ValueError(
                f"not a session IRI: {iri!r} (expected {SESSION_PREFIX}<uuid>)"
            ) from None

    @classmethod
    def from_edge_selection(cls, iri: str) -> tuple[SessionIds, int] | None:
        """The session and index an edge selection IRI names; None for another text."""
        match = EDGE_SELECTION.fullmatch(iri)
        if match is None:
            return None
        return cls.from_session_iri(match.group(1)), int(match.group(2))

    @property
    def session(self) -> ox.NamedNode:
        return ox.NamedNode(SESSION_PREFIX + self.uuid)

    @property
    def retrieval(self) -> ox.NamedNode:
        return ox.NamedNode(f"urn:trustgraph:prov:retrieval:{self.uuid}")

    @property
    def selection(self) -> ox.NamedNode:
        return ox.NamedNode(f"urn:trustgraph:prov:selection:{self.uuid}")

    @property
    def answer(self) -> ox.NamedNode:
        return ox.NamedNode(f"urn:trustgraph:prov:answer:{self.uuid}")

    @property
    def answer_document(self) -> ox.NamedNode:
        return ox.NamedNode(f"urn:trustgraph:answer:{self.uuid}")

    def edge_selection(self, index: int) -> ox.NamedNode:
        return ox.NamedNode(f"{EDGE_SELECTION_PREFIX}{self.uuid}:{index}")

    def seed_cut(self, index: int) -> ox.NamedNode:
        return ox.NamedNode(f"urn:trustgraph:prov:seed:{self.uuid}:{index}")

    def name_grounding(self, index: int) -> ox.NamedNode:
        return ox.NamedNode(f"urn:trustgraph:prov:name:{self.uuid}:{index}")

    def citation(self, index: int) -> ox.NamedNode:
        return ox.NamedNode(f"urn:trustgraph:prov:citation:{self.uuid}:{index}")
