"""Labels for the LLM, original terms for the record (docs/spec.md §4)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

import pyoxigraph as ox

from tgsparql.rdf.terms import Term
from tgsparql.stores.store import Store

LabelTriple = tuple[str, str, str]


@dataclass(frozen=True)
class LabeledEdge:
    id: str
    labels: LabelTriple
    triple: ox.Triple


@dataclass
class LabelGraph:
    labeled_edges: list[LabeledEdge] = field(default_factory=list)
    uri_map: dict[str, ox.Triple] = field(default_factory=dict)
    """edge id → the original (s, p, o) terms."""

    def by_id(self) -> dict[str, LabeledEdge]:
        return {edge.id: edge for edge in self.labeled_edges}


def edge_id(labels: LabelTriple) -> str:
    """First 8 hex digits of SHA-256 over the UTF-8 JSON array `[label_s, label_p, label_o]`."""
    text = json.dumps(list(labels), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def local_name(iri: str) -> str:
    """The part after the last '#', '/' or ':', percent-decoded; the IRI itself if that is empty."""
    cut = max(iri.rfind("#"), iri.rfind("/"), iri.rfind(":"))
    name = unquote(iri[cut + 1 :])
    return name or iri


def label_of(term: Term, labels: Mapping[ox.NamedNode, str]) -> str:
    if isinstance(term, ox.NamedNode):
        return labels.get(term) or local_name(term.value)
    if isinstance(term, ox.Literal):
        return term.value
    if isinstance(term, ox.Triple):
        parts = (label_of(t, labels) for t in (term.subject, term.predicate, term.object))
        return "(" + " ".join(parts) + ")"
    return str(term)


def fetch_labels(store: Store, terms: Sequence[ox.NamedNode]) -> dict[ox.NamedNode, str]:
    """One label per term, chosen by `best_labels`."""
    unique = sorted(set(terms), key=lambda node: node.value)
    if not unique:
        return {}
    rows = store.run("fetch_labels", terms=unique).rows
    return best_labels((row.get("term"), row.get("label")) for row in rows)


def best_labels(found: Iterable[tuple[object, object]]) -> dict[ox.NamedNode, str]:
    """One label per term among (term, label) pairs: English first, then untagged, then any;
    ties broken by value. Pairs that are not (IRI, literal) are skipped."""
    best: dict[ox.NamedNode, tuple[int, str]] = {}
    for term, label in found:
        if not isinstance(term, ox.NamedNode) or not isinstance(label, ox.Literal):
            continue
        language = (label.language or "").lower()
        rank = 0 if language == "en" or language.startswith("en-") else 1 if not language else 2
        candidate = (rank, label.value)
        if term not in best or candidate < best[term]:
            best[term] = candidate
    return {term: value for term, (_, value) in best.items()}


def label_terms(subgraph: Sequence[ox.Triple]) -> list[ox.NamedNode]:
    found: list[ox.NamedNode] = []

    def visit(term: Term) -> None:
        if isinstance(term, ox.NamedNode):
            found.append(term)
        elif isinstance(term, ox.Triple):
            for part in (term.subject, term.predicate, term.object):
                visit(part)

    for triple in subgraph:
        visit(triple)
    return found


def build_labelgraph(
    subgraph: Sequence[ox.Triple], labels: Mapping[ox.NamedNode, str]
) -> LabelGraph:
    """Label every edge and give it an id unique within the prompt; no edge is lost."""
    graph = LabelGraph()
    for triple in subgraph:
        names = (
            label_of(triple.subject, labels),
            label_of(triple.predicate, labels),
            label_of(triple.object, labels),
        )
        base = edge_id(names)
        candidate, suffix = base, 1
        while candidate in graph.uri_map:
            suffix += 1
            candidate = f"{base}-{suffix}"
        graph.uri_map[candidate] = triple
        graph.labeled_edges.append(LabeledEdge(candidate, names, triple))
    return graph


def get_labelgraph(store: Store, subgraph: Sequence[ox.Triple]) -> LabelGraph:
    labels = fetch_labels(store, label_terms(subgraph))
    return build_labelgraph(subgraph, labels)
