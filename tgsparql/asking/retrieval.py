"""Retrieval: the subgraph around the seed entities, hop by hop, within the limits of
docs/spec.md §5.

Per node and hop the node's edges are ranked before the limit cuts them (`RANKING_RULE`, spelled
out in queries/retrieve_ranked.rq): a seed's edges to other seeds, then edges whose predicate or
neighbour is named with the question's words, then rare predicates of that node before common
ones, ties by term strings, and then the predicates of the edges that matched take turns
(`_in_turns`) — so the edges a question needs survive on a hub, and every engine keeps the same
ones. Nodes of at most RANK_WHOLE_UP_TO edges are read whole and ranked here by
the same rule; the store ranks only bigger seeds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import NamedTuple, Protocol

import pyoxigraph as ox

from tgsparql.asking.grounding import COMMON_STEM
from tgsparql.rdf import vocab
from tgsparql.stores.store import Solution, Store

RANKING_RULE = vocab.TG_QUESTION_PATH_RARITY_RANKING
RANK_WHOLE_UP_TO = 100
"""A node with at most this many edges has all of them ranked."""
COUNT_UP_TO = 2000
"""A node with more edges than RANK_WHOLE_UP_TO but at most this many has its predicates counted,
and the edges of its rare ones compete with those that match the question or reach a seed; a
node with more (a hub) is never read whole: only the edges that match the question or reach a
seed compete for its places. Also how far each seed's edges are counted for the record."""
NEIGHBOURS_BY_VALUE = 2000
"""Up to this many (node, neighbour named with the question's stems) pairs, _matches.rq
looks each up (an index lookup each, cheaper than a join with the label index per node);
with more, it joins with the label index."""
RARE_USES = 10
"""A predicate a node uses at most this many times is rare at that node."""
NODES_PER_QUERY = 8
"""Nodes ranked in one request: Virtuoso refuses a query of many more ("Query too large,
variables in state over the limit")."""
MATCHES_UP_TO = 30
"""A node with more edges that match the question than this in one direction, by one predicate's
label or by their neighbours' (a word all its neighbours' labels hold), keeps none of those:
they tell nothing apart, and ranking them all would cost. Counted per predicate, a predicate
keeps its few edges among a thousand of others that hold the question's words."""
RANK_WINDOW = 3
"""How many times `triple_limit` edges of a node, best first, the turns of its predicates
(`_in_turns`) reorder before the limit cuts: the store ranks a big seed's edges and returns that
many, so every engine keeps the same ones."""
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
    rule: ox.NamedNode = RANKING_RULE


def retrieve_subgraph(
    store: Store,
    seeds: Sequence[ox.NamedNode],
    limits: RetrievalLimits,
    schema_predicates: Sequence[ox.NamedNode] | None = None,
    stems: Sequence[str] = (),
    relations: Sequence[str] | None = None,
    kinds: Sequence[str] = (),
) -> list[ox.Triple]:
    """Edges within `max_path_length` hops of the seeds, in the order they were reached."""
    return retrieve(store, seeds, limits, schema_predicates, stems, relations, kinds).edges


def retrieve(
    store: Store,
    seeds: Sequence[ox.NamedNode],
    limits: RetrievalLimits,
    schema_predicates: Sequence[ox.NamedNode] | None = None,
    stems: Sequence[str] = (),
    relations: Sequence[str] | None = None,
    kinds: Sequence[str] = (),
) -> Retrieved:
    """The subgraph, and what its cut chose from.

    The first hop is one SELECT, each later one two, over the whole frontier, and one more per
    NODES_PER_QUERY of the hop's seeds with more than RANK_WHOLE_UP_TO edges (see
    `RankedQuery`).
    When the size cap binds, the frontier's nodes take turns, so a seed with many edges cannot
    crowd out the others. `stems` are the question's word stems the ranking matches labels
    with, `relations` those of them a predicate's label answers the question by (all of them
    when None: grounding tells the words of the names it grounded apart, `Grounding.relations`),
    `kinds` those of them only the question word says (`Grounding.kinds`: "place" of "where"),
    which a predicate's label answers at a node the walk reached, the end of a path from a seed;
    `schema_predicates` are the well-known ones the KG uses (grounding asks for them in
    its own query); the store is asked here only when they are not given.
    """
    if not seeds:
        return Retrieved([], {})
    excluded = (
        sorted(schema_predicates, key=str)
        if schema_predicates is not None
        else _schema_predicates_in_use(store)
    )
    query = RankedQuery(
        store, excluded, sorted(set(stems)), list(dict.fromkeys(seeds)),
        limits.triple_limit, None if relations is None else frozenset(relations),
        frozenset(kinds),
    )
    return walk(query, limits)


