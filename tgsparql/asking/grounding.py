"""Grounding: from a question to the seed entities of the KG it speaks of.

Concepts are the phrases of the question (word n-grams). An entity matches a concept when their
matching keys are equal, so matching ignores case, accents, punctuation and a label's
disambiguating suffix ("Ray Taylor (director)" is found as "Ray Taylor"); every name the KG
gives an entity counts (`rdfs:label`, `skos:altLabel`, `schema:alternateName`).
A name the question writes shorter than the KG does ("Edsel Ford" for "Edsel Bryant Ford")
matches too, in any word order ("Ford, Edsel"): a run of capitalised words that no label equals
finds the labels that contain all its words with at most MAX_EXTRA_NAME_WORDS more. Within such
a run, an initial stands for any word it begins ("Thaddeus P. Mott" finds "Thaddeus Phelps
Mott"), an ordinal belongs to the name ("Richard Beauchamp, 1st Earl of Worcester"), and a name
of three words or more may miss one of them when the label holds the rest and at most one word
more, spelt alike at the start ("Joanna" for "Johanna"): see `name_fit`. A label's parenthetical
aside is no part of its name ("Eustace III (died c. 1125), Count of Boulogne").
Names are also written as people say them: a single capitalised word inside the sentence is a
name, found as the first or last word of a label (a given name or a surname: "Vermeer" for
"Johannes Vermeer"); so is a name without its title ("Lord Frederick"), and each of the names a
lower-case "and" joins. A question written all in lower case tells no name by its capitals: it
offers its spans of two to four names instead of runs, and each word alone that is no common
word of the language ("curie", but not "young", which nobody wrote as a name) or is the
other option of a choice beside such a word ("kandel or bruce") or owns what follows ("adam's
father"), found as a single capitalised word is. A name several entities carry is ranked by
how the rest of the question fits each candidate's edges (their predicates' and neighbours'
stems against the question's other stems: "wife" meets "spouse"), then by fewer extra words,
then by more neighbours; the best few are kept, and `Grounding.names` says where each ranked
among how many candidates.
Ingest links the names it extracts the same way (`match_names`): each as one run, whatever its
case. Normalised label keys and their words live in the label index graph, written once per
label by `update_label_index`, so grounding is indexed lookups instead of a scan over every
label: one query, and a second for the candidates of the name runs no concept covers, so that a
name the KG holds whole costs no lookups of its words (held by many names in a large KG), and
one more for a name standing for a longer word only for the runs none of those fits; a last
one, only when several candidates fit a run equally, ranks those. The work of each is bounded
whatever the KG's size: a probe reads at most WORD_SCAN holders of its rarest word, and a
candidate is ranked from at most RANKED_EDGES + 1 of its edges.
"""

from __future__ import annotations

import io
import itertools
import re
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

import pyoxigraph as ox

from tgsparql.rdf import vocab
from tgsparql.rdf.stems import ASKS_FOR, SPOUSE, in_law, stem, stem_in_place, through_parents
from tgsparql.rdf.text import WORD as _WORD
from tgsparql.rdf.text import normalize_label, words
from tgsparql.stores.store import Solution, Store

MAX_PHRASE_WORDS: Final = 10
MAX_QUESTION_WORDS: Final = 200
INDEX_BATCH: Final = 5000
"""Labels a bulk write of the index: some 40,000 quads, within one write of the store's bulk
path (tgsparql.stores.store.BULK_BATCH)."""
DROP_CACHES_PAST: Final = 1 << 20
"""Bytes of pending names (some 10,000) past which the store lets go of what reading them
cached before writing them: less writing adds too little memory to be worth reopening it."""
REMOVE_BATCH: Final = 5000
"""Index quads an update removes when the index is rebuilt."""
INDEX_VERSION: Final = 6
"""Bumped when the index holds something new; an older index is rebuilt on the next update."""
MAX_EXTRA_NAME_WORDS: Final = 3
NAME_MATCHES_PER_RUN: Final = 2
MAX_LOWER_CASE_NAMES: Final = 4
MAX_LOWER_CASE_RUNS: Final = 12
MAX_LOWER_CASE_WORDS: Final = 4
"""Rare words a lower-case question offers alone as names, besides its spans."""
APOSTROPHES: Final = frozenset({"'", "\u2019"})
DETERMINERS: Final = frozenset(
    "the a an this that these those his her its their my your our whose which what each every "
    "any some no".split())
"""Words before a noun that make it no name: "the film's director"."""
CHOICES: Final = frozenset({"or", "and"})
"""The words that join the options of a choice ("Who is older, X or Y?")."""
COMMON_ZIPF: Final = 4.0
"""A word seen ten times a million words or more is a common one: 4 is where the Zipf scale's
high-frequency words begin (van Heuven et al., 2014). "young" is 5.4, "wood" 4.8, "lincoln" 4.3,
"curie" 2.9."""
NAME_CANDIDATES: Final = 50
"""Entities a probe of a name run offers at most: the candidates ranked by how the question fits
them, so a common name costs no more than this many entities' edges."""
MIN_NAMES_TO_MISS_ONE: Final = 3
"""A run of at least this many names may match a label that lacks one of them."""
NAMES_PER_QUERY: Final = 10
"""Names given whole looked up in one query: the store plans a union of probes in a time that
grows faster than their number (200 names took 14 s as one query, under 1 s as twenty)."""
SAME_START: Final = 2
"""Letters a missing name shares with the label's word in its place: a variant spelling."""
MIN_SHORT_FORM: Final = 3
"""Letters a name needs to stand for a longer word it begins ("Gwen" for "Gwendolyn")."""
COMMON_STEM: Final = 1000
"""A stem more names than this hold tells no edges apart: retrieval does not rank by it."""
WORD_SCAN: Final = COMMON_STEM + 1
"""Holders of a probe's rarest word read at most: a word whose stem at most COMMON_STEM names
hold is read whole, so its probe finds every label holding all its words; of a name whose every
word more names hold ("John Smith"), the labels among the first this many holders of one. (A
probe for a longer word a name begins reads its other word's holders whole: no index finds the
words a prefix begins, and the label may be any of them.)"""
RANKED_EDGES: Final = 1000
"""Edges of a candidate read to rank it: one with more (a hub) is ranked as having at least
this many, by the stems of these, so a hub costs no more than this many reads."""
NAME_CONNECTORS: Final = frozenset(
    "of the and de del della der den di da du la le van von bin ibn al".split()
)
"""Lower-case words that may sit inside a capitalised name ("Prince of Orange")."""
TITLES: Final = frozenset("mr mrs ms miss mister dr doctor sir dame madam master".split())
"""Forms of address written before a name ("Mr. Vermeer") that no label of the person holds."""
TITLE_WORDS: Final = TITLES | frozenset(
    """archbishop baron baroness bishop captain cardinal count countess duchess duke earl
    emperor empress general king lady lord pope president prince princess queen saint st""".split()
)
"""Words a question may write a name with or without ("Lord Frederick" for "Frederick
Cavendish-Bentinck")."""

