"""Retrieval: the subgraph around the seed entities, hop by hop, within the limits of SPEC §5."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyoxigraph as ox

from tgsparql.store import Store
from tgsparql.templates import Templates


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
    store: Store, templates: Templates, seeds: Sequence[ox.NamedNode], limits: RetrievalLimits
) -> list[ox.Triple]:
    """Edges within `max_path_length` hops of the seeds, in the order they were reached.

    Each hop is one CONSTRUCT over the whole frontier. When the size cap binds, the frontier's
    nodes take turns, so a seed with many edges cannot crowd out the others.
    """
    subgraph: dict[ox.Triple, None] = {}
    reached: set[ox.NamedNode] = set(seeds)
    frontier = list(dict.fromkeys(seeds))
    for _ in range(limits.max_path_length):
        if not frontier or len(subgraph) >= limits.max_subgraph_size:
            break
        edges = store.construct(
            templates.render(
                "retrieve_subgraph", nodes=frontier, triple_limit=limits.triple_limit
            )
        )
        added = _take_in_turns(frontier, edges, subgraph, limits.max_subgraph_size)
        next_frontier = []
        for edge in added:
            for node in (edge.subject, edge.object):
                if isinstance(node, ox.NamedNode) and node not in reached:
                    reached.add(node)
                    next_frontier.append(node)
        frontier = next_frontier
    return list(subgraph)


def _take_in_turns(
    frontier: Sequence[ox.NamedNode],
    edges: Sequence[ox.Triple],
    subgraph: dict[ox.Triple, None],
    cap: int,
) -> list[ox.Triple]:
    per_node: dict[ox.NamedNode, list[ox.Triple]] = {node: [] for node in frontier}
    for edge in sorted(edges, key=str):
        for node in (edge.subject, edge.object):
            if node in per_node:
                per_node[node].append(edge)
                break
    added: list[ox.Triple] = []
    queues = [iter(per_node[node]) for node in frontier]
    while queues and len(subgraph) < cap:
        still_open = []
        for queue in queues:
            if len(subgraph) >= cap:
                break
            for edge in queue:
                if edge not in subgraph:
                    subgraph[edge] = None
                    added.append(edge)
                    still_open.append(queue)
                    break
        queues = still_open
    return added