class HopQuery(Protocol):
    """What the walk asks the store each hop: each node's best edges, best first."""

    seeds: Sequence[ox.NamedNode]
    candidates: dict[ox.NamedNode, int]
    predicates: Mapping[object, Sequence[str]]
    """The predicates whose label holds a word of the question, known after the first hop."""

    def ranked(
        self, nodes: Sequence[ox.NamedNode], per_node: int
    ) -> dict[ox.NamedNode, list[ox.Triple]]: ...


def walk(query: HopQuery, limits: RetrievalLimits) -> Retrieved:
    """Hop by hop from `query.seeds`, within the limits."""
    seeds = query.seeds
    subgraph: dict[ox.Triple, None] = {}
    steps = {seed: Step(seed, None) for seed in seeds}
    tiers = [list(dict.fromkeys(seeds))]
    for _ in range(limits.max_path_length):
        if not any(tiers) or len(subgraph) >= limits.max_subgraph_size:
            break
        added = _hop(query, tiers, subgraph, limits, steps)
        tiers = _next_tiers(added, steps, query.predicates)
    seed_counts = {seed: query.candidates[seed] for seed in query.seeds if seed in query.candidates}
    return Retrieved(list(subgraph), seed_counts)


class Step(NamedTuple):
    """How the walk reached a node: from which seed, and by which predicate (None: a seed)."""

    origin: ox.NamedNode
    by: ox.NamedNode | None


def _next_tiers(
    added: Sequence[ox.Triple],
    steps: dict[ox.NamedNode, Step],
    predicates: Mapping[object, object],
) -> list[list[ox.NamedNode]]:
    """The next hop's frontier in two tiers: the nodes an edge whose predicate answers a word of
    the question reached (a step of a path the question walks), then the others. When the size
    cap binds, the first tier takes its turns first: on a node with many edges that look like
    the question, the one its path goes on from is not crowded out by the others' neighbours.
    Within a tier the nodes take turns by the seed they were reached from and the predicate
    that reached them, each seed's first node by each predicate before any second, in the order
    they were reached: a seed's one "director" edge ranked below twenty edges of a predicate
    whose label holds more of the question's words still gives the director an early turn, and
    a second seed's director (two films compared) as early a turn as the first seed's.
    `steps` holds how each node reached so far was reached; the new nodes are added to it."""
    new: dict[ox.NamedNode, tuple[Step, bool]] = {}
    for edge in added:
        answers = edge.predicate in predicates
        ends = (edge.subject, edge.object)
        origin = next(steps[end].origin for end in ends if end in steps)
        for node in ends:
            if isinstance(node, ox.NamedNode) and node not in steps:
                step, answered = new.get(node, (Step(origin, edge.predicate), answers))
                if answers and not answered:
                    step, answered = Step(origin, edge.predicate), True
                new[node] = (step, answered)
    steps.update((node, step) for node, (step, _) in new.items())
    tiers: list[list[ox.NamedNode]] = []
    for tier in (True, False):
        turns: Counter[Step] = Counter()
        keys: list[tuple[int, int, ox.NamedNode]] = []
        for order, (node, (step, answers)) in enumerate(new.items()):
            if answers == tier:
                keys.append((turns[step], order, node))
                turns[step] += 1
        tiers.append([node for _, _, node in sorted(keys, key=lambda key: key[:2])])
    return tiers


def _parallel(nodes: Sequence[ox.NamedNode], steps: Mapping[ox.NamedNode, Step]
              ) -> list[ox.NamedNode]:
    """The nodes that one predicate reached from different seeds: the directors of two films a
    question compares."""
    origins: dict[ox.NamedNode | None, set[ox.NamedNode]] = {}
    for node in nodes:
        origins.setdefault(steps[node].by, set()).add(steps[node].origin)
    return [node for node in nodes
            if steps[node].by is not None and len(origins[steps[node].by]) > 1]


