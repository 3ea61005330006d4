"""What the KG says a node is: the predicates of the edges it stands in, counted.

A reader of labels alone cannot tell a country reached by "country of citizenship" from a road
reached by "country of origin": both predicates say "country". The KG can: a country is the
object of many edges whose predicates say "country", a road of few or none. The offline selector
reads these roles for the ends it must choose between (`tgsparql.asking.llm.paths.attested`),
one bounded request a question (queries/node_roles.rq), and only when it must choose.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import pyoxigraph as ox

from tgsparql.asking.labels import best_labels, local_name
from tgsparql.stores.store import Store

ROLES_UP_TO: Final = 2000
"""Edges read per node and direction at most: a hub's roles are those of its first edges."""

Roles = Mapping[ox.NamedNode, Counter[tuple[bool, str]]]
"""Per node, the uses of each (is the node the object, predicate label) among its edges."""
RoleReader = Callable[[Sequence[ox.NamedNode]], Roles]
"""Reads the roles of the given nodes from the KG: one request."""


def read_roles(store: Store, nodes: Sequence[ox.NamedNode], up_to: int = ROLES_UP_TO
               ) -> dict[ox.NamedNode, Counter[tuple[bool, str]]]:
    """The roles of `nodes` in `store`'s default graph, each predicate named by its label, of
    each node's first `up_to` edges a direction."""
    unique = sorted({node for node in nodes if isinstance(node, ox.NamedNode)},
                    key=lambda node: node.value)
    if not unique:
        return {}
    rows = store.run("node_roles", nodes=unique, up_to=up_to).rows
    names = best_labels((row.get("p"), row.get("label")) for row in rows)
    uses: dict[tuple[ox.NamedNode, bool, ox.NamedNode], int] = {}
    for row in rows:
        node, incoming, predicate, count = (row.get(name) for name in ("node", "in", "p", "uses"))
        if isinstance(node, ox.NamedNode) and isinstance(predicate, ox.NamedNode) and isinstance(
                count, ox.Literal) and isinstance(incoming, ox.Literal):
            uses[(node, incoming.value == "true", predicate)] = int(count.value)
    roles: dict[ox.NamedNode, Counter[tuple[bool, str]]] = {node: Counter() for node in unique}
    for (node, incoming, predicate), count in uses.items():
        roles[node][(incoming, names.get(predicate) or local_name(predicate.value))] += count
    return roles


def role_reader(store: Store) -> RoleReader:
    """`read_roles` over `store`, for a selection request."""
    return lambda nodes: read_roles(store, nodes)
