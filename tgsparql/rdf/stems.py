"""Word stems, so a question's words meet the labels that say the same thing in another form
("born" and "place of birth", "films" and "film"): the offline selector and retrieval's ranking
compare stems, never surface words (`tgsparql.asking.grounding.stems` gives a text's)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache

import snowballstemmer

# Irregular forms the stemmer leaves apart, and the words that KG predicates use for what
# questions ask with others ("born" → place of birth, "die" → date of death, "grandfather" →
# father, "older" → date, "founded" → inception).
_LEMMAS = {
    "born": "birth",
    "die": "death",
    "dead": "death",
    "won": "win",
    "wrote": "write",
    "written": "write",
    "made": "make",
    "led": "lead",
    "began": "begin",
    "begun": "begin",
    "gave": "give",
    "given": "give",
    "taught": "teach",
    "held": "hold",
    "built": "build",
    "spoke": "speak",
    "spoken": "speak",
    "sang": "sing",
    "sung": "sing",
    "drew": "draw",
    "drawn": "draw",
    "grew": "grow",
    "grown": "grow",
    "knew": "know",
    "known": "know",
    "took": "take",
    "taken": "take",
    "sold": "sell",
    "told": "tell",
    "went": "go",
    "came": "come",
    "becam": "becom",
    "marriag": "spous",
    "marri": "spous",
    "husband": "spous",
    "wife": "spous",
    # where someone studied, worked or was held, as a KG names it ("educated at", "employer",
    # "place of detention"), and a birthday is a date of birth
    "studi": "educ",
    "graduat": "educ",
    "work": "employ",
    "detain": "detent",
    "birthday": "birth",
    # when a thing was founded or established, as a KG names it ("inception")
    "incept": "found",
    "establish": "found",
    # kin a KG states as the parent, child or sibling relation
    "grandfath": "father",
    "grandmoth": "mother",
    "patern": "father",
    "matern": "mother",
    "grandson": "child",
    "granddaught": "child",
    "uncl": "sibl",
    "aunt": "sibl",
    "nephew": "sibl",
    "niec": "sibl",
    "brother": "sibl",
    "sister": "sibl",
    "nation": "countri",
    # a comparison in time asks for dates ("Which film came out first?")
    "first": "date",
    "earlier": "date",
    "earliest": "date",
    "later": "date",
    "latest": "date",
    "older": "date",
    "oldest": "date",
    "younger": "date",
    "youngest": "date",
    "newer": "date",
    "recent": "date",
    "longer": "date",
    "releas": "date",
    "stepmoth": "spous",
    "stepfath": "spous",
}


ASKS_FOR = {"where": "place", "when": "date"}
"""The stem a KG's predicates name what a question word asks for with: "Where did X die?" asks
for the place of death, not its date or cause; "When was X born?" for the date of birth. The
question words themselves are stopwords, which name nothing."""


@cache
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


_KEPT = frozenset(_LEMMAS.values())
"""Stems the lemmas name: words in their own right ("mother", "father"), not agent nouns."""


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A word's stem, remembered: the pure-Python stemmer would otherwise dominate selection,
    since the same label words recur across every question's subgraph."""
    found = _stemmer().stemWord(word)
    if found in _LEMMAS:
        return _LEMMAS[found]
    return found if found in _KEPT else _doer(found)


def _doer(found: str) -> str:
    """The verb's stem for an agent noun's, which the stemmer leaves apart: "the discoverer of
    polonium" asks what "discovered" states, "the founder" what "founded by" does, "who directed"
    what "director" does. The stem of the verb's -ing form, so that a silent e comes back
    ("writer" → "write"); a stem that stays short ("owner", "water") is left as it is."""
    if len(found) < 6 or not found.endswith(("er", "or")):
        return found
    verb = _stemmer().stemWord(found[:-2] + "ing")
    return _LEMMAS.get(verb, verb)


SPOUSE = stem("spouse")
"""What "in-law" says: kin by marriage."""


def in_law(words: Sequence[str], at: int) -> bool:
    """Whether the word at `at` is the "law" of "mother-in-law": kin by marriage, which a KG
    states through a spouse."""
    return at >= 2 and words[at - 1 : at + 1] == ["in", "law"]


def stem_in_place(words: Sequence[str], at: int) -> str:
    """The stem of the word at `at` as the text around it uses it: the "law" of "X-in-law"
    asks for a spouse."""
    return SPOUSE if in_law(words, at) else stem(words[at])


_KIN_THROUGH = {
    "uncle": (("father", "sibling"), ("mother", "sibling")),
    "aunt": (("father", "sibling"), ("mother", "sibling")),
    "stepmother": (("father", "spouse"),),
    "stepfather": (("mother", "spouse"),),
    "father": (("mother", "spouse"),),
    "mother": (("father", "spouse"),),
}


def kin_through(word: str) -> tuple[tuple[str, str], ...]:
    """The ways a KG states the kin a word names through a parent, each (parent, then): an
    uncle or aunt is a sibling of the father or mother, a stepmother the father's spouse, a
    father the mother's spouse (where no edge names him); none for any other word."""
    return _KIN_THROUGH.get(word) or _KIN_THROUGH.get(word.removesuffix("s"), ())


def stands_in(word: str) -> bool:
    """Whether the word's stem is that of the last step of its way through a parent ("uncle"
    stems as "sibling"): read alone, it would ask for the person's own sibling or spouse."""
    return any(stem(then) == stem(word) for _, then in kin_through(word))


def through_parents(word: str) -> list[str]:
    """The stems of the steps of the kin a word names through a parent (`kin_through`): what
    retrieval must rank to reach it, the parent at the person and the sibling or spouse at the
    parent ("uncle": father, mother, sibling; "father": mother, spouse)."""
    return list(dict.fromkeys(stem(step) for way in kin_through(word) for step in way))