def _parallel_first(
    parallel: Sequence[ox.NamedNode],
    steps: Mapping[ox.NamedNode, Step],
    ranked: Mapping[ox.NamedNode, list[ox.Triple]],
    predicates: Mapping[object, object],
) -> dict[ox.NamedNode, list[ox.Triple]]:
    """The ranked edges of `_parallel` nodes, each node's edges by a predicate that answers a
    word of the question (`predicates`) and that such a node of another seed has too, in the
    same direction, first, the best ranked at both first: a comparison asks the same of each
    option, so of a director's several edges that answer "country" one use each, the one the
    other director ranks high as well goes on the path, whatever else each hub's noise holds.
    Before all of them go such edges that reach the same neighbour as such an edge of another
    seed's node: a value the options share ("German", one of a director's three countries of
    citizenship and the other director's one) is what "the same country" asks about, as the
    selector reads it (`tgsparql.asking.llm.paths.best`). The other edges keep their order
    after them."""
    places: dict[tuple[ox.NamedNode | None, ox.NamedNode, bool], dict[ox.NamedNode, int]] = {}
    reaches: dict[tuple[ox.NamedNode | None, ox.NamedNode, bool, ox.Term], set[ox.NamedNode]] = {}
    for node in parallel:
        step = steps[node]
        for place, edge in enumerate(ranked[node]):
            if edge.predicate not in predicates:
                continue
            way = (step.by, edge.predicate, edge.subject == node)
            by_origin = places.setdefault(way, {})
            by_origin[step.origin] = min(place, by_origin.get(step.origin, place))
            reaches.setdefault((*way, _other_end(edge, node)), set()).add(step.origin)
    reordered = {}
    for node in parallel:
        origin, by = steps[node]
        keys = []
        for place, edge in enumerate(ranked[node]):
            way = (by, edge.predicate, edge.subject == node)
            others = [at for seed, at in places.get(way, {}).items() if seed != origin]
            shared = reaches.get((*way, _other_end(edge, node)), set()) - {origin}
            keys.append((not shared, max(place, min(others)) if others else len(ranked[node]),
                         place))
        reordered[node] = [ranked[node][place] for *_, place in sorted(keys)]
    return reordered


def _other_end(edge: ox.Triple, node: ox.NamedNode) -> ox.Term:
    return edge.object if edge.subject == node else edge.subject