STOPWORDS: Final = frozenset(
    """a about after all also an and any are as at be been before being between both but by can
    could did do does doing done for from had has have having he her here hers him his how i if
    in into is it its me more most my no nor not of on once only or other our out over own same
    she should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom whose why will with
    would you your yours s""".split()
)

_Found = TypeVar("_Found")

_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)\s*$")
ASIDE = re.compile(r"\s*\([^()]*\)")
"""A parenthesised aside: in a name, which of its kind it is ("Camille (1926 film)")."""
_JOINER = re.compile(r"(?<=[^\W_])['’‐-](?=[^\W_])")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?]\s")


def match_key(text: str) -> str:
    """The matching key of a label or phrase: its normalised words without accents."""
    decomposed = unicodedata.normalize("NFKD", normalize_label(text))
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", bare)


def label_keys(label: str) -> list[str]:
    """The keys a label is found by: its own, its own without a disambiguating suffix, without
    any parenthetical aside ("Eustace III (died c. 1125) was the count of Boulogne"), and that
    with the words a hyphen or apostrophe joins written as one ("Terii-maeva-rua" as
    "Teriimaevarua")."""
    bare = ASIDE.sub(" ", label)
    keys = [match_key(label), match_key(_DISAMBIGUATOR.sub("", label)), match_key(bare),
            match_key(_JOINER.sub("", bare))]
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
    """Content words of `text` by stem (stem → first surface form), and what its question words
    ask for (`ASKS_FOR`: "where" → place)."""
    found: dict[str, str] = {}
    words_of = match_key(text).split()
    for at, word in enumerate(words_of):
        if word in ASKS_FOR:
            found.setdefault(ASKS_FOR[word], word)
        elif word not in STOPWORDS:
            found.setdefault(stem_in_place(words_of, at), word)
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
    said: str = ""
    """The run as the question writes it ("Vermeer"), for the record."""
    part_of: int | None = None
    """For the part of a run before its first comma ("Robert Petre" of "Robert Petre, 8th Baron
    Petre"), the run's index: the part is looked for in case the whole is not found (what
    follows a comma is a title, which other people hold too). So are the names a lower-case
    "and" joins ("Aivar" and "Andy Summers" of "Aivar and Andy Summers")."""

    @property
    def names(self) -> list[str]:
        """The words a label must hold: the content words, or all but stopwords when fewer
        than two are left, since a name may be made of words that are connectors elsewhere
        ("Từ Dụ")."""
        key = match_key(" ".join(self.words))
        content = content_words(key)
        if len(content) >= 2:
            return content
        return list(dict.fromkeys(word for word in key.split() if word not in STOPWORDS))

    @property
    def key(self) -> str:
        return match_key(" ".join(self.words))

    @property
    def probes(self) -> list[Probe]:
        """What is asked of the label index: the labels holding the names that are neither
        initials nor connectors; from MIN_NAMES_TO_MISS_ONE names on (up to MAX_PHRASE_WORDS,
        so a run asks at most that many more), those holding all of them but one, each left
        out once; of two names, those holding one and a longer word the other begins, and,
        when one of the two is a title, those holding the other."""
        looked_up = [w for w in self.names if len(w) > 1 and w not in NAME_CONNECTORS]
        if not looked_up:
            return []
        probes = [Probe(looked_up)]
        others = [[w for w in looked_up if w != left_out] for left_out in looked_up]
        if len(self.names) >= MIN_NAMES_TO_MISS_ONE and (
            MIN_NAMES_TO_MISS_ONE <= len(looked_up) <= MAX_PHRASE_WORDS
        ):
            probes += [Probe(rest) for rest in others]
        elif len(looked_up) == 2:
            probes += [
                Probe(rest, short)
                for short, rest in zip(looked_up, others)
                if len(short) >= MIN_SHORT_FORM
            ]
            untitled = [w for w in looked_up if w not in TITLE_WORDS]
            if len(untitled) == 1:
                probes.append(Probe(untitled))
        return probes


@dataclass(frozen=True)
class Probe:
    """Labels holding every one of `words`, and, when given, a word longer than `prefix` that
    begins with it."""

    words: list[str]
    prefix: str | None = None

    def rarest_first(self, holders: dict[str, int]) -> Probe:
        """The probe with its words ordered by how many names hold their stems (`holders`,
        counted up to COMMON_STEM + 1; a stem not counted as more), rarest first: `ground.rq`
        reads the first one's holders and looks up the others'."""
        def held(word: str) -> int:
            return holders.get(stem(word), COMMON_STEM + 1)

        return Probe(sorted(self.words, key=held), self.prefix)


@dataclass(frozen=True)
class RunQuery:
    """What `ground.rq` asks of one name run: its candidates and what ranks them."""

    index: int
    key: str | None
    """The run's key when it is also a concept's (a label equal to it is found as that concept,
    so the run then asks for no candidates); None for a run longer than any concept."""
    probes: list[Probe]
    stems: list[str]
    """The question's stems that are not the run's own, met by the candidates' edges."""

    @classmethod
    def of(cls, index: int, run: NameRun, key: str | None, question_stems: Iterable[str],
           holders: dict[str, int]) -> RunQuery:
        """What a run asks, its probes' rarest words first (`Probe.rarest_first`)."""
        own = stems(run.key)
        return cls(index, key, [probe.rarest_first(holders) for probe in run.probes],
                   [found for found in question_stems if found not in own])


