"""The rollup: a collection's BI figures for the days that are over (docs/spec.md §2).

The saved BI queries that aggregate every session (sessions per day, tokens by model, the most
cited documents and most selected facts) read the days a rollup holds from its figures, and
only the other days' sessions from the record; so their cost follows the days since the last
rollup, not every session ever recorded. A rollup is written by one command, never by the
sessions (no figure is shared between concurrent writers), and replaced whole: it is computed
again from the record each time, in one update, so a rerun repairs one that no longer sums the
record (after `sessions delete`, which drops it, a restore, or a session closed after its day
was rolled up); the shapes report such a one (shapes/explainability.ttl, `RollupSumsTheRecord`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.iris import (
    ROLLUP, rollup_day_iri, rollup_document_iri, rollup_fact_iri, rollup_usage_iri,
)
from tgsparql.rdf.vocab import Collection
from tgsparql.stores.store import Store

SETTLE = dt.timedelta(hours=1)
"""A day is rolled up once this much of the next has passed (UTC): time for the sessions
started just before midnight to close (a session's tg:completeDay is its start's day; the
pipeline's own limits end one in minutes). A session that closes later makes the rollup differ
from its day, which the shapes report and the next rollup repairs."""


class RollupError(ValueError):
    """A day to roll up through that is not over yet."""


@dataclass(frozen=True)
class Rolled:
    """What a rollup holds: its last day, and how many figures of each kind it wrote."""

    through: dt.date
    days: int
    sessions: int
    models: int
    documents: int
    facts: int

    def summary(self) -> str:
        return (f"rolled up {self.sessions} sessions of {self.days} days through "
                f"{self.through.isoformat()}: {self.models} model and stage figures, "
                f"{self.documents} documents, {self.facts} facts")


def settled(at: dt.datetime) -> dt.date:
    """The last day a rollup may hold at `at`: the last UTC day over for SETTLE already."""
    return (at - SETTLE).astimezone(dt.timezone.utc).date() - dt.timedelta(days=1)


def has_rollup(store: Store, collection: Collection) -> bool:
    return store.run("rollup/exists", graph=collection.graph, rollup=ROLLUP).boolean


def roll_up(store: Store, collection: Collection, *, at: dt.datetime,
            through: dt.date | None = None) -> Rolled:
    """Compute the collection's rollup through `through` (default: the last settled day at
    `at`) from its record and write it in place of the last one."""
    last = settled(at)
    if through is None:
        through = last
    elif through > last:
        raise RollupError(
            f"{through.isoformat()} is not settled yet: a rollup holds days up to "
            f"{last.isoformat()} (the last UTC day over for an hour)")
    graph = collection.graph
    day = ox.Literal(through.isoformat(), datatype=vocab.XSD_DATE)
    days = [
        {"iri": rollup_day_iri(dt.date.fromisoformat(row["day"].value)), "day": row["day"],
         "sessions": _count(row, "sessions"), "complete": _count(row, "complete"),
         "failed": _count(row, "failed"), "uncited": _count(row, "uncited")}
        for row in store.run("rollup/days", graph=graph, through=day).rows
        if isinstance(row.get("day"), ox.Literal) and row["day"].datatype == vocab.XSD_DATE
    ]
    usages = [
        {"iri": rollup_usage_iri(row["stage"].value, row["llm"]), "llm": row["llm"],
         "stage": row["stage"].value, "calls": _count(row, "calls"),
         "in_tokens": _count(row, "inTokens"), "out_tokens": _count(row, "outTokens")}
        for row in store.run("rollup/usage", graph=graph, through=day).rows
        if isinstance(row.get("llm"), ox.NamedNode) and _count(row, "calls")
    ]
    documents = [
        {"iri": rollup_document_iri(row["document"]), "document": row["document"],
         "citations": _count(row, "citations"), "sessions": _count(row, "sessions")}
        for row in store.run("rollup/documents", graph=graph, through=day).rows
        if isinstance(row.get("document"), ox.NamedNode)
        and (_count(row, "citations") or _count(row, "sessions"))
    ]
    facts = [
        {"iri": rollup_fact_iri(row["edge"]), "edge": row["edge"],
         "selections": _count(row, "selections"), "sessions": _count(row, "sessions")}
        for row in store.run("rollup/facts", graph=graph, through=day).rows
        if isinstance(row.get("edge"), ox.Triple | ox.NamedNode) and _count(row, "selections")
    ]
    facts.sort(key=lambda fact: (-fact["selections"], tie_order(fact["edge"])))
    for rank, fact in enumerate(facts, 1):
        fact["rank"] = rank
    store.run("rollup/write", graph=graph, rollup=ROLLUP, through=day, computed=at,
              day_figures=days, usage_figures=usages, document_figures=documents,
              fact_figures=facts)
    return Rolled(through, len(days), sum(d["sessions"] for d in days), len(usages),
                  len(documents), len(facts))


def tie_order(edge: ox.Triple | ox.NamedNode) -> str:
    """The text by which facts selected equally often are ordered, as most_selected_facts.rq
    and the shapes compute it: an edge's IRI (reification), or its terms' texts joined by
    spaces (a term with no text, a blank node or a triple, as none)."""
    if isinstance(edge, ox.NamedNode):
        return edge.value
    return " ".join(part.value if isinstance(part, ox.NamedNode | ox.Literal) else ""
                    for part in (edge.subject, edge.predicate, edge.object))


def _count(row: dict[str, Any], name: str) -> int:
    """An aggregate's value; 0 where the group had none."""
    term = row.get(name)
    return int(term.value) if isinstance(term, ox.Literal) else 0
