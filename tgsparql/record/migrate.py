"""Bring records written by older versions up to the current record (docs/spec.md §2, §10).

The current record carries fields that exist only so that BI aggregates read one triple per
session instead of joining: the session's UTC day (tg:day, and tg:completeDay or tg:failedDay
once it is closed), the Selection's tg:selectedEdgeCount, each LLM call's model with its
token counts on the session (tg:selectionUsage, tg:answerUsage), the documents that state
the selected facts (tg:factDocument, tg:sourceDocument, tg:sourceDocumentCount), each day that
holds sessions saying so (tg:date), and each Answer's checks (tg:citedEdgeCount, and
tg:uncitedSentenceCount from its text in the librarian and its recorded citations of its
selection's edges, as `tgsparql.asking.citations` counts them), and on the session of an Answer
citing none of its selected edges, its day again (tg:uncitedDay). Each is derived from its own
session's record alone (the documents from the extraction provenance as it is when migrating),
so adding it is safe beside live writers and `sessions delete`. A migration finds the records
that lack them, and adds them in batches: each batch is one INSERT DATA (all or nothing), and a
record is pending until its batch lands, so an interrupted run is finished by running it again,
and a run with nothing pending changes nothing. Extraction provenance written before names were
linked and facts checked (no tg:Mention, no tg:linkMode, no tg:unsupported) needs nothing: those
are absent where nothing was decided.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph as ox

from tgsparql.asking.citations import uncited_sentences
from tgsparql.asking.provenance import call_usage, document_iris
from tgsparql.rdf import vocab
from tgsparql.rdf.terms import term_datetime, term_text
from tgsparql.stores.store import Store

BATCH = 2000
"""Records (sessions or selections) per update."""

MIGRATE_HINT = "run `tgsparql migrate --store DIR` once to bring them up to date"


@dataclass
class Pending:
    """What a migration would add: the sessions, selections and LLM calls missing a field, the
    selections whose facts' documents are not recorded (`sourced`), the answers not checked
    (`answers`), and the sessions of answers citing nothing that do not say so (`uncited`)."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    selections: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    sourced: list[dict[str, Any]] = field(default_factory=list)
    days: list[dict[str, Any]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)
    uncited: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return (len(self.sessions) + len(self.selections) + len(self.calls) + len(self.sourced)
                + len(self.days) + len(self.answers) + len(self.uncited))

    @property
    def answers_without_text(self) -> int:
        """Answers whose text the librarian lacks: their uncited sentences cannot be counted."""
        return sum(1 for answer in self.answers if answer["uncited"] is None)


def pending(store: Store) -> Pending:
    """The records of every collection that lack a field the current templates write."""
    sessions = [
        {"graph": row["graph"], "session": row["session"],
         "started": term_datetime(row["started"]), "status": term_text(row.get("status"))}
        for row in store.run("migrate/pending_sessions").rows
        if term_datetime(row["started"]) is not None
    ]
    selections = [
        {"graph": row["graph"], "selection": row["selection"],
         "selected": int(row["selected"].value)}
        for row in store.run("migrate/pending_selections").rows
    ]
    calls = [
        {"graph": row["graph"], "session": row["session"], "stage": row["stage"].value,
         "call": call_usage(row["model"].value, _integer(row.get("in")),
                            _integer(row.get("out")))}
        for row in store.run("migrate/pending_usage").rows
        if isinstance(row["model"], ox.Literal)
    ]
    days = [
        {"graph": row["graph"], "started": dt.datetime.combine(
            dt.date.fromisoformat(row["day"].value), dt.time(), dt.timezone.utc)}
        for row in store.run("migrate/pending_days").rows
        if isinstance(row["day"], ox.Literal) and row["day"].datatype == vocab.XSD_DATE
    ]
    uncited = [
        {"graph": row["graph"], "session": row["session"], "started": term_datetime(row["started"])}
        for row in store.run("migrate/pending_uncited").rows
        if term_datetime(row["started"]) is not None
    ]
    return Pending(sessions, selections, calls, _sourced(
        store.run("migrate/pending_documents").rows,
        lambda: store.run("migrate/fact_documents").rows), days,
        _checked(store.run("migrate/pending_answers").rows), uncited)


