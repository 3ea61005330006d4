"""Linking extracted names to the entities of the KG they are ingested into (docs/spec.md §8).

A name the extractor gives a subject or object is looked up in the store's label index as
grounding looks up a question's names (`tgsparql.asking.grounding.match_names`): a label equal
to it, else a label it fits as a name is written (a surname, a shortened or reordered name,
"Mr. Vermeer", "Rembrandt's"). One entity fitting best is linked. When several fit alike, the
document's other names decide: the entities they were linked to without doubt are its context,
and the candidate most of them speak of (joined to it by a KG edge, or being it) is linked.
Only a name that fits nothing, or that its context cannot decide, gets an IRI of its own
(`entity_iri`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

import pyoxigraph as ox

from tgsparql.asking.grounding import NameMatch, match_names
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import entity_iri
from tgsparql.stores.store import Store

LinkMode = Literal["none", "exact", "names"]
LINK_MODES: Final[tuple[LinkMode, ...]] = ("none", "exact", "names")
"""none: mint every name an IRI; exact: link names equal to a label; names: as grounding does."""
DEFAULT_LINK_MODE: Final[LinkMode] = "names"


class LinkMethod(vocab.TgTerms):
    """How a name came to denote its entity, as the extraction provenance records it."""

    LABEL = "LinkedByLabel"
    """The name is a label of the entity (up to case, accents and punctuation)."""
    NAME = "LinkedByName"
    """The name fits the entity's label as a name written shorter or otherwise (`name_fit`)."""
    CONTEXT = "LinkedByContext"
    """Several entities fit alike, and the document's other names chose this one."""
    MINTED = "Minted"
    """No entity fits, or the context could not choose: the name got an IRI of its own."""


@dataclass(frozen=True)
class Link:
    """What a name of a document denotes, and why."""

    entity: ox.NamedNode
    method: LinkMethod
    candidates: int
    """The entities of the store that fit the name best (0: none fits)."""

    @property
    def linked(self) -> bool:
        return self.method is not LinkMethod.MINTED


def link_names(store: Store, names: Iterable[str], mode: LinkMode = DEFAULT_LINK_MODE
               ) -> dict[str, Link]:
    """Each of a document's entity names → the entity it denotes; two queries at most."""
    found = {name: Link(entity_iri(name), LinkMethod.MINTED, 0) for name in dict.fromkeys(names)}
    if mode == "none" or not found:
        return found
    matches = match_names(store, found, partial=mode == "names")
    sure = {name: match for name, match in matches.items() if len(match.entities) == 1}
    for name, match in sure.items():
        method = LinkMethod.LABEL if match.by_label else LinkMethod.NAME
        found[name] = Link(match.entities[0], method, 1)
    unsure = {name: match for name, match in matches.items() if len(match.entities) > 1}
    chosen = _by_context(store, unsure, {match.entities[0] for match in sure.values()})
    for name, match in unsure.items():
        entity = chosen.get(name)
        found[name] = Link(entity or found[name].entity,
                           LinkMethod.CONTEXT if entity else LinkMethod.MINTED,
                           len(match.entities))
    return found


def _by_context(store: Store, unsure: dict[str, NameMatch], anchors: set[ox.NamedNode]
                ) -> dict[str, ox.NamedNode]:
    """The one entity the document's context picks for each name that fits several alike: the
    one that most anchors (the entities its other names denote without doubt) speak of, each
    anchor a KG edge joins it to counting one, and being an anchor itself one more. Names it
    cannot decide are absent."""
    if not unsure or not anchors:
        return {}
    candidates = sorted({entity for match in unsure.values() for entity in match.entities},
                        key=lambda node: node.value)
    rows = store.run("link_context", candidates=candidates,
                     anchors=sorted(anchors, key=lambda node: node.value)).rows
    score = Counter(row["candidate"] for row in rows)
    score.update(entity for entity in candidates if entity in anchors)
    chosen: dict[str, ox.NamedNode] = {}
    for name, match in unsure.items():
        top, *rest = sorted(match.entities, key=lambda entity: -score[entity])
        if score[top] > 0 and all(score[entity] < score[top] for entity in rest):
            chosen[name] = top
    return chosen
