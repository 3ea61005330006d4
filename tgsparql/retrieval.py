"""Retrieval: the subgraph around the seed entities, hop by hop, within the limits of docs/spec.md §5."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pyoxigraph as ox

from tgsparql import vocab
from tgsparql.store import Store
from tgsparql.templates import Templates


TURN_SLACK = 2
"""How many turns' worth of edges a node is first asked for when the size cap binds."""
MIN_EDGES_PER_NODE = 5


@dataclass(frozen=True)
class RetrievalLimits:
    max_path_length: int = 2
    triple_limit: int = 30
    entity_limit: int = 50
    max_subgraph_size: int = 150

    def __post_init__(self) -> None:
        for name in ("max_path_length", "triple_limit", "entity_limit", "max_subgraph_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")


def retrieve_subgraph(
    store: Store,
    templates: Templates,
    seeds: Sequence[ox.NamedNode],
    limits: RetrievalLimits,
    schema_predicates: Sequence[ox.NamedNode] | None = None,
) -> list[ox.Triple]:
    """Edges within `max_path_length` hops of the seeds, in the order they were reached.

    Each hop is one CONSTRUCT over the whole frontier. When the size cap binds, the frontier's
    nodes take turns, so a seed with many edges cannot crowd out the others.
    `schema_predicates` are the well-known ones the KG uses (grounding asks for them in its
    own query); the store is asked here only when they are not given.
    """
    if not seeds:
        return []
    excluded = (
        sorted(schema_predicates, key=str)
        if schema_predicates is not None
        else _schema_predicates_in_use(store, templates)
    )
    subgraph: dict[ox.Triple, None] = {}
    reached: set[ox.NamedNode] = set(seeds)
    frontier = list(dict.fromkeys(seeds))
    for _ in range(limits.max_path_length):
        if not frontier or len(subgraph) >= limits.max_subgraph_size:
            break
        added = _hop(store, templates, frontier, subgraph, limits, excluded)
        next_frontier = []
        for edge in added:
            for node in (edge.subject, edge.object):
                if isinstance(node, ox.NamedNode) and node not in reached:
                    reached.add(node)
                    next_frontier.append(node)
        frontier = next_frontier
    return list(subgraph)


def _hop(
    store: Store,
    templates: Templates,
    frontier: Sequence[ox.NamedNode],
    subgraph: dict[ox.Triple, None],
    limits: RetrievalLimits,
    excluded: Sequence[ox.NamedNode],
) -> list[ox.Triple]:
    """One hop; returns the edges it added to `subgraph`.

    Every row the store returns costs, so when the size cap binds each node is first asked
    only for about as many edges as its turns can use. Nodes whose short lists run out before
    the cap is reached are asked again for their full `triple_limit`.
    """
    cap = limits.max_subgraph_size
    share = math.ceil((cap - len(subgraph)) / len(frontier))
    per_node = min(limits.triple_limit, max(MIN_EDGES_PER_NODE, TURN_SLACK * share))
    edges = _fetch(store, templates, frontier, per_node, excluded)
    if per_node < limits.triple_limit:
        nodes = set(frontier)
        touching = Counter(n for e in edges for n in {e.subject, e.object} if n in nodes)
        _, ran_out = _take_in_turns(frontier, edges, dict(subgraph), cap)
        cut_short = [node for node in frontier if node in ran_out and touching[node] >= per_node]
        if cut_short:
            more = _fetch(store, templates, cut_short, limits.triple_limit, excluded)
            edges = list(dict.fromkeys([*edges, *more]))
    added, _ = _take_in_turns(frontier, edges, subgraph, cap)
    return added


def _fetch(
    store: Store,
    templates: Templates,
    nodes: Sequence[ox.NamedNode],
    per_node: int,
    excluded: Sequence[ox.NamedNode],
) -> list[ox.Triple]:
    query = templates.render(
        "retrieve_subgraph", nodes=nodes, triple_limit=per_node, excluded=excluded
    )
    return [edge for edge in store.construct(query) if not _is_schema(edge.predicate)]


def _schema_predicates_in_use(store: Store, templates: Templates) -> list[ox.NamedNode]:
    query = templates.render(
        "schema_predicates", schema_candidates=vocab.WELL_KNOWN_SCHEMA_PREDICATES
    )
    return sorted(
        (row["schema"] for row in store.select(query)
         if isinstance(row.get("schema"), ox.NamedNode)),
        key=str,
    )


_SCHEMA_NAMESPACES = (vocab.RDF, vocab.RDFS, vocab.OWL)


def _is_schema(predicate: ox.NamedNode) -> bool:
    return predicate != vocab.RDF_TYPE and predicate.value.startswith(_SCHEMA_NAMESPACES)


def _take_in_turns(
    frontier: Sequence[ox.NamedNode],
    edges: Sequence[ox.Triple],
    subgraph: dict[ox.Triple, None],
    cap: int,
) -> tuple[list[ox.Triple], set[ox.NamedNode]]:
    """Round-robin over the nodes' edges (each node's in term order) until the cap.

    Returns the edges added and the nodes whose edges ran out before the cap was reached.
    """
    per_node: dict[ox.NamedNode, list[ox.Triple]] = {node: [] for node in frontier}
    for edge in sorted(edges, key=str):
        for node in (edge.subject, edge.object):
            if node in per_node:
                per_node[node].append(edge)
                break
    added: list[ox.Triple] = []
    ran_out: set[ox.NamedNode] = set()
    queues = [(node, iter(per_node[node])) for node in frontier]
    while queues and len(subgraph) < cap:
        still_open = []
        for node, queue in queues:
            if len(subgraph) >= cap:
                break
            for edge in queue:
                if edge not in subgraph:
                    subgraph[edge] = None
                    added.append(edge)
                    still_open.append((node, queue))
                    break
            else:
                ran_out.add(node)
        queues = still_open
    return added, ran_out