@dataclass
class RankedQuery:
    """Each node's best RANK_WINDOW × `triple_limit` edges in the order the limit cuts them
    (`_in_turns`), found once per node.

    The first request of a hop (retrieve_degrees.rq, the whole frontier) tells the nodes with
    more than RANK_WHOLE_UP_TO edges (a seed's are counted); on the first hop it also finds the
    stems' holders and reads the seeds' first RANK_WHOLE_UP_TO + 1 edges, all of a seed's that
    has no more, so that hop needs no second request. On later hops the second
    (retrieve_subgraph.rq) reads the edges of the nodes that have no more, ranked here, and the
    edges of the bigger nodes that are not seeds that can rank first, ranked here too; the
    bigger seeds are ranked by the store (retrieve_ranked.rq), NODES_PER_QUERY a request.
    Ranking a small node here keeps exactly the edges the store's ranking would, at the cost
    of reading them, which the unranked query did too.
    """

    store: Store
    excluded: Sequence[ox.NamedNode]
    stems: Sequence[str]
    seeds: Sequence[ox.NamedNode]
    triple_limit: int
    relations: frozenset[str] | None = None
    """The stems a predicate's label answers the question by; None: all of `stems`."""
    kinds: frozenset[str] = frozenset()
    """The stems a predicate's label answers the question word by at a node that is no seed
    (`retrieve`); they match no neighbour's label."""
    candidates: dict[ox.NamedNode, int] = field(default_factory=dict)
    best: dict[ox.NamedNode, list[ox.Triple]] = field(default_factory=dict)
    holders: dict[object, set[str]] | None = None
    """The terms whose labels hold the question's stems, and which (`_stem_holders`); read
    with the first hop's degrees."""
    predicates: dict[object, list[str]] = field(default_factory=dict)
    """Those of them used as predicates whose label holds a relation stem, with those."""
    beyond: dict[object, list[str]] = field(default_factory=dict)
    """As `predicates`, a kind stem counted too: at a node that is no seed."""
    named: dict[str, int] = field(default_factory=dict)
    """How many of the stems each holder's label holds, by its IRI (`_best`)."""
    asked: dict[str, int] = field(default_factory=dict)
    """How many relation stems each of `predicates` holds, by its IRI (`_best`)."""
    asked_beyond: dict[str, int] = field(default_factory=dict)
    """As `asked`, of `beyond`."""

    @cached_property
    def seed_iris(self) -> frozenset[str]:
        return frozenset(seed.value for seed in self.seeds)

    def ranked(
        self, nodes: Sequence[ox.NamedNode], per_node: int
    ) -> dict[ox.NamedNode, list[ox.Triple]]:
        """Each node's best `per_node` (at most RANK_WINDOW × `triple_limit`) edges, best
        first."""
        missing = [node for node in dict.fromkeys(nodes) if node not in self.best]
        if missing:
            self._read(missing)
        return {node: self.best[node][:per_node] for node in nodes}

    def _read(self, nodes: Sequence[ox.NamedNode]) -> None:
        degrees, whole = self._degrees(nodes)
        for seed in self.seeds:
            if seed in degrees:
                self.candidates.setdefault(seed, degrees[seed])
        small = [node for node in nodes if degrees.get(node, 0) <= RANK_WHOLE_UP_TO]
        over = [node for node in nodes if degrees.get(node, 0) > RANK_WHOLE_UP_TO]
        seeds = set(self.seeds)
        if whole is not None:
            # Read with their counts (schema predicates included, as the count counts them).
            over += [node for node in small if not self._rank_whole(node, whole.get(node, []))]
            small = []
        hubs = [node for node in over if node not in seeds]
        while small or hubs:
            # A node that grew past RANK_WHOLE_UP_TO since the count is asked again as bigger.
            small = self._read_edges(small, hubs)
            over += small
            hubs = [node for node in small if node not in seeds]
            small = []
        over = [node for node in over if node in seeds]
        for start in range(0, len(over), NODES_PER_QUERY):
            batch = over[start : start + NODES_PER_QUERY]
            self.best.update(self._rank(batch, self._select(batch)))

    def _read_edges(
        self, small: Sequence[ox.NamedNode], hubs: Sequence[ox.NamedNode]
    ) -> list[ox.NamedNode]:
        """In one request (retrieve_subgraph.rq), the edges of the nodes read whole, ranked
        here, and the best edges of nodes with many edges that are not seeds, from those that
        match the question. Returns the nodes read whole that gave more than RANK_WHOLE_UP_TO
        edges."""
        holders = self.holders or {}
        neighbours = sorted((term for term in holders if isinstance(term, ox.NamedNode)), key=str)
        by_value = len(neighbours) * len(hubs) <= NEIGHBOURS_BY_VALUE
        rows = self._select_edges(small, hubs, neighbours if by_value else None)
        read, matches = _split_rows(
            rows, small, hubs, holders if by_value else {}, self.beyond
        )
        grown = [node for node, edges in zip(small, read) if not self._rank_whole(node, edges)]
        for node, rows_of_node in matches.items():
            self.best[node] = _best_matches(node, rows_of_node, self.triple_limit)
        return grown

    def _rank_whole(self, node: ox.NamedNode, edges: Sequence[_Edge]) -> bool:
        """Ranks the edges of a node read whole; False, ranking nothing, when it gave more than
        RANK_WHOLE_UP_TO (it grew since its count): it is ranked as the bigger node it is. An
        edge with a blank node counts, as the count counts it, and is dropped after the test.
        Only a seed's edges to other seeds score as such: a node the walk reached from a seed
        has its path back already, and on a hub its other edges to the seeds are as likely
        noise as the rest."""
        if len(edges) > RANK_WHOLE_UP_TO:
            return False
        kept = [edge for edge in edges if not isinstance(edge[0], ox.BlankNode)]
        seed = node.value in self.seed_iris
        self.best[node] = _best(node, kept, self.seed_iris if seed else frozenset(), self.named,
                                self.asked if seed else self.asked_beyond, self.triple_limit)
        return True

    def _select_edges(
        self,
        small: Sequence[ox.NamedNode],
        hubs: Sequence[ox.NamedNode],
        neighbours: Sequence[ox.NamedNode] | None,
    ) -> list[Solution]:
        return self.store.run(
            "retrieve_subgraph",
            nodes=small,
            hubs=hubs,
            stems=self.stems,
            predicates=self.beyond,
            neighbours=neighbours,
            excluded=self.excluded,
            matches_up_to=MATCHES_UP_TO,
        ).rows

    def _stem_holders(self, rows: list[Solution]) -> dict[object, set[str]]:
        """Which terms' labels hold which of the question's stems, and which of those terms
        are predicates (`predicates`), from the rows of _stem_holders.rq. A stem more than
        COMMON_STEM terms hold tells nothing apart: it is dropped from `stems`, so the store's
        ranking of the larger nodes does not use it either."""
        by_stem: dict[str, list[object]] = {}
        predicates: set[object] = set()
        for row in rows:
            stem = row.get("stem")
            if isinstance(stem, ox.Literal) and row.get("term") is not None:
                by_stem.setdefault(stem.value, []).append(row["term"])
            elif isinstance(row.get("predicate"), ox.NamedNode):
                predicates.add(row["predicate"])
        telling = {stem: terms for stem, terms in by_stem.items() if len(terms) <= COMMON_STEM}
        kinds = self.kinds - (self.relations or set())
        self.stems = sorted(stem for stem in telling if stem not in kinds)
        held_by: dict[object, set[str]] = {}
        for stem, terms in telling.items():
            for term in terms:
                held_by.setdefault(term, set()).add(stem)
        relations = self.relations

        def answering(counted: frozenset[str]) -> dict[object, list[str]]:
            return {
                term: held
                for term in sorted(predicates & held_by.keys(), key=str)
                if (held := sorted(stem for stem in held_by[term] if stem in counted
                                   or relations is None and stem not in kinds))
            }

        self.predicates = answering(relations or frozenset())
        self.beyond = answering((relations or frozenset()) | kinds)
        self.asked = {term.value: len(held) for term, held in self.predicates.items()
                      if isinstance(term, ox.NamedNode)}
        self.asked_beyond = {term.value: len(held) for term, held in self.beyond.items()
                             if isinstance(term, ox.NamedNode)}
        return {term: held - kinds for term, held in held_by.items() if held - kinds}

    def _degrees(
        self, nodes: Sequence[ox.NamedNode]
    ) -> tuple[dict[ox.NamedNode, int], dict[ox.NamedNode, list[_Edge]] | None]:
        """Edges touching each seed, counted up to COUNT_UP_TO + 1 (for the record), and
        RANK_WHOLE_UP_TO + 1 for any other node that has more than RANK_WHOLE_UP_TO (one with
        fewer has no entry: it is read whole); on the first hop also the stems' holders
        (`_stem_holders`) and each node's first RANK_WHOLE_UP_TO + 1 edges, which are all
        the edges of a node counted no bigger (None on later hops: a frontier there has
        bigger nodes, whose first edges would be read for nothing)."""
        first = self.holders is None
        rows = self.store.run(
            "retrieve_degrees",
            nodes=nodes,
            seeds=self.seeds,
            stems=self.stems if first else [],
            whole=first,
            rank_whole_up_to=RANK_WHOLE_UP_TO,
            count_up_to=COUNT_UP_TO,
            common_stem=COMMON_STEM,
        ).rows
        degrees: dict[ox.NamedNode, int] = {}
        whole: dict[ox.NamedNode, list[_Edge]] | None = {} if first else None
        for row in rows:
            i = row.get("i")
            if not isinstance(i, ox.Literal):
                continue
            node, degree, p = nodes[int(i.value)], row.get("degree"), row.get("p")
            if isinstance(degree, ox.Literal):
                degrees[node] = int(degree.value)
            elif p is None:
                # A probe's row: the node has an edge past its first RANK_WHOLE_UP_TO.
                degrees[node] = RANK_WHOLE_UP_TO + 1
            elif whole is not None and isinstance(p, ox.NamedNode):
                edge = _edge_read_whole(row, p)
                if edge is not None:
                    whole.setdefault(node, []).append(edge)
        if first:
            self.holders = self._stem_holders(rows)
            self.named = {
                term.value: len(held) for term, held in self.holders.items()
                if isinstance(term, ox.NamedNode)
            }
        return degrees, whole

    def _select(self, nodes: Sequence[ox.NamedNode]) -> list[Solution]:
        return self.store.run(
            "retrieve_ranked",
            nodes=nodes,
            triple_limit=self.triple_limit * RANK_WINDOW,
            excluded=self.excluded,
            stems=self.stems,
            predicates=self.predicates,
            seeds=self.seeds,
            count_up_to=COUNT_UP_TO,
            rare_uses=RARE_USES,
            matches_up_to=MATCHES_UP_TO,
        ).rows

    def _rank(
        self, nodes: Sequence[ox.NamedNode], rows: list[Solution]
    ) -> dict[ox.NamedNode, list[ox.Triple]]:
        ranked: dict[ox.NamedNode, list[tuple[tuple[object, ...], ox.Triple]]] = {
            node: [] for node in nodes
        }
        for row in rows:
            node = row.get("node")
            if node not in ranked:
                continue
            s, p, o = row.get("s"), row.get("p"), row.get("o")
            if not isinstance(p, ox.NamedNode) or _is_schema(p) or s is None or o is None:
                continue
            score, rarity = row.get("score"), row.get("rarity")
            key = (
                -_number(score),
                _number(rarity) if rarity is not None else COUNT_UP_TO + 1,
                _text(s), p.value, _text(o),
            )
            ranked[node].append((key, ox.Triple(s, p, o)))  # type: ignore[arg-type]
        return {
            node: _in_turns(node, [(key[0] < 0, edge) for key, edge in sorted(found)])
            for node, found in ranked.items()
        }