@dataclass(frozen=True)
class RankedMatch:
    """A name of the question that grounded as part of a label: the entity it grounded to, and
    where that entity ranked among the candidates that carry the name."""

    name: str
    """As the question writes it ("Vermeer")."""
    entity: ox.NamedNode
    rank: int
    """1 for the candidate the question fits best."""
    candidates: int


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
    names: tuple[RankedMatch, ...] = ()
    """The seeds found by a name that is part of their label, one per seed, in seed order."""
    relations: tuple[str, ...] | None = None
    """Those of `stems` that are no word of a name the question grounded ("death" of "Where
    did X die?" but not of "Dying God"): the words a predicate's label must hold to answer the
    question; None when not told apart (every stem)."""
    kinds: tuple[str, ...] = ()
    """Those of `stems` that only the question word says (`ASKS_FOR`: "place" of "Where did X
    die?"): what the path's last predicate names, the place of death rather than its date or
    cause."""


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
    """Runs of capitalised words (with connectors inside) that could be a name, one word alone
    included ("Vermeer"): a word is a name where the question writes it as one.

    The question's first word is left out: it is capitalised because it starts the sentence, and
    so is a single word that starts a later sentence. Runs are given as positions in
    `words(question)`; where case folding would change how the text splits into words, the
    positions cannot be trusted and no runs are given.
    """
    placed = _placed(question)
    if placed is None:
        return []
    text, matches = placed
    original = [match.group() for match in matches]
    tokens = [token.casefold() for token in original]
    if not any(ch.isupper() for ch in text):
        return _lower_case_runs(text, matches, tokens)
    gaps = [text[matches[i - 1].end() : matches[i].start()] for i in range(1, len(matches))]
    commas = {i for i, gap in enumerate(gaps, 1) if "," in gap}
    # a sentence ends at . ! or ? before a space, but not after an initial ("Thaddeus P. Mott")
    sentence_starts = {
        i for i, gap in enumerate(gaps, 1)
        if _SENTENCE_END.search(gap) and len(original[i - 1]) > 1
    }
    runs: list[NameRun] = []
    start = None
    for i in range(1, len(original) + 1):
        token = original[i] if i < len(original) else ""
        capital = token[:1].isupper()
        inside = start is not None and bool(token) and (
            tokens[i] in NAME_CONNECTORS or _ORDINAL.fullmatch(token) is not None
        )
        if start is not None and (i in sentence_starts or not (capital or inside)):
            end = i
            while end > start and _trailing(original[end - 1], tokens[end - 1]):
                end -= 1
            said = text[matches[start].start() : matches[end - 1].end()]
            runs.append(NameRun(tuple(tokens[start:end]), start, end, said))
            start = None
        if capital and start is None:
            start = i
    if tokens and tokens[0] not in STOPWORDS:
        sentence_starts.add(1)  # the rest of a name the question starts with ("Edsel Ford was")
    whole = [
        run for run in runs
        if len(run.names) >= 2 or (len(run.names) == 1 and _one_name(run, sentence_starts))
    ]
    parts = []
    for index, run in enumerate(whole):
        spans = []
        cut = min((c for c in commas if run.start < c < run.end), default=None)
        if cut is not None:
            spans.append((run.start, cut, 2))
        joins = [i for i in range(run.start, run.end) if original[i] == "and"]
        for start, end in zip([run.start] + [i + 1 for i in joins], joins + [run.end]):
            if joins and start < end:
                spans.append((start, end, 1))
        for start, end, fewest in spans:
            said = text[matches[start].start() : matches[end - 1].end()]
            part = NameRun(tuple(tokens[start:end]), start, end, said, part_of=index)
            if len(part.names) >= 2 or (
                len(part.names) == fewest and _one_name(part, sentence_starts)
            ):
                parts.append(part)
    return whole + parts


def _lower_case_runs(text: str, matches: list[re.Match[str]], tokens: list[str]) -> list[NameRun]:
    """In a question written all in lower case, which tells no name by its capitals: every span
    of two to MAX_LOWER_CASE_NAMES names between stopwords (connectors inside), up to
    MAX_LOWER_CASE_RUNS of them, the longest first; and up to MAX_LOWER_CASE_WORDS words alone
    that are no common word of the language ("curie", not "young": nobody wrote it as a name,
    so only a word that cannot well be read otherwise is taken for one) and not inside
    parentheses, those with no such word beside them first, then the rarest. A word that is
    one side of a choice whose other side is such a rare word ("who is younger, denise kandel or
    bruce?", "are christopher and frances vega of the same nationality?") is the other option
    and may be a name however common, and so is a word that owns what follows with no
    determiner before it ("of adam's father", not "the film's director"): such words go
    first."""
    spans = []
    alone = []
    for start in range(len(tokens)):
        single = NameRun((tokens[start],), start, start + 1,
                         text[matches[start].start() : matches[start].end()])
        before = text[: matches[start].start()]
        # a word in parentheses tells which of the name before it is meant, and is no name asked
        # of alone ("the queen of spades (prokofiev)")
        aside = before.count("(") > before.count(")")
        if len(single.names) == 1 and _one_name(single, set()) and not aside:
            alone.append(single)
        for end in range(start + 2, len(tokens) + 1):
            span = tokens[start:end]
            if any(word in STOPWORDS and word not in NAME_CONNECTORS for word in span):
                break
            run = NameRun(tuple(span), start, end,
                          text[matches[start].start() : matches[end - 1].end()])
            if len(run.names) > MAX_LOWER_CASE_NAMES:
                break
            if span[0] not in NAME_CONNECTORS and span[-1] not in NAME_CONNECTORS and (
                len(run.names) >= 2
            ):
                spans.append(run)
    spans.sort(key=lambda run: (run.start - run.end, run.start))
    frequency = {run.start: _zipf(run.words[0]) for run in alone}
    rare = {at for at, zipf in frequency.items() if zipf < COMMON_ZIPF}
    options = {run.start for run in alone
               if _choice_option(tokens, run.start, rare) or _owner(text, matches, run.start)}
    # a rare word beside another is likelier part of a name written whole, which a span tries
    names = sorted((run for run in alone if run.start in rare | options), key=lambda run: (
        run.start not in options, run.start - 1 in rare or run.start + 1 in rare,
        frequency[run.start]))
    runs = spans[:MAX_LOWER_CASE_RUNS] + names[:MAX_LOWER_CASE_WORDS]
    return sorted(runs, key=lambda run: (run.start, run.end))


