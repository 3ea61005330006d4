"""Retrieval: the subgraph around the seed entities, hop by hop, within the limits of SPEC §5.

Per node and hop the store ranks the node's edges before the limit cuts them
(`RANKING_RULE`, spelled out in queries/retrieve_subgraph.rq): edges to other seeds, then edges
whose predicate or neighbour is named with the question's words, then rare predicates of that
node before common ones, ties by term strings — so the edges a question needs survive on a hub,
and every engine keeps the same ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pyoxigraph as ox

from tgsparql import vocab
from tgsparql.store import Solution, Store
from tgsparql.templates import Templates


RANKING_RULE = vocab.TG + "QuestionPathRarityRanking"
RANK_WHOLE_UP_TO = 100
"""A node with at most this many edges has all of them ranked."""
COUNT_UP_TO = 2000
"""A node with more edges than RANK_WHOLE_UP_TO but at most this many has its predicates counted,
and the edges of its rare ones compete with those that match the question or reach a seed; a
node with more (a hub) is never read whole: only the edges that match the question or reach a
seed compete for its places. Also how far each seed's edges are counted for the record."""
RARE_USES = 10
"""A predicate a node uses at most this many times is rare at that node."""
NODES_PER_QUERY = 8
"""Nodes ranked in one request: Virtuoso refuses a query of many more ("Query too large,
variables in state over the limit")."""
MATCHES_UP_TO = 1000
"""A node with more edges that match the question than this (a word all its neighbours' labels
hold) keeps none of them: they tell nothing apart, and ranking them all would cost."""
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


@dataclass(frozen=True)
class Retrieved:
    edges: list[ox.Triple]
    """In the order they were reached: hop by hop, each node's in rank order, nodes in turns."""
    candidates: dict[ox.NamedNode, int]
    """Per seed, the edges touching it, counted up to COUNT_UP_TO + 1 (which means more): how
    many the ranking chose from."""
    rule: str = RANKING_RULE


def retrieve_subgraph(
    store: Store,
    templates: Templates,
    seeds: Sequence[ox.NamedNode],
    limits: RetrievalLimits,
    schema_predicates: Sequence[ox.NamedNode] | None = None,
    stems: Sequence[str] = (),
) -> list[ox.Triple]:
    """Edges within `max_path_length` hops of the seeds, in the order they were reached."""
    return retrieve(store, templates, seeds, limits, schema_predicates, stems).edges


def retrieve(
    store: Store,
    templates: Templates,
    seeds: Sequence[ox.NamedNode],
    limits: RetrievalLimits,
    schema_predicates: Sequence[ox.NamedNode] | None = None,
    stems: Sequence[str] = (),
) -> Retrieved:
    """The subgraph, and what its cut chose from.

    Each hop is one SELECT over the whole frontier (two when the size cap binds, see `_hop`).
    When the size cap binds, the frontier's nodes take turns, so a seed with many edges cannot
    crowd out the others. `stems` are the question's word stems the ranking matches labels
    with; `schema_predicates` are the well-known ones the KG uses (grounding asks for them in
    its own query); the store is asked here only when they are not given.
    """
    if not seeds:
        return Retrieved([], {})
    excluded = (
        sorted(schema_predicates, key=str)
        if schema_predicates is not None
        else _schema_predicates_in_use(store, templates)
    )
    query = RankedQuery(
        store, templates, excluded, sorted(set(stems)), list(dict.fromkeys(seeds))
    )
    return walk(query, limits)


class HopQuery(Protocol):
    """What the walk asks the store each hop: each node's best edges, best first."""

    seeds: Sequence[ox.NamedNode]
    candidates: dict[ox.NamedNode, int]

    def ranked(
        self, nodes: Sequence[ox.NamedNode], per_node: int
    ) -> dict[ox.NamedNode, list[ox.Triple]]: ...


def walk(query: HopQuery, limits: RetrievalLimits) -> Retrieved:
    """Hop by hop from `query.seeds`, within the limits."""
    seeds = query.seeds
    subgraph: dict[ox.Triple, None] = {}
    reached: set[ox.NamedNode] = set(seeds)
    frontier = list(dict.fromkeys(seeds))
    for _ in range(limits.max_path_length):
        if not frontier or len(subgraph) >= limits.max_subgraph_size:
            break
        added = _hop(query, frontier, subgraph, limits)
        next_frontier = []
        for edge in added:
            for node in (edge.subject, edge.object):
                if isinstance(node, ox.NamedNode) and node not in reached:
                    reached.add(node)
                    next_frontier.append(node)
        frontier = next_frontier
    seed_counts = {seed: query.candidates[seed] for seed in query.seeds if seed in query.candidates}
    return Retrieved(list(subgraph), seed_counts)


