"""Retention: which sessions to delete, and deleting them with everything they own.

Which quads a session owns is defined once, in `queries/_session_owned.rq`; the dry run counts
exactly what the delete removes.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pyoxigraph as ox

from tgsparql.asking.provenance import now
from tgsparql.rdf.iris import ROLLUP, SessionIds
from tgsparql.rdf.vocab import Collection
from tgsparql.stores.store import Store

BATCH = 200
"""Sessions per update: small enough for any endpoint's request size limit."""
_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_DURATION = re.compile(r"(?:\d+[wdhms])+")
_PART = re.compile(r"(\d+)([wdhms])")


class RetentionError(ValueError):
    """Bad retention input: a duration that does not parse, or a session that is not there."""


def parse_duration(text: str) -> dt.timedelta:
    """`30d`, `12h`, `90m`, `45s`, `2w`, or several at once (`1d12h`); must be positive."""
    compact = text.strip().lower()
    if not _DURATION.fullmatch(compact):
        raise RetentionError(
            f"invalid duration {text!r}: use a number and a unit, w (weeks), d (days), "
            "h (hours), m (minutes) or s (seconds), e.g. 30d, 12h, 90m, 1d12h"
        )
    amounts: dict[str, int] = {}
    for number, unit in _PART.findall(compact):
        amounts[_UNITS[unit]] = amounts.get(_UNITS[unit], 0) + int(number)
    try:
        duration = dt.timedelta(**amounts)
    except OverflowError:
        raise RetentionError(f"duration {text!r} is too long") from None
    if duration <= dt.timedelta(0):
        raise RetentionError(f"duration {text!r} is zero: it would select every session")
    return duration


@dataclass(frozen=True)
class Selected:
    """A session chosen for deletion and how many quads it owns."""

    ids: SessionIds
    quads: int


def select_sessions(
    store: Store,
    collection: Collection,
    *,
    older_than: dt.timedelta | None = None,
    sessions: Sequence[str] = (),
    at: dt.datetime | None = None,
) -> list[Selected]:
    """The sessions started more than `older_than` before `at` (default: now), or the given
    session IRIs (or UUIDs), each with its quad count. An unknown session is an error."""
    graph = collection.graph
    if older_than is not None:
        try:
            cutoff = (at or now()) - older_than
        except OverflowError:
            raise RetentionError("the duration reaches back before year 1") from None
        rows = store.run("sessions_older_than", graph=graph, cutoff=cutoff).rows
        ids = [SessionIds.from_session_iri(row["session"].value) for row in rows
               if isinstance(row.get("session"), ox.NamedNode)]
    else:
        try:
            ids = list(dict.fromkeys(SessionIds.from_session_iri(s) for s in sessions))
        except ValueError as error:
            raise RetentionError(str(error)) from None
    counts = _owned(store, graph, ids)
    missing = [i.session.value for i in ids if i.session.value not in counts]
    if older_than is None and missing:
        raise RetentionError(f"no session {missing[0]} in collection {collection.name!r}")
    return [Selected(i, counts[i.session.value]) for i in ids if i.session.value in counts]


def delete_sessions(store: Store, collection: Collection, selected: Sequence[Selected]) -> int:
    """Delete the sessions with every quad they own, and the collection's rollup with the first
    of them (it sums them: `tgsparql.record.rollup.roll_up` writes it again); the number of
    quads removed."""
    graph = collection.graph
    for start in range(0, len(selected), BATCH):
        batch = [s.ids for s in selected[start : start + BATCH]]
        store.run("sessions_delete", graph=graph, sessions=batch, rollup=ROLLUP)
    return sum(s.quads for s in selected)


def _owned(store: Store, graph: ox.NamedNode, ids: Sequence[SessionIds]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        for row in store.run("sessions_owned", graph=graph, sessions=batch).rows:
            counts[row["session"].value] = int(row["quads"].value)
    return counts