_Edge = tuple[ox.NamedNode | ox.Literal, ox.NamedNode, bool]
"""An edge as a whole read gives it (retrieve_subgraph.rq, retrieve_degrees.rq): (neighbour,
predicate, whether it goes from the node); a loop twice, once each way. Only the edges kept
become Triples: most of a node's edges are read to be ranked."""


def _edge_read_whole(row: Solution, p: ox.NamedNode) -> _Edge | None:
    """The edge of a row that binds the predicate and the neighbour (?o for an edge from the
    node, ?s for one to it). An edge with a blank node, which the templates do not filter out
    of a whole read, as that costs the store more than it costs here, is the caller's to drop."""
    o = row.get("o")
    edge = (o, p, True) if o is not None else (row.get("s"), p, False)
    return None if edge[0] is None else edge  # type: ignore[return-value]


def _best(
    node: ox.NamedNode,
    edges: Sequence[_Edge],
    seeds: frozenset[str],
    named: Mapping[str, int],
    asked: Mapping[str, int],
    limit: int,
) -> list[ox.Triple]:
    """The ranking of retrieve_ranked.rq applied to all of a node's edges: score (4 to another
    seed, 2 a relation stem of the predicate's label, 1 a stem of the neighbour's), then the
    predicate's rarity at the node, then the terms' strings, subject, predicate, object. `seeds`
    are the seeds' IRIs when the node is one, else none (`RankedQuery._rank_whole`), `named`
    how many stems each IRI's label holds and `asked` how many relation stems each predicate's
    does, as strings: a node's edges are looked up by their neighbour's string, which is
    needed for the order anyway, rather than by the term."""
    uses = Counter(p for _, p, _ in edges)
    # Per predicate once: its count, its string and the score its label gives (a schema one
    # none: it is dropped).
    facts = {
        p: (count, p.value, 2 * asked.get(p.value, 0))
        for p, count in uses.items() if not _is_schema(p)
    }
    own = node.value
    keys: list[tuple[int, int, str, str, str, int]] = []
    kept: list[_Edge] = []
    loops: set[ox.NamedNode] = set()
    for neighbour, p, out in edges:
        fact = facts.get(p)
        if fact is None:
            continue
        count, name, score = fact
        if type(neighbour) is ox.NamedNode:
            text = neighbour.value
            score += named.get(text, 0)
            if text == own:
                # A loop, read both ways, is one edge, and reaches no other seed.
                if p in loops:
                    continue
                loops.add(p)
                out = True
            elif text in seeds:
                score += 4
        else:
            text = _text(neighbour)
        keys.append(
            (-score, count, own, name, text, len(kept)) if out
            else (-score, count, text, name, own, len(kept))
        )
        kept.append((neighbour, p, out))
    keys.sort()
    window = [(key[0] < 0, kept[key[-1]]) for key in keys[: limit * RANK_WINDOW]]
    return _in_turns(node, [
        (scored, ox.Triple(node, p, other) if out else ox.Triple(other, p, node))  # type: ignore[arg-type]
        for scored, (other, p, out) in window
    ])