def _owner(text: str, matches: list[re.Match[str]], at: int) -> bool:
    """Whether the word at `at` owns what follows, as a name does ("of adam's father"): an
    apostrophe and "s" after it, and no determiner before it ("the film's director")."""
    if at + 1 >= len(matches) or matches[at + 1].group().casefold() != "s":
        return False
    before = matches[at - 1].group().casefold() if at else ""
    return (text[matches[at].end() : matches[at + 1].start()] in APOSTROPHES
            and before not in DETERMINERS)


def _choice_option(tokens: list[str], at: int, rare: set[int]) -> bool:
    """Whether the word at `at` is one side of a choice ("or", "and") whose other side is a
    word at a position in `rare`."""
    before = at >= 2 and tokens[at - 1] in CHOICES and at - 2 in rare
    after = at + 2 < len(tokens) and tokens[at + 1] in CHOICES and at + 2 in rare
    return before or after


def _zipf(word: str) -> float:
    """How common an English word is, on the Zipf scale of `wordfreq` (log10 of its count a
    billion words, across many kinds of text, names included); 0 for one rarer than once a
    million words."""
    from wordfreq import zipf_frequency  # its import and word list cost half a second

    return float(zipf_frequency(word, "en", wordlist="small"))


def _one_name(run: NameRun, sentence_starts: set[int]) -> bool:
    """Whether a run of one name is a name: not a sentence's first word (nor the second after
    a first that may be a name), an initial, a number or an ordinal."""
    name = run.names[0]
    return (
        run.start not in sentence_starts
        and len(name) > 1
        and not name.isdigit()
        and _ORDINAL.fullmatch(name) is None
        and name not in NAME_CONNECTORS
    )


def given_name(name: str) -> NameRun:
    """A name given whole, as extraction gives one: a single run of all its words, whatever
    their case, less the forms of address before it ("Mr. Vermeer") and a possessive's "s"
    ("Rembrandt's"), so it is matched as a name the question writes."""
    tokens = words(name)[:MAX_PHRASE_WORDS]
    while len(tokens) > 1 and tokens[0] in TITLES:
        tokens = tokens[1:]
    if len(tokens) > 1 and tokens[-1] == "s":
        tokens = tokens[:-1]
    return NameRun(tuple(tokens), 0, len(tokens))


@dataclass(frozen=True)
class NameMatch:
    """The KG entities a name given whole names, as grounding would find them."""

    entities: tuple[ox.NamedNode, ...]
    """The best-fitting ones in IRI order, at most NAME_MATCHES_PER_RUN when the name only fits
    their labels, and then only those that fit it equally, extra words too: more than one when
    the name alone cannot tell them apart."""
    by_label: bool
    """The name's key is a key of their labels, rather than the name fitting them (`name_fit`)."""


def match_names(
    store: Store, names: Iterable[str], *, partial: bool = True
) -> dict[str, NameMatch]:
    """Each name → the entities it names, NAMES_PER_QUERY names at a time: those with a label
    whose key is the name's (as a phrase of a question is grounded), else, when `partial`, those
    whose label the name fits as a run of a question does (surname, shortened, reordered:
    `name_fit`), asked in a second query for the names no key matched, rarest words first (the
    first query counts their stems' holders). Names that match nothing are absent."""
    runs = {name: given_name(name) for name in dict.fromkeys(names)}
    given = [(name, run) for name, run in runs.items() if run.words]
    keys = [{match_key(name), " ".join(run.words)} for name, run in given]
    exact: dict[int, set[ox.NamedNode]] = {}
    name_rows: list[NameRow] = []
    for start in range(0, len(given), NAMES_PER_QUERY):
        batch = range(start, min(start + NAMES_PER_QUERY, len(given)))
        read = _ground_rows(
            store,
            keys=sorted({key for i in batch for key in keys[i]}),
            stems=sorted({found for i in batch for found in stems(given[i][1].key)})
            if partial else [],
        )
        for i in batch:
            exact[i] = {entity for key in keys[i] for entity in read.entities_by_key.get(key, [])}
        asked = [RunQuery.of(i, given[i][1], None, [], read.holders)
                 for i in batch if partial and not exact[i] and given[i][1].probes]
        if asked:
            name_rows += _probe_rows(store, asked, lambda rows: set(
                _name_fits([run for _, run in given], rows)))
    fits = _name_fits([run for _, run in given], name_rows)
    found: dict[str, NameMatch] = {}
    for i, (name, _) in enumerate(given):
        if exact[i]:
            found[name] = NameMatch(tuple(sorted(exact[i], key=lambda node: node.value)), True)
        elif i in fits:
            best = dict.fromkeys(entity for fit, entity in fits[i] if fit == fits[i][0][0])
            found[name] = NameMatch(tuple(best)[:NAME_MATCHES_PER_RUN], by_label=False)
    return found


def _uncovered(run: NameRun, covered: set[int]) -> bool:
    """Whether a run has a name at a position no matched label covers."""
    return any(i not in covered and word not in STOPWORDS and word not in NAME_CONNECTORS
               for i, word in enumerate(run.words, run.start))


def _trailing(token: str, word: str) -> bool:
    """Whether a run's last word is no part of the name: a connector or ordinal written in
    lower case ("Lady of the ...", "the Duke of Kent's 2nd ...")."""
    lower = not token[:1].isupper()
    return lower and (word in NAME_CONNECTORS or _ORDINAL.fullmatch(token) is not None)