def migrate(store: Store, todo: Pending, *, batch: int = BATCH,
            progress: Callable[[int], None] | None = None) -> int:
    """Write the pending fields, `batch` records per update, then mark every collection with
    this version's record format; returns the updates made for the pending records."""
    updates = 0
    for sessions, selections, calls, sourced, days, answers, uncited in _batches(todo, batch):
        store.run("migrate/record_fields", dated_sessions=sessions,
                  counted_selections=selections, used_models=calls, sourced_selections=sourced,
                  session_days=days, checked_answers=answers, uncited_sessions=uncited)
        updates += 1
        if progress is not None:
            progress(len(sessions) + len(selections) + len(calls) + len(sourced) + len(days)
                     + len(answers) + len(uncited))
    store.run("migrate/mark_collections", format=vocab.RECORD_FORMAT)
    return updates


def needs_migration(store: Store, graph: ox.NamedNode) -> bool:
    """Whether the collection holds a record an older version wrote (checked when serving):
    a collection marked with this version's record format is not read record by record."""
    if store.run("migrate/collection_marked", graph=graph, format=vocab.RECORD_FORMAT).boolean:
        return False
    return store.run("migrate/collection_pending", graph=graph).boolean


def _sourced(
    rows: Sequence[dict[str, Any]], fact_documents: Callable[[], Sequence[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Per pending Selection (`rows`: its edge selections and their facts), its edge selections
    with the documents that state their facts (`fact_documents`, read only when some Selection
    is pending), and those documents once (docs/spec.md §2), as record_selection.rq writes
    them."""
    stating: dict[Any, set[str]] = {}
    for row in fact_documents() if rows else ():
        stating.setdefault(row["edge"], set()).add(row["document"].value)
    selections: dict[tuple[Any, Any], dict[Any, set[str]]] = {}
    for row in rows:
        edges = selections.setdefault((row["graph"], row["selection"]), {})
        if row.get("edgeSelection") is not None:
            edges.setdefault(row["edgeSelection"], set()).update(
                stating.get(row["edge"], ()))
    return [
        {"graph": graph, "selection": selection,
         "edges": [{"iri": edge, "documents": document_iris(found)}
                   for edge, found in edges.items()],
         "documents": document_iris(set().union(*edges.values()))}
        for (graph, selection), edges in selections.items()
    ]


def _checked(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per pending Answer (`rows`: its text, the edge selections it cites and its citations),
    the checks the current recorder writes: the edge selections cited, and the sentences that
    cite none (None without the text)."""
    answers: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in rows:
        answer = answers.setdefault((row["graph"], row["answer"]), {
            "text": term_text(row.get("content")), "cites": set(), "citations": {}})
        if row.get("cites") is not None:
            answer["cites"].add(row["cites"])
        if row.get("citation") is not None and _integer(row.get("offset")) is not None:
            answer["citations"][row["citation"]] = (_integer(row["offset"]),
                                                    term_text(row.get("sentence")) or "")
    return [
        {"graph": graph, "answer": iri, "cited": len(answer["cites"]),
         "uncited": None if answer["text"] is None
         else uncited_sentences(answer["text"], answer["citations"].values())}
        for (graph, iri), answer in answers.items()
    ]


_KINDS = ("session", "selection", "call", "sourced", "day", "answer", "uncited")


def _batches(todo: Pending, size: int) -> list[tuple[Sequence[Any], ...]]:
    items: list[tuple[str, dict[str, Any]]] = [("session", s) for s in todo.sessions]
    items += [("selection", s) for s in todo.selections]
    items += [("call", c) for c in todo.calls]
    items += [("sourced", s) for s in todo.sourced]
    items += [("day", d) for d in todo.days]
    items += [("answer", a) for a in todo.answers]
    items += [("uncited", u) for u in todo.uncited]
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    return [tuple([i for kind, i in chunk if kind == wanted] for wanted in _KINDS)
            for chunk in chunks]


def _integer(term: Any) -> int | None:
    """An xsd:integer's value; None for anything else (the shapes report such a token count)."""
    if isinstance(term, ox.Literal) and term.datatype == vocab.XSD_INTEGER:
        return int(term.value)
    return None