_Match = tuple[str, ox.Triple, int]
"""An edge of a node with many edges that can rank first: how it matched (a direction of
_matches.rq, or a neighbour named with a stem; a match by the predicate's label names
the predicate too: "out-predicate <p>"), the edge, and the match's weight."""


def _split_rows(
    rows: Sequence[Solution],
    small: Sequence[ox.NamedNode],
    hubs: Sequence[ox.NamedNode],
    named: dict[object, set[str]],
    predicates: dict[object, list[str]],
) -> tuple[list[list[_Edge]], dict[ox.NamedNode, list[_Match]]]:
    """One pass over retrieve_subgraph.rq's rows: a node read whole gets its edges (with those
    to blank nodes, which `RankedQuery._rank_whole` drops), a bigger node its matches. `named`
    are the neighbours named with the question's stems when the request looked them up by
    value, else empty; `predicates` the stems each predicate's label holds."""
    read: list[list[_Edge]] = [[] for _ in small]
    matches: dict[ox.NamedNode, list[_Match]] = {node: [] for node in hubs}
    whole = len(small)
    for row in rows:
        i, p = row.get("i"), row.get("p")
        if not isinstance(i, ox.Literal) or not isinstance(p, ox.NamedNode):
            continue
        place = int(i.value)
        if place < whole:
            found = _edge_read_whole(row, p)
            if found is not None:
                read[place].append(found)
            continue
        if _is_schema(p):
            continue
        node = hubs[place - whole]
        edge = ox.Triple(row.get("s", node), p, row.get("o", node))  # type: ignore[arg-type]
        direction = row.get("dir")
        if isinstance(direction, ox.Literal):
            way = direction.value
            if way.endswith("predicate"):
                # One match an edge of this predicate, weighing 2 a stem its label holds.
                matches[node].append((f"{way} {p}", edge, 2 * len(predicates.get(p, ()))))
            else:
                matches[node].append((way, edge, 1))
            continue
        # An edge to a neighbour named with the question's stems (one match a stem).
        way, neighbour = (
            ("out-neighbour", edge.object) if "o" in row else ("in-neighbour", edge.subject)
        )
        matches[node].extend((way, edge, 1) for _ in named.get(neighbour, ()))
    return read, matches