def _placed(question: str) -> tuple[str, list[re.Match[str]]] | None:
    """The question's text and where each of its words is written in it, word by word as
    `words(question)` gives them; None where case folding would change how the text splits
    into words, so that no place can be trusted."""
    text = unicodedata.normalize("NFKC", question)
    matches = list(itertools.islice(_WORD.finditer(text), MAX_QUESTION_WORDS))
    if [match.group().casefold() for match in matches] != words(question)[:MAX_QUESTION_WORDS]:
        return None
    return text, matches


def _asides(question: str) -> list[tuple[int, int]]:
    """The words of each parenthesised aside of the question, as [start, end) positions in
    `words(question)`; none where those cannot be placed (`_placed`)."""
    placed = _placed(question)
    if placed is None:
        return []
    text, matches = placed
    found = []
    for aside in ASIDE.finditer(text):
        inside = [i for i, match in enumerate(matches)
                  if aside.start() < match.start() and match.end() < aside.end()]
        if inside:
            found.append((inside[0], inside[-1] + 1))
    return found


def _titles(phrases: list[Phrase], starts: set[int]) -> list[Phrase]:
    """The concepts that are a title right before a name that was found ("Lord" of "Lord
    Frederick Cavendish-Bentinck", where an entity is labelled "Lord"): part of that name, they
    name no seed of their own."""
    return [phrase for phrase in phrases
            if phrase.end - phrase.start == 1 and phrase.text in TITLE_WORDS
            and phrase.end in starts]


def _within(start: int, end: int, spans: Iterable[tuple[int, int]]) -> bool:
    return any(outer_start <= start and end <= outer_end for outer_start, outer_end in spans)


def ground(store: Store, question: str, entity_limit: int) -> Grounding:
    """The seeds of the question, and the schema predicates the KG uses: one query of index
    lookups for the concepts, the stems and the schema, then, only when some name run is left
    uncovered by the concepts found, one for the candidates of those runs, and, only when
    several fit a run equally, one that ranks them. A run a concept covers asks for nothing:
    its candidates would be dropped, and a word that many names hold ("River", "Songs") makes
    them cost more work."""
    phrases = candidate_phrases(question)
    if not phrases:
        return Grounding(concepts=[], seeds=[])
    keys = sorted({phrase.key for phrase in phrases})
    runs = name_runs(question)
    tokens = words(question)[:MAX_QUESTION_WORDS]
    # kin a KG states through a parent: the ground query tells which labels hold those steps
    steps = {step for token in tokens for step in through_parents(token)}
    question_stems = sorted(stems(question).keys() | steps)
    read = _ground_rows(store, keys=keys, stems=question_stems,
                        schema_candidates=vocab.WELL_KNOWN_SCHEMA_PREDICATES)
    entities_by_key = read.entities_by_key
    chosen = _longest_matches([p for p in phrases if p.key in entities_by_key])
    covered = {i for phrase in chosen for i in range(phrase.start, phrase.end)}
    concepts = [phrase.text for phrase in chosen]
    concepts += [
        token
        for i, token in enumerate(tokens)
        if i not in covered and token not in STOPWORDS and token not in concepts
    ]
    found = [entities_by_key[phrase.key] for phrase in chosen]
    uncovered = {i for i, run in enumerate(runs) if _uncovered(run, covered)}
    asked = [
        RunQuery.of(i, run, run.key if run.end - run.start <= MAX_PHRASE_WORDS else None,
                    question_stems, read.holders)
        for i, run in enumerate(runs)
        if i in uncovered and run.probes
    ]
    name_rows = _probe_rows(store, asked, lambda rows: set(_name_candidates(runs, rows)))
    named = _name_matches(runs, _name_candidates(runs, name_rows),
                          lambda tied: _standings(store, tied, asked))
    named = _longest_runs(
        runs, {i: found for i, found in named.items() if runs[i].part_of not in named}
    )
    # the words of an aside right after a name that grounded tell which of its kind that one
    # is ("Camille (1926 Feature Film)"): they name no seed of their own
    ends = {phrase.end for phrase in chosen} | {runs[i].end for i in named}
    told = [(start, end) for start, end in _asides(question) if start in ends]
    named = {i: found for i, found in named.items()
             if not _within(runs[i].start, runs[i].end, told)}
    inside = [(runs[i].start, runs[i].end) for i in named] + told
    # a run that names one entity is not also the single words it is made of ("William",
    # "Louis", "Prince" in "William Louis, Prince of Anhalt-Harzgerode")
    kept = [(phrase, entities) for phrase, entities in zip(chosen, found)
            if not _within(phrase.start, phrase.end, inside)]
    starts = {phrase.start for phrase, _ in kept} | {runs[i].start for i in named}
    titles = _titles([phrase for phrase, _ in kept], starts)
    found = [entities for phrase, entities in kept if phrase not in titles]
    found += [[match.entity for match in named[i]] for i in sorted(named)]
    seeds: list[ox.NamedNode] = []
    for entity in dict.fromkeys(entity for entities in found for entity in entities):
        if len(seeds) < entity_limit:
            seeds.append(entity)
    by_entity = {m.entity: m for i in sorted(named, reverse=True) for m in named[i]}
    # a word of a name run that grounded names; any other word may ask
    in_runs = {i for run in runs for i in range(run.start, run.end)}
    naming = (covered | {i for start, end in inside for i in range(start, end)}) & in_runs
    asking = {found for i, token in enumerate(tokens) if i not in naming and token not in ASKS_FOR
              for found in stems(token)}
    asking |= {SPOUSE for i in range(len(tokens)) if i not in naming and in_law(tokens, i)}
    asked = [token for i, token in enumerate(tokens)
             if i not in naming and token not in STOPWORDS and token not in ASKS_FOR]
    # the steps of kin reached through a parent count where the kin is all the question asks
    # for ("Who is X's uncle?"): a path of two hops, which retrieval must rank at each
    kin = set(through_parents(asked[0])) if len(asked) == 1 else set()
    asking |= kin
    asked_for = {ASKS_FOR[token] for i, token in enumerate(tokens)
                 if i not in naming and token in ASKS_FOR} - asking
    unasked = steps - asking
    telling = sorted(found for found in set(read.telling) if found not in unasked)
    return Grounding(
        concepts=_unique(concepts),
        seeds=seeds,
        schema_predicates=tuple(sorted(set(read.schema), key=lambda node: node.value)),
        stems=tuple(telling),
        names=tuple(by_entity[seed] for seed in seeds if seed in by_entity),
        relations=tuple(found for found in telling if found in asking),
        kinds=tuple(found for found in telling if found in asked_for),
    )


