"""Grounding: from a question to the seed entities of the KG it speaks of.

Concepts are the phrases of the question (word n-grams). An entity matches a concept when their
matching keys are equal, so matching ignores case, accents, punctuation and a label's
disambiguating suffix ("Ray Taylor (director)" is found as "Ray Taylor"); every name the KG
gives an entity counts (`rdfs:label`, `skos:altLabel`, `schema:alternateName`).
A name the question writes shorter than the KG does ("Edsel Ford" for "Edsel Bryant Ford")
matches too, in any word order ("Ford, Edsel"): a run of capitalised words that no label equals
finds the labels that contain all its words with at most MAX_EXTRA_NAME_WORDS more.
Normalised label keys and their words live in the label index graph, written once per label by
`update_label_index`, so grounding is indexed lookups instead of a scan over every label, all in
one query.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

import pyoxigraph as ox

from tgsparql import vocab
from tgsparql.stems import stem
from tgsparql.store import Solution, Store
from tgsparql.templates import Templates
from tgsparql.text import WORD as _WORD, normalize_label, words

MAX_PHRASE_WORDS: Final = 10
MAX_QUESTION_WORDS: Final = 200
INDEX_BATCH: Final = 1000
"""Labels an update of the index: each update's transaction is held in memory until it commits
(5,000 took some 100 MB more at the peak of a large load, and were no faster)."""
INDEX_VERSION: Final = 3
"""Bumped when the index holds something new; an older index is rebuilt on the next update."""
MAX_EXTRA_NAME_WORDS: Final = 3
NAME_MATCHES_PER_RUN: Final = 2
COMMON_STEM: Final = 1000
"""A stem more names than this hold tells no edges apart: retrieval does not rank by it."""
NAME_CONNECTORS: Final = frozenset(
    "of the and de del della der den di da du la le van von bin ibn al".split()
)
"""Lower-case words that may sit inside a capitalised name ("Prince of Orange")."""

STOPWORDS: Final = frozenset(
    """a about after all also an and any are as at be been before being between both but by can
    could did do does doing done for from had has have having he her here hers him his how i if
    in into is it its me more most my no nor not of on once only or other our out over own same
    she should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom whose why will with
    would you your yours s""".split()
)

_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)\s*$")


def match_key(text: str) -> str:
    """The matching key of a label or phrase: its normalised words without accents."""
    decomposed = unicodedata.normalize("NFKD", normalize_label(text))
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", bare)


def label_keys(label: str) -> list[str]:
    """The keys a label is found by: its own, and its own without a disambiguating suffix."""
    keys = [match_key(label), match_key(_DISAMBIGUATOR.sub("", label))]
    return [key for key in dict.fromkeys(keys) if key]


def content_words(key: str) -> list[str]:
    """The words of a normalised key that can identify a name: not stopwords nor connectors
    (so "Marie de Namur" finds "Marie of Namur"), once each."""
    return list(
        dict.fromkeys(
            word for word in key.split() if word not in STOPWORDS and word not in NAME_CONNECTORS
        )
    )


def stems(text: str) -> dict[str, str]:
    """Content words of `text` by stem (stem → first surface form)."""
    found: dict[str, str] = {}
    for word in match_key(text).split():
        if word not in STOPWORDS:
            found.setdefault(stem(word), word)
    return found


@dataclass(frozen=True)
class Phrase:
    text: str
    """The phrase's normalised words, as the question writes them: a concept of the record."""
    start: int
    end: int

    @property
    def key(self) -> str:
        return match_key(self.text)


@dataclass(frozen=True)
class NameRun:
    """Capitalised words of the question, as normalised words at [start, end)."""

    words: tuple[str, ...]
    start: int
    end: int

    @property
    def content(self) -> list[str]:
        return content_words(match_key(" ".join(self.words)))


@dataclass(frozen=True)
class Grounding:
    concepts: list[str]
    """Phrases of the question that grounding looked for: matched ones and uncovered words."""
    seeds: list[ox.NamedNode]
    """Matched entities, in the order their phrases appear in the question."""
    schema_predicates: tuple[ox.NamedNode, ...] | None = None
    """The well-known schema predicates the KG uses, asked in the same query, for retrieval;
    None when not asked."""
    stems: tuple[str, ...] = ()
    """The stems of the question's words that some but at most COMMON_STEM indexed names hold,
    for retrieval's ranking."""


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


def name_runs(question: str) -> list[NameRun]:
    """Runs of capitalised words (with connectors inside) that could be a name.

    The question's first word is left out: it is capitalised because it starts the sentence.
    Runs are given as positions in `words(question)`; where case folding would change how the
    text splits into words, the positions cannot be trusted and no runs are given.
    """
    original = _WORD.findall(unicodedata.normalize("NFKC", question))[:MAX_QUESTION_WORDS]
    tokens = words(question)[:MAX_QUESTION_WORDS]
    if [token.casefold() for token in original] != tokens:
        return []
    runs: list[NameRun] = []
    start = None
    for i in range(1, len(original) + 1):
        token = original[i] if i < len(original) else ""
        capital = token[:1].isupper()
        inside = start is not None and tokens[i] in NAME_CONNECTORS if token else False
        if capital or inside:
            if start is None:
                start = i
            continue
        if start is not None:
            end = i
            while end > start and tokens[end - 1] in NAME_CONNECTORS:
                end -= 1
            runs.append(NameRun(tuple(tokens[start:end]), start, end))
            start = None
    return [run for run in runs if len(run.content) >= 2]