def _best_matches(node: ox.NamedNode, matches: Sequence[_Match], limit: int
                  ) -> list[ox.Triple]:
    """A bigger node's best edges by the sum of their matches' weights, then the rarity of
    their predicate (its edges that matched by its label, the fewer the earlier; an edge
    brought only by its neighbour counts as not rare), then the terms' strings. A
    way of matching with more than MATCHES_UP_TO matches counts for
    none of them: by a neighbour's label one match a stem, by a predicate's one an edge of
    that predicate (so a thousand edges of other predicates whose labels hold the question's
    words leave a predicate its few edges)."""
    counts = Counter(way for way, _, _ in matches)
    scores: dict[ox.Triple, int] = {}
    rarity: dict[ox.Triple, int] = {}
    for way, edge, weight in matches:
        count = counts[way]
        if count <= MATCHES_UP_TO:
            scores[edge] = scores.get(edge, 0) + weight
            if "predicate" in way:
                rarity[edge] = min(count, rarity.get(edge, count))
    best = sorted(
        scores,
        key=lambda edge: (-scores[edge], rarity.get(edge, COUNT_UP_TO + 1),
                          _text(edge.subject), edge.predicate.value, _text(edge.object)),
    )[: limit * RANK_WINDOW]
    return _in_turns(node, [(True, edge) for edge in best])


def _in_turns(node: ox.NamedNode, ranked: Sequence[tuple[bool, ox.Triple]]) -> list[ox.Triple]:
    """A node's best edges (RANK_WINDOW × `triple_limit` of them, best first), the edges that
    match the question (True: they scored) taking turns by predicate and direction: each one's
    best edge, in rank order, before any one's second; the limit cuts after this. A film's 28
    look-alike "date of birth" edges, which answer "born" and "earlier" both, leave its one
    "director" edge a place among the first; a predicate's many edges still come in their
    order, and edges that match nothing after them all, as before."""
    turns: Counter[tuple[ox.NamedNode, bool]] = Counter()
    keys: list[tuple[int, int, int]] = []
    for place, (matched, edge) in enumerate(ranked):
        way = (edge.predicate, edge.subject == node)
        keys.append((0, turns[way], place) if matched else (1, 0, place))
        turns[way] += matched
    keys.sort()
    return [ranked[place][1] for _, _, place in keys]