def _ground_rows(
    store: Store, *, keys: Iterable[str] = (), runs: Iterable[RunQuery] = (),
    stems: Iterable[str] = (), schema_candidates: Iterable[ox.NamedNode] = (),
) -> _GroundRows:
    """`ground.rq`'s answer to what is asked, sorted."""
    return _GroundRows.of(store.run(
        "ground", keys=list(keys), runs=list(runs), per_probe=NAME_CANDIDATES,
        word_scan=WORD_SCAN, schema_candidates=tuple(schema_candidates), stems=list(stems),
        common_stem=COMMON_STEM,
    ).rows)


def _probe_rows(
    store: Store, asked: list[RunQuery], fitted: Callable[[list[NameRow]], set[int]]
) -> list[NameRow]:
    """The candidates of the runs: by their words, then, only for the runs none of whose
    candidates fits (`fitted` gives the runs some fit), by a name standing for a longer word it
    begins ("Gwen" for "Gwendolyn"), whose probe reads its other word's holders whole."""
    rows: list[NameRow] = []
    for shortened in (False, True):
        probing = [
            replace(query, probes=[p for p in query.probes if (p.prefix is not None) == shortened])
            for query in asked
        ]
        if shortened:
            found = fitted(rows)
            probing = [query for query in probing if query.index not in found]
        probing = [query for query in probing if query.probes]
        if probing:
            rows += _ground_rows(store, runs=probing).name_rows
    return rows


@dataclass(frozen=True)
class NameRow:
    """A candidate of a name run: one of its label keys."""

    run: int
    key: str
    entity: ox.NamedNode


@dataclass(frozen=True)
class Standing:
    """What ranks a candidate among those that fit a run equally, read from its first
    RANKED_EDGES + 1 edges (`ground_rank.rq`)."""

    degree: int
    """How many neighbours it has; RANKED_EDGES + 1 for one with more edges than that."""
    hits: frozenset[str]
    """The question's stems that its edges' predicates or neighbours are named with."""


_NO_STANDING: Final = Standing(0, frozenset())


def _standings(
    store: Store, tied: dict[int, set[ox.NamedNode]], asked: list[RunQuery]
) -> dict[tuple[int, ox.NamedNode], Standing]:
    """The standing of each candidate of each run in `tied` (run → candidates that fit it
    equally well), hits counted among the run's own stems: one `ground_rank.rq` request."""
    entities = sorted({entity for found in tied.values() for entity in found},
                      key=lambda node: node.value)
    if not entities:
        return {}
    run_stems = {query.index: set(query.stems) for query in asked}
    degrees: dict[int, int] = {}
    hits: dict[int, set[str]] = {}
    rows = store.run("ground_rank", entities=entities,
                     stems=sorted(set().union(*(run_stems[i] for i in tied))),
                     edges_up_to=RANKED_EDGES).rows
    for row in rows:
        i, edges, degree, hit = (row.get(v) for v in ("i", "edges", "degree", "hit"))
        if not isinstance(i, ox.Literal):
            continue
        if isinstance(edges, ox.Literal) and isinstance(degree, ox.Literal):
            more = int(edges.value) > RANKED_EDGES
            degrees[int(i.value)] = RANKED_EDGES + 1 if more else int(degree.value)
        if isinstance(hit, ox.Literal):
            hits.setdefault(int(i.value), set()).add(hit.value)
    place = {entity: i for i, entity in enumerate(entities)}
    return {
        (run, entity): Standing(degrees.get(place[entity], 0),
                                frozenset(hits.get(place[entity], set()) & run_stems[run]))
        for run, found in tied.items() for entity in found
    }


@dataclass
class _GroundRows:
    """The rows of `ground.rq` sorted by what they answer."""

    telling: list[str] = field(default_factory=list)
    """The question's stems that name few enough things to tell them apart."""
    holders: dict[str, int] = field(default_factory=dict)
    """How many names hold each of the question's stems, counted up to COMMON_STEM + 1."""
    entities_by_key: dict[str, list[ox.NamedNode]] = field(default_factory=dict)
    """Entities whose label is a phrase's key, by key, in IRI order."""
    name_rows: list[NameRow] = field(default_factory=list)
    """The candidates of the question's name runs."""
    schema: list[ox.NamedNode] = field(default_factory=list)
    """Schema predicates the KG uses."""

    @classmethod
    def of(cls, rows: Iterable[Solution]) -> _GroundRows:
        out = cls()
        for row in rows:
            entity, key, run, predicate = (row.get(v) for v in ("entity", "key", "run", "schema"))
            stem_, named = row.get("stem"), row.get("named")
            if isinstance(stem_, ox.Literal) and isinstance(named, ox.Literal):
                out.holders[stem_.value] = int(named.value)
                if 0 < int(named.value) <= COMMON_STEM:
                    out.telling.append(stem_.value)
            elif isinstance(predicate, ox.NamedNode):
                out.schema.append(predicate)
            elif not isinstance(entity, ox.NamedNode) or not isinstance(key, ox.Literal):
                continue
            elif isinstance(run, ox.Literal):
                out.name_rows.append(NameRow(int(run.value), key.value, entity))
            else:
                out.entities_by_key.setdefault(key.value, []).append(entity)
        for found in out.entities_by_key.values():
            found.sort(key=lambda node: node.value)
        return out


def _longest_runs(runs: list[NameRun], named: dict[int, _Found]) -> dict[int, _Found]:
    """The matched runs that no longer matched run overlaps (a lower-case question's spans, a
    name's parts)."""
    kept: list[int] = []
    for i in sorted(named, key=lambda i: (runs[i].start - runs[i].end, runs[i].start)):
        if not any(runs[i].start < runs[j].end and runs[j].start < runs[i].end for j in kept):
            kept.append(i)
    return {i: named[i] for i in sorted(kept)}