@dataclass
class RankedQuery:
    store: Store
    templates: Templates
    excluded: Sequence[ox.NamedNode]
    stems: Sequence[str]
    seeds: Sequence[ox.NamedNode]
    candidates: dict[ox.NamedNode, int] = field(default_factory=dict)

    def ranked(self, nodes: Sequence[ox.NamedNode], per_node: int) -> dict[ox.NamedNode, list[ox.Triple]]:
        """Each node's best `per_node` edges, best first; NODES_PER_QUERY nodes a request."""
        rows = [
            row
            for start in range(0, len(nodes), NODES_PER_QUERY)
            for row in self._select(nodes[start : start + NODES_PER_QUERY], per_node)
        ]
        return self._rank(nodes, rows)

    def _select(self, nodes: Sequence[ox.NamedNode], per_node: int) -> list[Solution]:
        return self.store.select(
            self.templates.render(
                "retrieve_subgraph",
                nodes=nodes,
                triple_limit=per_node,
                excluded=self.excluded,
                stems=self.stems,
                seeds=self.seeds,
                rank_all_up_to=RANK_WHOLE_UP_TO,
                count_up_to=COUNT_UP_TO,
                rare_uses=RARE_USES,
                matches_up_to=MATCHES_UP_TO,
            )
        )

    def _rank(
        self, nodes: Sequence[ox.NamedNode], rows: list[Solution]
    ) -> dict[ox.NamedNode, list[ox.Triple]]:
        ranked: dict[ox.NamedNode, list[tuple[tuple[object, ...], ox.Triple]]] = {
            node: [] for node in nodes
        }
        for row in rows:
            node, count = row.get("node"), row.get("candidates")
            if node not in ranked:
                continue
            if isinstance(count, ox.Literal):
                self.candidates.setdefault(node, int(count.value))  # type: ignore[arg-type]
                continue
            s, p, o = row.get("s"), row.get("p"), row.get("o")
            if not isinstance(p, ox.NamedNode) or _is_schema(p) or s is None or o is None:
                continue
            score, rarity = row.get("score"), row.get("rarity")
            key = (
                -_number(score),
                _number(rarity) if rarity is not None else -1,
                _text(s), p.value, _text(o),
            )
            ranked[node].append((key, ox.Triple(s, p, o)))  # type: ignore[arg-type]
        return {node: [edge for _, edge in sorted(found, key=lambda item: item[0])]
                for node, found in ranked.items()}


def _number(term: object) -> float:
    return float(term.value) if isinstance(term, ox.Literal) else 0.0


def _text(term: object) -> str:
    """The term's string as SPARQL's STR gives it, for the same tie order as the store's."""
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else ""


def _hop(
    query: HopQuery,
    frontier: Sequence[ox.NamedNode],
    subgraph: dict[ox.Triple, None],
    limits: RetrievalLimits,
) -> list[ox.Triple]:
    """One hop; returns the edges it added to `subgraph`.

    Every row the store returns costs, so when the size cap binds each node is first asked
    only for about as many edges as its turns can use. Nodes whose short lists run out before
    the cap is reached are asked again for their full `triple_limit`.
    """
    cap = limits.max_subgraph_size
    share = math.ceil((cap - len(subgraph)) / len(frontier))
    per_node = min(limits.triple_limit, max(MIN_EDGES_PER_NODE, TURN_SLACK * share))
    edges = query.ranked(frontier, per_node)
    if per_node < limits.triple_limit:
        _, ran_out = _take_in_turns(frontier, edges, dict(subgraph), cap)
        cut_short = [
            node for node in frontier if node in ran_out and len(edges[node]) >= per_node
        ]
        if cut_short:
            edges.update(query.ranked(cut_short, limits.triple_limit))
    added, _ = _take_in_turns(frontier, edges, subgraph, cap)
    return added


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
    per_node: dict[ox.NamedNode, list[ox.Triple]],
    subgraph: dict[ox.Triple, None],
    cap: int,
) -> tuple[list[ox.Triple], set[ox.NamedNode]]:
    """Round-robin over the nodes' edges (each node's in rank order) until the cap.

    Returns the edges added and the nodes whose edges ran out before the cap was reached.
    """
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