def _number(term: object) -> float:
    return float(term.value) if isinstance(term, ox.Literal) else 0.0


def _text(term: object) -> str:
    """The term's string as SPARQL's STR gives it, for the same tie order as the store's: a
    sort key, so "" (first, as an unbound STR sorts) where terms.term_text gives None."""
    return term.value if isinstance(term, (ox.NamedNode, ox.Literal)) else ""


def _hop(
    query: HopQuery,
    tiers: Sequence[Sequence[ox.NamedNode]],
    subgraph: dict[ox.Triple, None],
    limits: RetrievalLimits,
    steps: Mapping[ox.NamedNode, Step],
) -> list[ox.Triple]:
    """One hop over the frontier's tiers (`_next_tiers`); returns the edges it added to
    `subgraph`.

    Every row the store returns costs, so when the size cap binds each node is first asked
    only for about as many edges as its turns can use: a node of the first tier its share of
    what is left among that tier, any other its share among the whole frontier. Nodes whose
    short lists run out before the cap is reached are asked again for their full
    `triple_limit`. One request a hop either way: the tiers are asked together. The nodes one
    predicate reached from different seeds have their edges ordered by what they share
    (`_parallel_first`) before the cut, from their full lists, which the ranking has already.
    """
    cap, limit = limits.max_subgraph_size, limits.triple_limit
    frontier = [node for tier in tiers for node in tier]
    left = cap - len(subgraph)
    wanted = {
        node: min(limit, max(MIN_EDGES_PER_NODE, TURN_SLACK * math.ceil(left / size)))
        for tier, size in zip(tiers, (len(tiers[0]) or 1, len(frontier)))
        for node in tier
    } if frontier else {}
    per_node = max(wanted.values(), default=limit)
    edges = query.ranked(frontier, per_node)
    parallel = _parallel(frontier, steps)
    if parallel:
        edges.update(_parallel_first(parallel, steps,
                                     query.ranked(parallel, limit * RANK_WINDOW),
                                     query.predicates))
    edges = {node: found[: wanted[node]] for node, found in edges.items()}
    if min(wanted.values(), default=limit) < limit:
        _, ran_out = _take_in_turns(tiers, edges, dict(subgraph), cap)
        cut_short = [
            node for node in frontier if node in ran_out and len(edges[node]) >= wanted[node]
        ]
        if cut_short:
            edges.update(query.ranked(cut_short, limit))
    added, _ = _take_in_turns(tiers, edges, subgraph, cap)
    return added


def _schema_predicates_in_use(store: Store) -> list[ox.NamedNode]:
    rows = store.run("schema_predicates",
                     schema_candidates=vocab.WELL_KNOWN_SCHEMA_PREDICATES).rows
    return sorted(
        (row["schema"] for row in rows
         if isinstance(row.get("schema"), ox.NamedNode)),
        key=str,
    )


_SCHEMA_NAMESPACES = (vocab.RDF, vocab.RDFS, vocab.OWL)


@lru_cache(maxsize=4096)
def _is_schema(predicate: ox.NamedNode) -> bool:
    """Remembered per predicate: a retrieval asks it for each of hundreds of rows, of a few
    dozen predicates."""
    return predicate != vocab.RDF_TYPE and predicate.value.startswith(_SCHEMA_NAMESPACES)


def _take_in_turns(
    tiers: Sequence[Sequence[ox.NamedNode]],
    per_node: dict[ox.NamedNode, list[ox.Triple]],
    subgraph: dict[ox.Triple, None],
    cap: int,
) -> tuple[list[ox.Triple], set[ox.NamedNode]]:
    """Tier after tier, round-robin over the tier's nodes' edges (each node's in rank order)
    until the cap.

    Returns the edges added and the nodes whose edges ran out before the cap was reached.
    """
    added: list[ox.Triple] = []
    ran_out: set[ox.NamedNode] = set()
    for tier in tiers:
        queues = [(node, iter(per_node[node])) for node in tier]
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