def _name_candidates(
    runs: list[NameRun], rows: list[NameRow]
) -> dict[int, dict[ox.NamedNode, tuple[int, int, bool, int]]]:
    """Per run that matched, each candidate whose label fits it (`name_fit`) and how its label
    fits best. A run of one name fits a label's plain key (no aside) by its first or last word:
    a given name or a surname."""
    fits: dict[int, dict[ox.NamedNode, tuple[int, int, bool, int]]] = {}
    plain = _plain_keys(rows)
    for row in rows:
        names = runs[row.run].names
        if len(names) == 1 and not _first_or_last(names[0], row.key, plain[row.entity]):
            continue
        fit = name_fit(names, row.key) or _untitled_fit(names, row.key, plain[row.entity])
        if fit is None:
            continue
        best = fits.setdefault(row.run, {})
        if row.entity not in best or fit < best[row.entity]:
            best[row.entity] = fit
    return fits


def _name_matches(
    runs: list[NameRun],
    fits: dict[int, dict[ox.NamedNode, tuple[int, int, bool, int]]],
    standings: Callable[[dict[int, set[ox.NamedNode]]],
                        dict[tuple[int, ox.NamedNode], Standing]],
) -> dict[int, list[RankedMatch]]:
    """Per run that matched, the entities whose label fits it best (`_name_candidates`):
    labels holding every name before those missing one, names written in full before shortened
    ones, in the run's order before another order ("Ford, Edsel"); then the candidates whose
    edges meet more of the question's other stems ("wife" meets "spouse"), fewest extra words,
    most neighbours. Only the candidates that fit a run as well as its best one are ranked
    further, so only theirs are read (`standings`)."""
    tied = {}
    for i, candidates in fits.items():
        first = min(fit[:3] for fit in candidates.values())
        best = {entity for entity, fit in candidates.items() if fit[:3] == first}
        if len(best) > 1:
            tied[i] = best
    standing = standings(tied) if tied else {}
    ranks: dict[int, dict[ox.NamedNode, tuple[int, int, bool, int, int, int, str]]] = {}
    for i, candidates in fits.items():
        for entity, (missing, shortened, reordered, extra) in candidates.items():
            held = standing.get((i, entity), _NO_STANDING)
            ranks.setdefault(i, {})[entity] = (missing, shortened, reordered, -len(held.hits),
                                               extra, -held.degree, entity.value)
    found = {}
    for i, candidates in ranks.items():
        ranked = sorted(candidates, key=candidates.__getitem__)
        first = candidates[ranked[0]][:3]
        kept = [e for e in ranked if candidates[e][:3] == first][:NAME_MATCHES_PER_RUN]
        found[i] = [
            RankedMatch(runs[i].said, entity, ranked.index(entity) + 1, len(ranked))
            for entity in kept
        ]
    return found


def named_labels(question: str, labels: Iterable[str]) -> set[str]:
    """The labels that the question's name runs name, as grounding would find them by a part of
    the label ("Vermeer" for "Johannes Vermeer"). As in grounding, a run names nothing inside a
    label the question writes whole ("württemberg" of "princess augusta of württemberg" does
    not name "Württemberg Mausoleum"), nor inside a longer run that names one ("tangye" of
    "jean tangye", which names "Jean Everald Tangye", does not name "Nigel Tangye")."""
    keyed = {label: label_keys(label) for label in labels}
    whole = {key for keys in keyed.values() for key in keys}
    covered = {i for phrase in candidate_phrases(question) if phrase.key in whole
               for i in range(phrase.start, phrase.end)}
    runs = name_runs(question)
    naming = {i: {label for label, keys in keyed.items() if _names_label(run.names, keys)}
              for i, run in enumerate(runs) if _uncovered(run, covered)}
    kept = _longest_runs(runs, {i: found for i, found in naming.items() if found})
    return {label for found in kept.values() for label in found}


def _names_label(names: list[str], keys: list[str]) -> bool:
    """Whether a run's names name the entity whose label has these keys (`label_keys`)."""
    plain = {min(keys, key=lambda key: len(key.split()))} if keys else set()
    for key in keys:
        if len(names) == 1 and not _first_or_last(names[0], key, plain):
            continue
        if name_fit(names, key) or _untitled_fit(names, key, plain):
            return True
    return False


def _untitled_fit(
    names: list[str], key: str, plain: set[str]
) -> tuple[int, int, bool, int] | None:
    """How a label fits a run of two names without the one that is a title ("Lord Frederick"
    as "Frederick"), counted as a name missing."""
    untitled = [name for name in names if name not in TITLE_WORDS]
    if len(names) != 2 or len(untitled) != 1 or not _first_or_last(untitled[0], key, plain):
        return None
    fit = name_fit(untitled, key)
    return None if fit is None else (fit[0] + 1, *fit[1:])


def _plain_keys(rows: list[NameRow]) -> dict[ox.NamedNode, set[str]]:
    """Per entity, its keys of the fewest words: its label without an aside or suffix."""
    keys: dict[ox.NamedNode, set[str]] = {}
    for row in rows:
        keys.setdefault(row.entity, set()).add(row.key)
    fewest = {}
    for entity, held in keys.items():
        least = min(len(key.split()) for key in held)
        fewest[entity] = {key for key in held if len(key.split()) == least}
    return fewest


def _first_or_last(name: str, key: str, plain: set[str]) -> bool:
    label_words = key.split()
    return key in plain and bool(label_words) and name in (label_words[0], label_words[-1])


def _name_fits(
    runs: list[NameRun], rows: list[NameRow]
) -> dict[int, list[tuple[tuple[int, int, bool, int], ox.NamedNode]]]:
    """Per run that matched, how each label that fits it fits (an entity once per fit), best
    fit first, then by IRI."""
    candidates: dict[int, set[tuple[tuple[int, int, bool, int], ox.NamedNode]]] = {}
    for row in rows:
        fit = name_fit(runs[row.run].names, row.key)
        if fit is not None:
            candidates.setdefault(row.run, set()).add((fit, row.entity))
    return {i: sorted(fits, key=lambda item: (item[0], item[1].value))
            for i, fits in candidates.items()}