def ground(store: Store, templates: Templates, question: str, entity_limit: int) -> Grounding:
    """The seeds of the question, and the schema predicates the KG uses, in one query."""
    phrases = candidate_phrases(question)
    if not phrases:
        return Grounding(concepts=[], seeds=[])
    keys = sorted({phrase.key for phrase in phrases})
    runs = name_runs(question)
    question_stems = sorted(stems(question))
    rows = store.select(
        templates.render(
            "ground",
            keys=keys,
            runs=[run.content for run in runs],
            schema_candidates=vocab.WELL_KNOWN_SCHEMA_PREDICATES,
            stems=question_stems,
            common_stem=COMMON_STEM,
        )
    )
    telling: list[str] = []
    entities_by_key: dict[str, list[ox.NamedNode]] = {}
    name_rows: list[tuple[int, str, ox.NamedNode]] = []
    schema: list[ox.NamedNode] = []
    for row in rows:
        entity, key, run, predicate = (row.get(v) for v in ("entity", "key", "run", "schema"))
        stem_, named = row.get("stem"), row.get("named")
        if isinstance(stem_, ox.Literal) and isinstance(named, ox.Literal):
            if 0 < int(named.value) <= COMMON_STEM:
                telling.append(stem_.value)
        elif isinstance(predicate, ox.NamedNode):
            schema.append(predicate)
        elif not isinstance(entity, ox.NamedNode) or not isinstance(key, ox.Literal):
            continue
        elif isinstance(run, ox.Literal):
            name_rows.append((int(run.value), key.value, entity))
        else:
            entities_by_key.setdefault(key.value, []).append(entity)
    for found in entities_by_key.values():
        found.sort(key=lambda node: node.value)

    chosen = _longest_matches([p for p in phrases if p.key in entities_by_key])
    covered = {i for phrase in chosen for i in range(phrase.start, phrase.end)}
    tokens = words(question)[:MAX_QUESTION_WORDS]
    concepts = [phrase.text for phrase in chosen]
    concepts += [
        token
        for i, token in enumerate(tokens)
        if i not in covered and token not in STOPWORDS and token not in concepts
    ]
    found = [entities_by_key[phrase.key] for phrase in chosen]
    uncovered = {
        i for i, run in enumerate(runs) if not covered.issuperset(range(run.start, run.end))
    }
    found += _name_matches(runs, [row for row in name_rows if row[0] in uncovered])
    seeds: list[ox.NamedNode] = []
    for entities in found:
        for entity in entities:
            if entity not in seeds and len(seeds) < entity_limit:
                seeds.append(entity)
    return Grounding(
        concepts=_unique(concepts),
        seeds=seeds,
        schema_predicates=tuple(sorted(set(schema), key=lambda node: node.value)),
        stems=tuple(sorted(set(telling))),
    )


def _name_matches(
    runs: list[NameRun], rows: list[tuple[int, str, ox.NamedNode]]
) -> list[list[ox.NamedNode]]:
    """Per run, the entities whose label holds the run's words, fewest extra first; labels with
    the words in another order ("Ford, Edsel") only when none has them in the run's order."""
    candidates: dict[int, set[tuple[bool, int, str, ox.NamedNode]]] = {}
    for index, key, entity in rows:
        run = runs[index]
        label_words = key.split()
        extra = len(label_words) - len(run.words)
        if 0 <= extra <= MAX_EXTRA_NAME_WORDS and set(run.content) <= set(label_words):
            reordered = not _in_order(run.content, label_words)
            candidates.setdefault(index, set()).add((reordered, extra, entity.value, entity))
    found = []
    for i in sorted(candidates):
        ranked = sorted(candidates[i])
        best = [item for item in ranked if item[0] == ranked[0][0]]
        found.append([entity for *_, entity in best[:NAME_MATCHES_PER_RUN]])
    return found


def _in_order(wanted: list[str], words_: list[str]) -> bool:
    remaining = iter(words_)
    return all(word in remaining for word in wanted)


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
    keys: list[str]

    @property
    def words(self) -> list[str]:
        return list(dict.fromkeys(word for key in self.keys for word in content_words(key)))

    @property
    def stems(self) -> list[str]:
        """For retrieval's ranking, which meets the question's words by stem."""
        return sorted({stem(word) for word in self.words})


def update_label_index(
    store: Store, templates: Templates, progress: Callable[[int], None] | None = None
) -> int:
    """Index every label not yet indexed; returns how many were added.

    An index written by an older version is rebuilt whole, so every entry has what grounding
    now looks up.
    """
    current = store.ask(templates.render("label_index_version", version=INDEX_VERSION))
    if not current:
        store.update(templates.render("label_index_clear", version=INDEX_VERSION))
    pending = templates.render("label_index_pending")
    # Rows one at a time where the store can stream them (the embedded store, whose query reads
    # a snapshot, so writing meanwhile is safe): a load of a million labels must not hold them all.
    stream: Callable[[str], Iterable[Solution]] = getattr(store, "select_iter", store.select)
    added = 0
    batch: list[IndexEntry] = []
    for row in itertools.chain(stream(pending), [None]):
        if row is not None:
            entity, label = row.get("entity"), row.get("label")
            if isinstance(entity, ox.NamedNode) and isinstance(label, ox.Literal):
                keys = label_keys(label.value)
                if keys:
                    batch.append(IndexEntry(entity, label, keys))
        if batch and (row is None or len(batch) == INDEX_BATCH):
            store.update(templates.render("label_index_insert", entries=batch))
            added += len(batch)
            if progress is not None:
                progress(len(batch))
            batch = []
    return added


def rebuild_label_index(store: Store, templates: Templates) -> int:
    store.update(templates.render("label_index_clear", version=INDEX_VERSION))
    return update_label_index(store, templates)
