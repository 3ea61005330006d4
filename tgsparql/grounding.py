"""Grounding: from a question to the seed entities of the KG it speaks of.

Concepts are the phrases of the question (word n-grams). An entity matches a concept when their
normalised forms are equal, so matching ignores case, accents' composition and punctuation.
Normalised label keys live in the label index graph, written once per label by
`update_label_index`, so grounding is one indexed lookup instead of a scan over every label.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import pyoxigraph as ox

from tgsparql.store import Store
from tgsparql.templates import Templates

MAX_PHRASE_WORDS: Final = 6
MAX_QUESTION_WORDS: Final = 200
INDEX_BATCH: Final = 5000

STOPWORDS: Final = frozenset(
    """a about after all also an and any are as at be been before being between both but by can
    could did do does doing done for from had has have having he her here hers him his how i if
    in into is it its me more most my no nor not of on once only or other our out over own same
    she should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom whose why will with
    would you your yours s""".split()
)

_WORD = re.compile(r"[^\W_]+")


def normalize_label(text: str) -> str:
    """The matching key of a label or phrase: NFKC, case-folded, words joined by one space."""
    return " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def words(text: str) -> list[str]:
    return normalize_label(text).split()


@dataclass(frozen=True)
class Phrase:
    key: str
    start: int
    end: int


@dataclass(frozen=True)
class Grounding:
    concepts: list[str]
    """Phrases of the question that grounding looked for: matched ones and uncovered words."""
    seeds: list[ox.NamedNode]
    """Matched entities, in the order their phrases appear in the question."""


def candidate_phrases(question: str) -> list[Phrase]:
    """Every n-gram of up to MAX_PHRASE_WORDS words that is not made of stopwords alone."""
    tokens = words(question)[:MAX_QUESTION_WORDS]
    phrases = []
    for start in range(len(tokens)):
        for end in range(start + 1, min(start + MAX_PHRASE_WORDS, len(tokens)) + 1):
            span = tokens[start:end]
            if all(token in STOPWORDS for token in span):
                continue
            phrases.append(Phrase(" ".join(span), start, end))
    return phrases


def ground(store: Store, templates: Templates, question: str, entity_limit: int) -> Grounding:
    phrases = candidate_phrases(question)
    if not phrases:
        return Grounding(concepts=[], seeds=[])
    keys = sorted({phrase.key for phrase in phrases})
    rows = store.select(templates.render("ground_entities", keys=keys))
    entities_by_key: dict[str, list[ox.NamedNode]] = {}
    for row in rows:
        entity = row.get("entity")
        if isinstance(entity, ox.NamedNode):
            entities_by_key.setdefault(row["key"].value, []).append(entity)
    for found in entities_by_key.values():
        found.sort(key=lambda node: node.value)

    chosen = _longest_matches([p for p in phrases if p.key in entities_by_key])
    covered = {i for phrase in chosen for i in range(phrase.start, phrase.end)}
    tokens = words(question)[:MAX_QUESTION_WORDS]
    concepts = [phrase.key for phrase in chosen]
    concepts += [
        token
        for i, token in enumerate(tokens)
        if i not in covered and token not in STOPWORDS and token not in concepts
    ]
    seeds: list[ox.NamedNode] = []
    for phrase in chosen:
        for entity in entities_by_key[phrase.key]:
            if entity not in seeds and len(seeds) < entity_limit:
                seeds.append(entity)
    return Grounding(concepts=_unique(concepts), seeds=seeds)


def _longest_matches(matched: list[Phrase]) -> list[Phrase]:
    """Greedy cover: longer phrases first, no two overlapping, returned in question order."""
    chosen: list[Phrase] = []
    taken: set[int] = set()
    for phrase in sorted(matched, key=lambda p: (-(p.end - p.start), p.start)):
        span = set(range(phrase.start, phrase.end))
        if span & taken:
            continue
        chosen.append(phrase)
        taken |= span
    return sorted(chosen, key=lambda p: p.start)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


@dataclass(frozen=True)
class IndexEntry:
    entity: ox.NamedNode
    label: ox.Literal
    key: str


def update_label_index(
    store: Store, templates: Templates, progress: Callable[[int], None] | None = None
) -> int:
    """Index every label not yet indexed; returns how many were added."""
    rows = store.select(templates.render("label_index_pending"))
    entries = []
    for row in rows:
        entity, label = row.get("entity"), row.get("label")
        if isinstance(entity, ox.NamedNode) and isinstance(label, ox.Literal):
            key = normalize_label(label.value)
            if key:
                entries.append(IndexEntry(entity, label, key))
    for start in range(0, len(entries), INDEX_BATCH):
        batch = entries[start : start + INDEX_BATCH]
        store.update(templates.render("label_index_insert", entries=batch))
        if progress is not None:
            progress(len(batch))
    return len(entries)


def rebuild_label_index(store: Store, templates: Templates) -> int:
    store.update(templates.render("label_index_clear"))
    return update_label_index(store, templates)