def name_fit(names: list[str], key: str) -> tuple[int, int, bool, int] | None:
    """How a label's key fits a run's names, as (names missing, names shortened, reordered,
    extra words), or None when it does not fit.

    A name fits the label's word equal to it, else, shortened, the first longer word it begins
    if it is an initial (one letter) or has MIN_SHORT_FORM letters or more. With MIN_NAMES_TO_MISS_ONE names or more, one may be missing: in place of a word of
    the label that begins with the same SAME_START letters (a variant spelling), or, when the
    label has no other word, between two names that fit (a title left out: "William Louis,
    Prince of Anhalt-Harzgerode" for "William Louis of Anhalt-Harzgerode"). Otherwise every
    name must fit, with at most MAX_EXTRA_NAME_WORDS extra content words.
    """
    label_words = key.split()
    positions: list[int] = []
    missing = []
    shortened = 0
    for name in names:
        free = [i for i in range(len(label_words)) if i not in positions]
        place = next((i for i in free if label_words[i] == name), None)
        if place is None and (len(name) == 1 or len(name) >= MIN_SHORT_FORM):
            place = next(
                (i for i in free if label_words[i].startswith(name) and label_words[i] != name),
                None,
            )
            shortened += place is not None
        if place is None:
            missing.append(name)
        else:
            positions.append(place)
    extra = [
        word
        for i, word in enumerate(label_words)
        if i not in positions and word not in STOPWORDS and word not in NAME_CONNECTORS
    ]
    if missing:
        one = len(missing) == 1 and len(names) >= MIN_NAMES_TO_MISS_ONE
        name = missing[0]
        spelt_alike = len(extra) == 1 and len(name) > SAME_START and (
            extra[0][:SAME_START] == name[:SAME_START]
        )
        left_out = not extra and names[0] != name and names[-1] != name
        if not (one and (spelt_alike or left_out)):
            return None
    elif len(extra) > MAX_EXTRA_NAME_WORDS:
        return None
    return len(missing), shortened, positions != sorted(positions), len(extra)


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


class IndexTerm(vocab.TgTerms):
    """What the label index records of a labelled term."""

    LABEL = "indexedLabel"
    KEY = "labelKey"
    """A matching key of the label (`label_keys`)."""
    WORD = "labelWord"
    """A content word of a key."""
    STEM = "labelStem"
    """The stem of a content word, for retrieval's ranking, which meets the question's words
    by stem."""


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
        return sorted({stem(word) for word in self.words})

    def triples(self) -> list[ox.Triple]:
        """The entry as the index graph holds it."""
        found = [(IndexTerm.KEY, self.keys), (IndexTerm.WORD, self.words),
                 (IndexTerm.STEM, self.stems)]
        return [ox.Triple(self.entity, IndexTerm.LABEL.iri, self.label)] + [
            ox.Triple(self.entity, term.iri, ox.Literal(text))
            for term, texts in found for text in texts
        ]


def update_label_index(store: Store, progress: Callable[[int], None] | None = None) -> int:
    """Index every label not yet indexed; returns how many were added.

    An index written by an older version is rebuilt whole, so every entry has what grounding
    now looks up. The pending names are read whole first, into a temporary file, then written
    INDEX_BATCH at a time: a read left open while the store is written holds what the writes
    replace, so its memory grew with the labels written (1 GB for a million labels). Between
    the two the store lets go of what the read cached, which grows with the KG: the step's peak
    is then the larger of reading and writing, not their sum (at 10 M facts 343 -> 252 MB).
    """
    if not store.run("label_index_version", version=INDEX_VERSION).boolean:
        clear_label_index(store)
    added = 0
    with tempfile.TemporaryFile(prefix="tgsparql-labels-") as spool:
        ox.serialize(_pending_names(store), spool, ox.RdfFormat.N_TRIPLES)
        if spool.tell() > DROP_CACHES_PAST:
            store.drop_caches()
        spool.seek(0)
        names = ox.parse(spool, ox.RdfFormat.N_TRIPLES)
        while read := list(itertools.islice(names, INDEX_BATCH)):
            batch = [
                IndexEntry(name.subject, name.object, keys)  # type: ignore[arg-type]
                for name in read if (keys := label_keys(name.object.value))
            ]
            if batch:
                write_index_entries(store, batch)
                added += len(batch)
                if progress is not None:
                    progress(len(batch))
    return added


def _pending_names(store: Store) -> Iterator[ox.Triple]:
    """The names of the KG not yet in the index, as the index's tg:indexedLabel triples, one
    at a time where the store can stream them: a load of a million labels must not hold them
    all."""
    for row in store.stream("label_index_pending"):
        entity, label = row.get("entity"), row.get("label")
        if isinstance(entity, ox.NamedNode) and isinstance(label, ox.Literal):
            yield ox.Triple(entity, IndexTerm.LABEL.iri, label)


def write_index_entries(store: Store, entries: Iterable[IndexEntry]) -> None:
    """Add the entries to the index graph by the store's bulk path: no transaction held in
    memory, as a SPARQL update's is until it commits."""
    triples = [triple for entry in entries for triple in entry.triples()]
    data = io.BytesIO(ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES))
    store.bulk_load(data, ox.RdfFormat.N_TRIPLES, graph=vocab.GRAPH_LABEL_INDEX)


def clear_label_index(store: Store) -> None:
    """Empty the index, marked with the version about to fill it: its quads removed
    REMOVE_BATCH an update, so a large index is not one transaction held in memory whole."""
    batch: list[Solution] = []
    for row in itertools.chain(store.stream("label_index_entries"), [None]):
        if row is not None:
            batch.append(row)
        if batch and (row is None or len(batch) == REMOVE_BATCH):
            store.run("label_index_remove", index_entries=[
                ox.Triple(row["subject"], row["predicate"], row["object"])  # type: ignore[arg-type]
                for row in batch
            ])
            batch = []
    store.run("label_index_clear", version=INDEX_VERSION)


def rebuild_label_index(store: Store) -> int:
    clear_label_index(store)
    return update_label_index(store)
