"""The paths a question walks over labelled edges, read from its words and the KG's labels alone.

A question asks for the end of a path from an entity it names (a seed): "Where was the director
of film X born?" walks X —director→ a person —place of birth→ a place. Its relation words (the
content words that name no seed, `Reading.relations`) are answered by the predicates' labels,
compared by stem (`tgsparql.rdf.stems`), one hop after another in the order the question nests
them: nearest the seed first ("the place of birth of the director of X": director, then place of
birth; "X's mother's birthday": mother, then birthday), a verb after its noun phrase ("Where was
the composer of X born?": composer, then born). The last hop may instead answer only the kind of
thing asked for (`Kind`: where → a place, when → a date, which N → an N), as "In which city is
the museum that holds X?" reaches a city by a hop the question names only by "which city". A
neighbour whose label shares a word with the question is no step: only predicates answer
relation words, and a path's every hop must answer one it has not answered yet.

Comparisons ("Who was born first, A or B?", "Are A and B from the same country?") walk a path
from each option and compare the values at the ends (`compare`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

import pyoxigraph as ox

from tgsparql.asking.grounding import ASIDE, STOPWORDS, match_key, name_runs, named_labels
from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.roles import RoleReader, Roles
from tgsparql.rdf import vocab
from tgsparql.rdf.stems import in_law, kin_through, stands_in, stem, stem_in_place
from tgsparql.rdf.text import words

Node = ox.NamedNode | ox.Literal | ox.BlankNode | ox.Triple
MAX_HOPS = 2
ATTESTED_USES = 2
"""Other edges that must name an end by its hop's words for the KG to say it is what it is."""
ATTESTED_LIFT = 2.0
"""How many times more often than its other predicates on average a node must use one of those."""


class Kind(Enum):
    """What a question's wh-word asks for."""

    ANY = "anything"
    DATE = "a date"
    PLACE = "a place"
    ENTITY = "an entity"
    AMOUNT = "an amount"
    """An age, a length of time, a count: the facts are given, but no end of theirs leads the
    answer (a year of death is no age)."""


AMOUNTS = frozenset({"old", "long", "many", "much"})
"""The words after "how" that ask for an amount ("How old was she when she died?")."""


DATE_NOUNS = frozenset({"year", "date", "day", "month", "centuri", "decad", "time"})
"""Stems of the nouns after "which"/"what" that ask for a date ("In which year ...")."""
PLACE_WORDS = frozenset(stem(word) for word in (
    "place location located city country town village residence headquarters site address"
).split())
"""Words of a predicate whose object is a place."""
LOCATIVE = frozenset({"in", "at"})
"""A predicate label ending in one of these ("born in", "worked at") leads to a place."""
INVERSE_ENDINGS = frozenset({"of", "by"})
"""A predicate label ending in one of these ("daughter of", "held by") names its subject by
what it is to the object."""
EARLIEST = frozenset("first earlier earliest older oldest".split())
LATEST = frozenset("later latest younger youngest recent recently newer last".split())
LONGEST = frozenset("longer longest".split())
AGE = frozenset({"older", "oldest", "younger", "youngest"})
"""Age counts from birth: these compare when each option was born."""
SAME = frozenset({"same"})
CAUSE = stem("cause")
"""What "why" asks for."""

_MONTHS = {name: number for number, name in enumerate(
    "january february march april may june july august september october november december"
    .split(), 1)}
_YEAR = re.compile(r"^\d{3,4}$")
_ISO_DATE = re.compile(r"^(\d{3,4})-(\d{1,2})-(\d{1,2})(?:T[\d:.]+(?:Z|[+-]\d\d:\d\d)?)?$")


def date_of(label: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a label that is a date ("December 24, 1886", "15 November 1911",
    "2013", "1867-11-07"); None for any other label."""
    iso = _ISO_DATE.match(label.strip())
    if iso is not None:
        return int(iso.group(1)), int(iso.group(2)), int(iso.group(3))
    tokens = re.findall(r"[A-Za-z]+|\d+", label)
    if not tokens or len(tokens) > 3:
        return None
    year = month = day = 0
    for token in tokens:
        lower = token.lower()
        if lower in _MONTHS and not month:
            month = _MONTHS[lower]
        elif _YEAR.match(token) and not year:
            year = int(token)
        elif token.isdigit() and len(token) <= 2 and not day:
            day = int(token)
        else:
            return None
    return (year, month, day) if year else None


@dataclass(frozen=True)
class Reading:
    """What a question asks, from its words."""

    relations: Counter[str]
    """Stems of the words a path's predicates must answer (twice for "paternal grandfather")."""
    rank: dict[str, float]
    """Each relation stem's place in the order the path answers them, nearest the seed first."""
    words: dict[str, str]
    """Stem → the question's word, for reasons."""
    kind: Kind
    kind_word: str
    """The question's word that asks for the kind ("where", "which city"), for reasons."""
    noun: str | None
    """The stem of the noun "which"/"what" asks for ("film", "countri"), if any."""
    plural: bool
    comparison: frozenset[str] | None
    """EARLIEST, LATEST, LONGEST or SAME when the question compares its options."""
    whether: bool
    """Whether it asks yes or no of what it names ("Did Curie discover radium?"), comparing
    nothing."""


YES_OR_NO = frozenset("is are was were am did does do has have had can could will would".split())
"""The first words of a question that asks whether something holds ("Did X marry Y?")."""
PRONOUNS = frozenset("he she it they him her them his hers its their".split())
"""Words by which a clause speaks of what the clause before it found."""
_CLAUSE = re.compile(r",?\s+and\s+(?=(?:what|where|when|who|whom|which|how)\b)", re.IGNORECASE)


def clauses(question: str) -> list[str]:
    """The questions a question joins ("Who did X marry, and where was she born?"): each is
    read, and walked from the seeds, on its own."""
    return _CLAUSE.split(question)


def clause_paths(question: str, edges: Sequence[LabeledEdge], seed_labels: Collection[str],
                 starts: Sequence[Node]) -> list[list[Path]]:
    """Each clause's reading's best paths (`best`) from `starts`; a clause that speaks of
    someone by a pronoun may walk from the ends of the clause before instead: the pronoun
    means whom the question names ("Who did Marie Curie marry, and where was she born?"), or,
    where paths from there answer less, what the clause before found ("..., and where did he
    die?": the KG has no place of her death, but one of his)."""
    found: list[list[Path]] = []
    for clause in clauses(question):
        reading = read(clause, seed_labels)
        paths = _through_kin(reading, best(reading, walk(reading, edges, starts), starts),
                             edges, starts)
        if found and PRONOUNS & set(words(clause)):
            ends = list(dict.fromkeys(
                end for path in found[-1]
                if isinstance(end := path.nodes[-1], ox.NamedNode) and end not in starts))
            further = best(reading, walk(reading, edges, ends), ends)
            if further and (not paths or max(path.rank for path in further)
                            > max(path.rank for path in paths)):
                paths = further
        found.append(paths)
    return found


def _through_kin(reading: Reading, paths: list[Path], edges: Sequence[LabeledEdge],
                 starts: Sequence[Node]) -> list[Path]:
    """The paths, or, where the question asks for kin (`kin_through`) that no hop of theirs names
    by its word, the paths through a parent: "Who is X's uncle?" walks X —father→ Y —sibling→
    Z, not to X's own sibling, which the stems alone read "uncle" as; "Who is X's father?"
    walks through X's mother's spouse when no edge names X's father. An uncle asked for that
    no path reaches is not answered by a sibling of X's; a father or mother, by what the
    question's own word reads."""
    for stem_found, word in reading.words.items():
        ways = kin_through(word)
        if not ways or reading.relations[stem_found] != 1 or any(
                word in match_key(edge.labels[1]).split() for path in paths
                for edge in path.edges):
            continue
        through: list[Path] = []
        for parent, last in ways:
            first, then = stem(parent), stem(last)
            if first in reading.relations or then != stem_found and then in reading.relations:
                continue
            relations = reading.relations.copy()
            del relations[stem_found]
            relations.update((first, then))
            place = reading.rank[stem_found]
            rank = {found: at for found, at in reading.rank.items() if found != stem_found}
            variant = replace(reading, relations=relations,
                              rank={**rank, first: place - 0.5, then: place},
                              words={**reading.words, first: word, then: word})
            through += [path for path in best(variant, walk(variant, edges, starts), starts)
                        if path.covered == sum(relations.values())]
        if through or stands_in(word):
            return through  # what the stems alone read "uncle" as is a sibling: none of X's
    return paths


def asks_whether(clause: str) -> bool:
    """Whether the clause asks yes or no ("Was Marie Curie born in Warsaw?")."""
    said = words(clause)
    return bool(said) and said[0] in YES_OR_NO


def says(clause: str, label: str) -> bool:
    """Whether the clause writes every word of `label` but stopwords (its aside left out): a
    part of it is not enough to affirm a fact of it ("the Nobel Prize in Physics 1903" is a
    Nobel Prize, but not the Nobel Prize in Chemistry 1935)."""
    own = [word for word in match_key(ASIDE.sub(" ", label)).split() if word not in STOPWORDS]
    return bool(own) and set(own) <= set(match_key(clause).split())


def names(clause: str, label: str, labels: Collection[str]) -> bool:
    """Whether the clause names `label`'s entity surely enough to affirm a fact of it: writes
    it in full (`says`), or names it by one word of it, as grounding does ("vermeer" for
    Johannes Vermeer), when no other of `labels` is named by a part ("curie", with both Curies
    among them, names neither). Several words that are part of a label are no such name: "the
    Nobel Prize in Physics 1903" names another prize than "Nobel Prize in Chemistry 1935"."""
    if says(clause, label):
        return True
    by_part = {found for found in named_labels(clause, labels) if not says(clause, found)}
    single = {run.names[0] for run in name_runs(clause) if len(run.names) == 1}
    return by_part == {label} and bool(single & set(match_key(label).split()))


def read(question: str, seed_labels: Collection[str]) -> Reading:
    """The relation words of `question` that are not in the names of its seeds, in path order,
    and what it asks for."""
    tokens = match_key(ASIDE.sub(" ", question)).split()
    names = {stem(word) for label in seed_labels for word in match_key(label).split()}
    seed_at = [i for i, token in enumerate(tokens) if token not in STOPWORDS
               and stem(token) in names]
    kind, kind_word, noun, plural, noun_at = _kind(tokens)
    # a word of a seed's name compares nothing ("The Last Coupon"), but the question may say it
    # again ("Which film was released first, The First 7th Night or ...?")
    said = Counter(word for label in set(seed_labels) for word in match_key(label).split())
    asking = {token for token, count in Counter(tokens).items() if count > said[token]}
    comparison = next((group for group in (EARLIEST, LATEST, LONGEST, SAME)
                       if group & asking), None)
    relations: Counter[str] = Counter()
    words: dict[str, str] = {}
    places: dict[str, float] = {}
    for i, token in enumerate(tokens):
        if token in STOPWORDS or i == noun_at or comparison and token in comparison:
            continue
        found = stem_in_place(tokens, i)
        if found in names:
            continue
        relations[found] += 1
        words.setdefault(found, token)
        # X's mother-in-law is X's spouse's mother: the spouse comes first
        places.setdefault(found, i - 2 - 0.5 if in_law(tokens, i) and seed_at and i > seed_at[-1]
                          else i)
    if AGE & asking and "birth" not in relations:
        relations["birth"] += 1
        words.setdefault("birth", next(t for t in tokens if t in AGE & asking))
        places.setdefault("birth", len(tokens))
    if comparison is not None:  # "Which film ...?" names the options; "the same N" the values
        noun, plural = None, False
    if comparison is SAME and (compared := _compared(tokens)) is not None:
        noun, kind_word = stem(compared), f"same {compared}"
    if comparison is not None and comparison is not SAME:
        kind, kind_word = Kind.DATE, next(t for t in tokens if t in comparison & asking)
    rank = _order(tokens, places, seed_at, comparison is not None)
    whether = comparison is None and asks_whether(question)
    return Reading(relations, rank, words, kind, kind_word, noun, plural, comparison, whether)


def _kind(tokens: list[str]) -> tuple[Kind, str, str | None, bool, int | None]:
    """The kind asked for, the words that ask it, the noun after "which"/"what" (its stem,
    whether plural, its place)."""
    for i, token in enumerate(tokens):
        if token == "when":
            return Kind.DATE, token, None, False, None
        if token == "where":
            return Kind.PLACE, token, None, False, None
        if token in ("who", "whom"):
            return Kind.ENTITY, token, None, False, None
        if token == "why":  # asks for a cause, as "what cause" would
            return Kind.ANY, token, CAUSE, False, None
        if token == "how" and i + 1 < len(tokens) and tokens[i + 1] in AMOUNTS:
            return Kind.AMOUNT, f"how {tokens[i + 1]}", None, tokens[i + 1] == "many", None
        if token == "how" and i + 1 < len(tokens) and tokens[i + 1] in YES_OR_NO:
            return Kind.ANY, token, CAUSE, False, None  # "How did X die?" asks as "why" does
        if token in ("which", "what") and i + 1 < len(tokens):
            after = tokens[i + 1]
            if after in STOPWORDS:
                return Kind.ANY, token, None, False, None
            noun = stem(after)
            plural = after.endswith("s") and not after.endswith("ss") and noun != after
            kind = (Kind.DATE if noun in DATE_NOUNS
                    else Kind.PLACE if i and tokens[i - 1] in ("in", "at")
                    else Kind.ANY)
            return kind, f"{token} {after}", noun, plural, i + 1
    return Kind.ANY, "", None, False, None


def _compared(tokens: list[str]) -> str | None:
    """The noun after "same" ("the same country"): what the options' values are."""
    after = tokens[tokens.index("same") + 1 :]
    return after[0] if after and after[0] not in STOPWORDS else None


def _order(tokens: list[str], places: dict[str, float], seed_at: list[int],
           options: bool) -> dict[str, float]:
    """The order a path answers the relation words in, nearest the seed first: the nouns of a
    possessive chain after the seed ("X's mother's"), then those of the "of" chain before it,
    nearest first ("the place of birth of the director of X"), then the rest after it, in
    order (a closing verb: "Where was the composer of X born?"). A comparison that lists its
    options last ("Which film has the director who died first, A or B?") reads as written."""
    if not seed_at:
        return {word: place for word, place in places.items()}
    first, last = seed_at[0], seed_at[-1]
    if options and all(place < first for place in places.values()):
        return {word: place for word, place in places.items()}
    order: dict[str, tuple[int, float]] = {}
    for word, place in places.items():
        if place < first:
            order[word] = (1, first - place)
        elif place > last and _possessive(tokens, last, round(place)):
            order[word] = (0, place)
        else:
            order[word] = (2, place)
    ranked = sorted(order, key=order.__getitem__)
    return {word: index for index, word in enumerate(ranked)}


def _possessive(tokens: list[str], last_seed: int, place: int) -> bool:
    """Whether the words between the seed and `place` begin and end with the "s" of a
    possessive: `place` is a link of the chain "X's mother's birthday"."""
    between = tokens[last_seed + 1 : place]
    return bool(between) and between[0] == "s" and between[-1] == "s"


# ---- paths


def _stems_of(label: str) -> list[str]:
    return [stem(word) for word in match_key(label).split() if word not in STOPWORDS]


@dataclass(frozen=True)
class Path:
    """A walk from a seed, one edge a hop, with what each hop answers."""

    reading: Reading
    """What the question, or the clause of it that the path answers, asks."""
    seed: Node
    edges: tuple[LabeledEdge, ...]
    nodes: tuple[Node, ...]
    """The seed, then the node each hop reaches."""
    labels: tuple[str, ...]
    """The label of each node."""
    answered: tuple[tuple[str, ...], ...]
    """The relation stems each hop answers; empty for a last hop that answers the kind only."""
    kind_grade: int
    """2 when the end is of the kind asked for, 1 when nothing tells, 0 when it is not."""
    reversed: int
    """Hops that read their predicate against its direction (`_against`)."""
    partial: int
    """Hops whose predicate answers a relation word but says more than the question's relation
    words do (`is_partial`)."""

    @property
    def end_label(self) -> str:
        return self.labels[-1]

    @property
    def covered(self) -> int:
        return sum(len(words) for words in self.answered)

    @property
    def rank(self) -> tuple[int, int, int, int, int]:
        """Greater is better: more words answered, by predicates that say no more than the
        question does, the kind asked for, predicates read as stated, shorter."""
        return (self.covered, -self.partial, self.kind_grade, -self.reversed, -len(self.edges))


@dataclass
class _Graph:
    """The edges by node, both ways, with each node's label and the labels of its types."""

    edges: Sequence[LabeledEdge]
    around: dict[Node, list[tuple[LabeledEdge, Node]]] = field(default_factory=dict)
    label: dict[Node, str] = field(default_factory=dict)
    types: dict[Node, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for edge in self.edges:
            triple = edge.triple
            self.label.setdefault(triple.subject, edge.labels[0])
            self.label.setdefault(triple.object, edge.labels[2])
            self.around.setdefault(triple.subject, []).append((edge, triple.object))
            if triple.object != triple.subject:
                self.around.setdefault(triple.object, []).append((edge, triple.subject))
            if triple.predicate == vocab.RDF_TYPE:
                self.types.setdefault(triple.subject, []).append(edge.labels[2])


def walk(reading: Reading, edges: Sequence[LabeledEdge], seeds: Sequence[Node]) -> list[Path]:
    """Every path of up to MAX_HOPS from a seed that answers the question: each hop answers a
    relation word not yet answered, or, last, the kind asked for that its start is not of, when
    no edge of its start answers a word left (one that does is the relation asked, though of
    another kind: a date of death for "Where did X die?"). A path may pass through another
    seed ("Where was Curie's husband born?": Marie Curie, then Pierre Curie, both "Curie")."""
    graph = _Graph(edges)
    asks_kind = reading.kind not in (Kind.ANY, Kind.AMOUNT) or reading.noun is not None
    found: list[Path] = []
    # a year beside a name ("Being Human (2005 film)") tells which one is meant: it is a date
    # of that seed, and no path goes through it but one by a predicate that names a date
    named = any(not _is_value(seed, graph) for seed in seeds)
    for seed in seeds:
        hops: list[tuple[tuple[LabeledEdge, ...], tuple[Node, ...], tuple[tuple[str, ...], ...]]]
        hops = [((), (seed,), ())]
        dated = named and _is_value(seed, graph)
        for _ in range(MAX_HOPS):
            grown = []
            for walked, nodes, answered in hops:
                if len(nodes) > 1 and _is_value(nodes[-1], graph):
                    continue  # a value ends a path: what else has it is no answer
                left = reading.relations - Counter(w for words in answered for w in words)
                steps = []
                for edge, other in graph.around.get(nodes[-1], []):
                    if other in nodes or not _coherent(edge, graph) or (
                            dated and not walked and not _names_date(edge)):
                        continue
                    words = _answers(edge.labels[1], left)
                    step = (walked + (edge,), nodes + (other,), answered + (words,))
                    if not words or _in_order(reading, step[2]):
                        steps.append(step)
                # the relation asked is there, of another kind than asked ("Where did X die?",
                # and X has a date of death only): another relation's end of that kind
                # ("place of birth") is no answer
                asked_here = any(step[2][-1] for step in steps)
                for step in steps:
                    words = step[2][-1]
                    grade = _grade(reading, graph, step[0], step[1])
                    kind_hop = not words and asks_kind and grade == 2 and not asked_here and (
                        not walked or _grade(reading, graph, walked, nodes) < 2)
                    if words:
                        grown.append(step)
                    if words or kind_hop:
                        found.append(_path(reading, graph, seed, *step, grade))
            hops = grown
    return found


def _coherent(edge: LabeledEdge, graph: _Graph) -> bool:
    """Whether the edge's object is of the kind its predicate's label names: a date for a
    predicate that names one ("date of death"), anything but a date for one that names a place
    ("place of birth"); an edge that says otherwise ("place of birth: 1820", "date of death:
    a film") answers nothing."""
    if _names_date(edge):
        return _is_value(edge.triple.object, graph)
    return not PLACE_WORDS & set(_stems_of(edge.labels[1])) or date_of(edge.labels[2]) is None


def _names_date(edge: LabeledEdge) -> bool:
    return bool(DATE_NOUNS & set(_stems_of(edge.labels[1])))


def _is_value(node: Node, graph: _Graph) -> bool:
    return isinstance(node, ox.Literal) or date_of(graph.label.get(node, "")) is not None


def _answers(predicate: str, left: Counter[str]) -> tuple[str, ...]:
    """The relation words among `left` that a predicate's label answers."""
    found: list[str] = []
    for word in _stems_of(predicate):
        if left[word] > found.count(word):
            found.append(word)
    return tuple(found)


def _grade(reading: Reading, graph: _Graph, edges: Sequence[LabeledEdge],
           nodes: Sequence[Node]) -> int:
    """2 when the path's end is of the kind asked for, 0 when it is not, 1 when nothing tells."""
    end, label = nodes[-1], graph.label.get(nodes[-1], "")
    # a predicate read backwards tells nothing of its subject's kind: what "holds" or "painted"
    # a painting is no painting, and what is "located in" a city no place
    told = not _against(edges[-1], nodes[-2])
    predicate = _stems_of(edges[-1].labels[1]) if told else []
    is_date = date_of(label) is not None
    grade = 1
    if reading.kind is Kind.DATE:
        grade = 2 if is_date else 0
    elif reading.kind is Kind.PLACE:
        last_word = match_key(edges[-1].labels[1]).rsplit(" ", 1)[-1] if told else ""
        grade = (0 if is_date or DATE_NOUNS & set(predicate)
                 else 2 if PLACE_WORDS & set(predicate) or last_word in LOCATIVE else 1)
    elif reading.kind is Kind.ENTITY:
        grade = 0 if is_date or isinstance(end, ox.Literal) else 1
    if reading.noun and grade:
        if is_date and reading.noun not in DATE_NOUNS:
            return 0  # a date is no country, film or nationality, whatever leads to it
        kinds = {*predicate,
                 *(word for kind in graph.types.get(end, []) for word in _stems_of(kind))}
        named = reading.noun in kinds or _says_noun(label, reading)
        grade = 2 if named else min(grade, 1)
    return grade


def _says_noun(label: str, reading: Reading) -> bool:
    """Whether a node's own name says it is what the question asks for ("Mexico City" for
    "which city"), by the question's very word: a name that merely shares its stem ("National
    Public Radio" for "what nationality") says nothing of the kind."""
    asked = reading.kind_word.rsplit(" ", 1)[-1]
    return any(word in (asked, asked + "s") or word + "s" == asked
               for word in match_key(label).split())


def _in_order(reading: Reading, answered: tuple[tuple[str, ...], ...]) -> bool:
    """Whether the hops answer the question's words in the order it nests them."""
    order = [min(reading.rank.get(word, 0) for word in words) for words in answered if words]
    return all(a <= b for a, b in zip(order, order[1:]))


def _against(edge: LabeledEdge, start: Node) -> bool:
    """Whether a hop from `start` reads the edge's predicate against its direction: "X
    director Y" says Y is X's director, so X's director is forward from X; "Y daughter of X"
    says Y is X's daughter, so X's daughter is backward from X."""
    inverse = match_key(edge.labels[1]).rsplit(" ", 1)[-1] in INVERSE_ENDINGS
    forward = edge.triple.subject == start
    return forward == inverse


def _path(reading: Reading, graph: _Graph, seed: Node, edges: tuple[LabeledEdge, ...],
          nodes: tuple[Node, ...], answered: tuple[tuple[str, ...], ...], grade: int) -> Path:
    against = sum(_against(edge, start) for edge, start in zip(edges, nodes))
    partial = sum(is_partial(reading, edge, words) for edge, words in zip(edges, answered))
    labels = tuple(graph.label.get(node, "") for node in nodes)
    return Path(reading, seed, edges, nodes, labels, answered, grade, against, partial)


def is_partial(reading: Reading, edge: LabeledEdge, words: tuple[str, ...]) -> bool:
    """Whether a hop answers a relation word only in part: its predicate's label has a word the
    question's relation words do not ("Where does X work?" asks for an employer, which "work
    location" names only with more). A hop that answers the kind alone is not partial, nor one
    that answers only the noun of what is asked for: "the same country" asks for a value that
    is a country, which "country of citizenship" gives as well as "country" does."""
    asked = set(words) - {reading.noun}
    return bool(asked) and not set(_stems_of(edge.labels[1])) <= reading.relations.keys()


def best(reading: Reading, paths: Iterable[Path], seeds: Sequence[Node]) -> list[Path]:
    """The paths the question walks: from each seed whose best path answers as much as any
    (words answered, by predicates that say no more, kind), every path as good as its best; by
    seed, then rank. A comparison asks the same of each option, so a path whose predicates more
    options' paths share comes first, and, when it asks whether they have "the same N", before
    that a path to a value more options reach by that walk: the value they share is what the
    question is about, and an option's other paths that answer as well are edges that merely
    look like the question. Only paths that read every hop as its predicate states it count as
    reaching a value: one read against a predicate's direction says nothing of what its end is.
    Options share a walk when its predicates are the same, read the same way round: from HADAG,
    back along "X —narrative location→ HADAG" then on by "basin country", is not Chemours' walk
    forward along "Chemours —narrative location→ Y" then on by "basin country". A value two
    options reach by different walks ("country of citizenship" from one, "basin country" from
    the other) is no attribute they share: one of the two is a look-alike met by chance."""
    by_seed: dict[Node, list[Path]] = {}
    for path in paths:
        if path.kind_grade:  # an end of another kind than asked answers nothing
            by_seed.setdefault(path.seed, []).append(path)
    if not by_seed:
        return []
    walks = {id(path): _walk(path) for found in by_seed.values() for path in found
             } if reading.comparison is not None else {}
    shared: Counter[tuple[tuple[str, bool], ...]] = Counter()
    values: Counter[tuple[tuple[tuple[str, bool], ...], str]] = Counter()
    if reading.comparison is not None:
        for found in by_seed.values():
            shared.update({walks[id(path)] for path in found})
            if reading.comparison is SAME:  # reached as its predicates state it
                values.update({(walks[id(path)], _value_key(path.end_label))
                               for path in found if not path.reversed})

    def rank(path: Path) -> tuple[int, ...]:
        # "the same N": a value another option has too is what the question asks about
        walk = walks.get(id(path), ())
        return (values[walk, _value_key(path.end_label)], shared[walk], *path.rank)

    # shared value, shared predicates, words, words answered in part, kind
    top = max(rank(path)[:5] for found in by_seed.values() for path in found)
    chosen = []
    for seed in seeds:
        found = by_seed.get(seed, [])
        if not found or max(rank(path) for path in found)[:5] != top:
            continue
        mark = max(rank(path) for path in found)
        chosen += sorted((path for path in found if rank(path) == mark),
                         key=lambda path: [edge.id for edge in path.edges])
    return chosen


def attested(paths: Sequence[Path], roles: RoleReader | None) -> list[Path]:
    """The paths, but where equally good paths of one clause reach different ends (from one
    option of a comparison, which asks each option for its value; from any seed of another
    question for one thing), only those whose last hop's predicate their start uses least often
    that way round (`_uses`): a question for one thing ("Which country ...?", "When ...?") asks
    for a value its start has one of, so a person whose "country" edges reach tens of
    neighbours has one "country of citizenship", the country asked for. Of those, only those to
    an end that is told to be what the last hop reaches, if any is: an entity the KG says is
    (`_told`), a date by a predicate that names a date. "country of citizenship:
    Austrian" and "country of origin: Interstate 5" answer "Which country ...?" alike, but the
    KG names Austrian by "country" in many other edges and the road in none; "date of death:
    953" and "cause of death: 9 June 1938" answer "When did X die?" alike, but only the first
    says it gives a date. Of ends the KG tells, only those it names so most surely
    (`_told`): America, which tens of edges call a country, over a man three edges call so
    among his many others. The start's counts come first: what a node's own edges are is read
    from more of them than what an end is called by others, which any node of many edges is
    called now and then. Paths from several seeds are first held to the best of them
    (`Path.rank`: a hop read against its predicate's direction tells less). One read of the KG
    (`roles`) for all the ends and starts in question, none when no entity is."""
    groups: dict[tuple[int, Node | None], list[Path]] = {}
    for path in paths:
        if not path.reading.plural:  # a question for several things wants them all
            option = path.seed if path.reading.comparison is not None else None
            groups.setdefault((id(path.reading), option), []).append(path)
    dropped: set[int] = set()
    torn = []
    for group in groups.values():
        top = max(path.rank for path in group)  # seeds' paths may read their hops less well
        dropped.update(id(path) for path in group if path.rank != top)
        ranked = [path for path in group if path.rank == top]
        for kept in (_linking(ranked, {path.seed for path in group}), _met(ranked)):
            if kept:
                dropped.update(id(path) for path in ranked if path not in kept)
                ranked = kept
        if len({path.nodes[-1] for path in ranked}) > 1:
            torn.append(ranked)
    entities = [node for group in torn for path in group
                for node in (path.nodes[-1] if not _is_date(path) else None, path.nodes[-2])
                if isinstance(node, ox.NamedNode)]
    known = roles(entities) if roles is not None and entities else {}
    for group in torn:
        uses = {id(path): _uses(path, known) for path in group}
        fewest = min(uses.values())
        least = [path for path in group if uses[id(path)] == fewest]
        told = {id(path): surety for path in least
                if (surety := _told(path, known)) is not None}
        surest = max(told.values(), default=0.0)
        kept = {key for key, surety in told.items() if surety == surest}
        dropped.update(id(path) for path in group
                       if id(path) not in (kept or {id(path) for path in least}))
    return [path for path in paths if id(path) not in dropped]


def _linking(ranked: list[Path], seeds: set[Node]) -> list[Path]:
    """Of a question for yes or no, the paths between two of the entities it names: "Did
    Curie discover radium?" asks of radium, not of polonium, which Marie Curie discovered as
    well. None for any other question."""
    if not ranked or not ranked[0].reading.whether:
        return []
    return [path for path in ranked if path.nodes[-1] in seeds and path.nodes[-1] != path.seed]


def _met(ranked: list[Path]) -> list[Path]:
    """Of equally good paths from several seeds, those to an end that the most seeds reach,
    when more than one does: "Who discovered polonium and radium?" asks for whom both lead to,
    Marie Curie, not Pierre Curie, who discovered radium alone. None when no end is shared."""
    reaching: dict[Node, set[Node]] = {}
    for path in ranked:
        reaching.setdefault(path.nodes[-1], set()).add(path.seed)
    most = max((len(seeds) for seeds in reaching.values()), default=0)
    if most < 2:
        return []
    return [path for path in ranked if len(reaching[path.nodes[-1]]) == most]


def _uses(path: Path, roles: Roles) -> int:
    """How many edges of the KG its start reaches by the last hop's predicate, that way round:
    a question for one thing ("Which country ...?", "When ...?") asks for a value its start has
    one of, as a person has one date of death, not for one of a list ("country" to each of
    several neighbours); 0 when the KG was not read."""
    edge, start = path.edges[-1], path.nodes[-2]
    found = roles.get(start, Counter()) if isinstance(start, ox.NamedNode) else Counter()
    return found[(edge.triple.object == start, edge.labels[1])]


def _is_date(path: Path) -> bool:
    return date_of(path.end_label) is not None


def _told(path: Path, roles: Roles) -> float | None:
    """How surely the KG tells that the path's end is what the last hop reaches; None when it
    does not. A date is told by a predicate that names a date (surety 0: the KG does not name a
    date so). An entity is told when the KG names it, on the side the last hop reaches it, by a
    predicate that shares a word with that hop's in ATTESTED_USES other edges at least, and
    ATTESTED_LIFT times as often as it uses its other predicates of that side on average (a
    node that a few edges name so at random, as any node of many edges is, is not told); its
    surety is how many times as often (against at least one use)."""
    if _is_date(path):
        return 0.0 if _names_date(path.edges[-1]) else None
    most, usual = _named_so(path, roles)
    if most < ATTESTED_USES or most < ATTESTED_LIFT * usual:
        return None
    return most / max(usual, 1.0)


def _named_so(path: Path, roles: Roles) -> tuple[int, float]:
    """(the most edges other than the path's own that name its end, on the side the last hop
    reaches it, by one predicate that shares a word with that hop's; how many it names it by
    each of its other predicates of that side, on average)."""
    edge, end = path.edges[-1], path.nodes[-1]
    incoming = edge.triple.subject == path.nodes[-2]
    found = roles.get(end, Counter()) if isinstance(end, ox.NamedNode) else Counter()
    side = {label: uses for (into, label), uses in found.items() if into == incoming}
    words = set(_stems_of(edge.labels[1]))
    like, unlike = [], []
    for label, uses in side.items():
        if words & set(_stems_of(label)):
            like.append(uses - (label == edge.labels[1]))  # the edge walked is one of them
        else:
            unlike.append(uses)
    return max(like, default=0), sum(unlike) / max(len(unlike), 1)


def one_walk(paths: Sequence[Path]) -> bool:
    """Whether the paths all take one walk from one seed: the same predicates, read the same
    way round ("radium ←discovered— Marie Curie", "radium ←discovered— Pierre Curie")."""
    return len({(path.seed, _walk(path)) for path in paths}) == 1


def _walk(path: Path) -> tuple[tuple[str, bool], ...]:
    """Each hop's predicate, and whether the hop reads it against its direction."""
    return tuple((edge.labels[1], _against(edge, start))
                 for edge, start in zip(path.edges, path.nodes))


def seed_names(edges: Sequence[LabeledEdge], seeds: Sequence[Node]) -> list[str]:
    """The labels the seeds are named by, but for a seed whose every word some predicate here
    uses ("Death" for "Where was the place of death of ..."): its words ask, not name."""
    return list(_naming(edges, seeds).values())


def path_seeds(question: str, edges: Sequence[LabeledEdge], seeds: Sequence[Node]
               ) -> list[Node]:
    """The seeds the paths start from: those `seed_names` names, and those the question writes
    as a name, capitalised ("Who's Your Brother?"), though a predicate uses their words; not
    one whose words it says as words ("the date of death of ...", where grounding found an
    entity "Death"), whose own edges would answer what the question asks of the name. All of
    them when none is named."""
    named = _naming(edges, seeds)
    said = {word for run in name_runs(question) for word in run.names}
    labels = _seed_labels(edges, seeds)
    return [seed for seed in seeds
            if seed in named or said & set(words(labels.get(seed, "")))] or list(seeds)


def _naming(edges: Sequence[LabeledEdge], seeds: Sequence[Node]) -> dict[Node, str]:
    used = {word for edge in edges for word in _stems_of(edge.labels[1])}
    return {end: label for end, label in _seed_labels(edges, seeds).items()
            if not set(_stems_of(label)) <= used}


def _seed_labels(edges: Sequence[LabeledEdge], seeds: Sequence[Node]) -> dict[Node, str]:
    return {end: label for edge in edges
            for label, end in ((edge.labels[0], edge.triple.subject),
                               (edge.labels[2], edge.triple.object))
            if end in seeds}


def named_ends(question: str, edges: Sequence[LabeledEdge]) -> list[Node]:
    """The ends of `edges` that the question names: all of their label's words are in it, or
    it names them by a part of it as grounding finds them ("Vermeer" for "Johannes Vermeer");
    if none is, those that share the most words with it."""
    asked = {stem(word) for word in match_key(question).split() if word not in STOPWORDS}
    labels: dict[Node, str] = {}
    for edge in edges:
        for label, end in ((edge.labels[0], edge.triple.subject),
                           (edge.labels[2], edge.triple.object)):
            if end not in labels and _stems_of(label):
                labels[end] = label
    named = named_labels(question, labels.values())
    shares: dict[Node, float] = {}
    for end, label in labels.items():
        own = set(_stems_of(label))
        shares[end] = 1.0 if label in named else len(own & asked) / len(own)
    top = max(shares.values(), default=0.0)
    if not top:
        return []
    return [end for end, share in shares.items() if share == top]


# ---- comparing the options


def compare(reading: Reading, paths: Sequence[Path]) -> str | None:
    """The answer to a comparison between the seeds the paths start from: "yes"/"no" for
    "same", else the label of the option whose value is first, last or spans longest; None
    when fewer than two options have a value."""
    if reading.comparison is None:
        return None
    values: dict[Node, list[Path]] = {}
    for path in paths:
        values.setdefault(path.seed, []).append(path)
    if len(values) < 2:
        return None
    if reading.comparison is SAME:
        keys = [{_value_key(path.end_label) for path in found} for found in values.values()]
        return "yes" if set.intersection(*keys) else "no"
    dated = {}
    for seed, found in values.items():
        dates = sorted(d for d in (date_of(path.end_label) for path in found) if d is not None)
        if dates:
            dated[seed] = (dates, found[0].labels[0])
    if len(dated) < 2:
        return None
    if reading.comparison is LONGEST:
        span = {seed: _years(dates[-1]) - _years(dates[0]) for seed, (dates, _) in dated.items()}
        winner = max(dated, key=lambda seed: span[seed])
    elif reading.comparison is EARLIEST:
        winner = min(dated, key=lambda seed: dated[seed][0][0])
    else:
        winner = max(dated, key=lambda seed: dated[seed][0][-1])
    return dated[winner][1]


def named_first(clause: str, labels: Collection[str]) -> str | None:
    """Of the options' labels, the one the clause names first, by the words of each that the
    others' do not hold ("Was Pierre Curie older than Marie Curie?": "pierre" before "marie");
    None when that does not tell them apart."""
    tokens = match_key(clause).split()
    own = {label: set(match_key(label).split()) - STOPWORDS for label in labels}
    first: dict[str, int] = {}
    for label, words_of in own.items():
        others = set().union(*(w for other, w in own.items() if other != label))
        at = [i for i, token in enumerate(tokens) if token in words_of - others]
        if at:
            first[label] = min(at)
    if len(first) < len(own) or len(set(first.values())) < len(first):
        return None
    return min(first, key=lambda label: first[label])


def _years(date: tuple[int, int, int]) -> float:
    return date[0] + date[1] / 12 + date[2] / 365


def _value_key(label: str) -> str:
    """A value as compared for sameness: its words' stems ("Poles" and "Pole" alike)."""
    return " ".join(_stems_of(label)) or match_key(label)
