"""A deterministic selector and answer writer that needs no model.

It keeps the edges on the paths a question walks from its seeds (`tgsparql.asking.llm.paths`):
each hop's predicate answers a relation word of the question, in the order the question nests
them, the last hop perhaps only the kind it asks for (a place, a date, a film). A neighbour
whose label merely shares a word with the question is no reason to keep an edge, so edges that
real noise adds around a seed, with the KG's own predicates and neighbours, are kept only when
they answer the question as well as the facts do. Each reason states the path, the words it
answers and its score. The answer names the end of the path, of the kind asked for, or, for a
comparison, the option whose values win ("yes"/"no" for "the same"), then states the facts,
each citing its edge. It is honest plumbing for offline use and tests, not a substitute for an
LLM's reading of the question.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from tgsparql.asking.citations import NOTHING_SELECTED
from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import (
    ExtractionOutput, ExtractionRequest, ExtractionUnsupported, SelectionOutput, SelectionRequest,
)
from tgsparql.asking.llm.paths import (
    Kind, Path, Reading, asks_whether, attested, clause_paths, clauses, compare, is_partial,
    named_ends, named_first, names, one_walk, path_seeds, seed_names,
)
from tgsparql.asking.llm.usage import Usage
from tgsparql.rdf.text import words

MAX_SELECTED = 6

EXTRACTION_REFUSED = (
    "ingesting needs an LLM to read the text, and the offline backend does not invent facts: "
    "set OPENAI_BASE_URL (or pass --llm openai --base-url URL)"
)


class OfflineBackend:
    name = "offline"

    def select(self, request: SelectionRequest) -> SelectionOutput:
        edges = request.edges
        present = {node for edge in edges for node in (edge.triple.subject, edge.triple.object)}
        seeds = [seed for seed in request.seeds if seed in present]
        seeds = seeds or named_ends(request.question, edges)
        starts = path_seeds(request.question, edges, seeds)
        paths = [path for found in clause_paths(request.question, edges,
                                                seed_names(edges, seeds), starts)
                 for path in found]
        chosen = _edges_of(attested(paths, request.roles))
        if not chosen:
            chosen = [(edge, None) for edge in edges if _links_seeds(edge, seeds)]
        lines = [
            json.dumps({"id": edge.id, "reasoning": _reason(edge, path, seeds)},
                       ensure_ascii=False)
            for edge, path in chosen[:MAX_SELECTED]
        ]
        return SelectionOutput(text="".join(line + "\n" for line in lines), usage=None)

    def answer(
        self, question: str, facts: Sequence[LabeledEdge], *, stream: bool
    ) -> OfflineAnswer:
        return OfflineAnswer(compose_answer(question, facts), stream)

    def extract(self, request: ExtractionRequest) -> ExtractionOutput:
        """Refuses: without a model, any facts it gave would be invented."""
        raise ExtractionUnsupported(EXTRACTION_REFUSED)


def _edges_of(paths: Sequence[Path]) -> list[tuple[LabeledEdge, Path]]:
    """Each edge of the paths once, with the best path it lies on: clause by clause, best
    first; the seeds' paths taken in turn, so a comparison keeps each option's."""
    readings = list({id(path.reading): path.reading for path in paths}.values())
    turns: dict[tuple[int, object], list[Path]] = {}
    for path in paths:
        turns.setdefault((readings.index(path.reading), path.seed), []).append(path)
    chosen: dict[str, tuple[LabeledEdge, Path]] = {}
    for index in range(max((len(turn) for turn in turns.values()), default=0)):
        for turn in turns.values():
            ranked = sorted(turn, key=lambda path: tuple(-x for x in path.rank))
            if index < len(ranked):
                for edge in ranked[index].edges:
                    chosen.setdefault(edge.id, (edge, ranked[index]))
    return sorted(chosen.values(), key=lambda pair: (
        readings.index(pair[1].reading), tuple(-x for x in pair[1].rank)))


def _links_seeds(edge: LabeledEdge, seeds: Sequence[object]) -> bool:
    """An edge between two seeds: a path the question names, though no word of it answers."""
    triple = edge.triple
    return triple.subject != triple.object and {triple.subject, triple.object} <= set(seeds)


def _reason(edge: LabeledEdge, path: Path | None, seeds: Sequence[object]) -> str:
    """Why the edge is kept: the words it answers, the path it lies on, and its score."""
    touches = bool({edge.triple.subject, edge.triple.object} & set(seeds))
    if path is None:
        return ("offline selector: this edge matches no question term; it links two seed "
                "entities of the question; score 0.00")
    reading = path.reading
    hop = path.edges.index(edge)
    own = path.answered[hop]
    named = (", ".join(repr(reading.words[word]) for word in own) if own
             else repr(reading.kind_word))
    walked = " — ".join(f"({' '.join(step.labels)})" for step in path.edges)
    answered = ", ".join(repr(reading.words[w]) for words in path.answered for w in words)
    parts = [f"offline selector: this edge matches {named}"]
    if is_partial(reading, edge, own):
        parts.append("its predicate says more than the question's relation words do")
    if len(path.edges) > 1:
        parts.append(f"it lies on the path {walked} from {path.labels[0]!r}, which answers "
                     f"{answered or 'no relation word'} in the order the question asks")
    if path.kind_grade == 2 and reading.kind_word:
        parts.append(f"the path ends in what {reading.kind_word!r} asks for")
    if touches:
        parts.append("it touches a seed entity of the question")
    return "; ".join(parts) + f"; score {_score(path):.2f}"


def _score(path: Path) -> float:
    """The path's share of the question's relation words and kind, weighed so that scores fall
    in the order paths rank: a word answered outweighs everything after it, a hop that answers
    its words only in part the kind, the kind a predicate read against its direction and a
    hop."""
    asked = sum(path.reading.relations.values()) + 0.2
    found = (path.covered - 0.3 * path.partial + 0.1 * path.kind_grade
             - 0.02 * path.reversed - 0.005 * len(path.edges))
    return max(0.0, found / asked)


def compose_answer(question: str, facts: Sequence[LabeledEdge]) -> str:
    """What the question asks for, then the facts themselves, each citing its edge id.

    The lead is the end of the path the question walks from the entities it names, of the kind
    asked for (every such end when it asks for several, "Which paintings ...", or when its best
    paths are one walk to several ends, "Who discovered radium?"), or, for a
    comparison, the option whose values win ("yes"/"no" for "the same"); no lead when the facts
    walk no such path.
    """
    if not facts:
        return NOTHING_SELECTED
    statements = "; ".join(f"{' '.join(fact.labels)} [{fact.id}]" for fact in facts)
    lead = _lead(question, facts)
    if lead is None:
        return f"From the knowledge graph: {statements}."
    return f"{lead}. From the knowledge graph: {statements}."


def _lead(question: str, facts: Sequence[LabeledEdge]) -> str | None:
    """What each clause of the question asks for, joined by "; ". A clause whose paths only
    end in the kind it asks for, by edges that answer another clause's words, has no answer
    among the facts: "Where was X born? And where did she die?" is not answered "Warsaw;
    Warsaw" by the one edge "X born in Warsaw"."""
    seeds = named_ends(question, facts)
    labels = {label for fact in facts for label in (fact.labels[0], fact.labels[2])}
    walked = clause_paths(question, facts, seed_names(facts, seeds), seeds)
    answering = {path.edges[-1].id for paths in walked for path in paths if path.answered[-1]}
    leads = [lead for clause, paths in zip(clauses(question), walked)
             if paths and not all(not path.answered[-1] and path.edges[-1].id in answering
                                  for path in paths)
             and (lead := _clause_lead(paths[0].reading, paths, clause, labels)) is not None]
    return "; ".join(leads) or None


def _clause_lead(reading: Reading, paths: list[Path], clause: str, labels: set[str]
                 ) -> str | None:
    """The end the clause's best paths reach; for a comparison, what comparing the options'
    values gives ("Yes" or "No" when it asks whether the option it names first wins, "Was
    Pierre Curie older than Marie Curie?", not which one does, "Was A or B born first?"), and
    nothing when the facts give fewer than two options a value: an entity is no answer to "Are
    A and B from the same country?", nor one director's date of birth to "Which film's director
    was born first, A or B?", and naming the option with the value would be a guess. Nothing
    for an amount ("how old", "how many"): no end is one, and a number drawn from the facts
    cites none. Nor is an end the answer to another question for yes or no (`asks_whether`):
    "Yes" when a path links two entities the clause names surely, among the facts' `labels`
    (`names`: "Did Marie Curie marry Pierre Curie?", "was vermeer born in delft?"), else
    nothing — that the KG states no such edge does not say there is none."""
    compared = compare(reading, paths)
    if compared in ("yes", "no"):
        return compared.capitalize()
    if compared is not None and asks_whether(clause) and "or" not in words(clause):
        # "Was A older than B?" asks whether A wins; "Was A or B born first?" which one does
        first = named_first(clause, {path.labels[0] for path in paths})
        return None if first is None else "Yes" if first == compared else "No"
    if compared is not None:
        return compared
    if reading.comparison is not None or reading.kind is Kind.AMOUNT:
        return None
    if asks_whether(clause):
        return "Yes" if any(names(clause, path.labels[0], labels)
                            and names(clause, path.end_label, labels) for path in paths) else None
    ends = list(dict.fromkeys(path.end_label for path in paths if path.end_label))
    if not ends:
        return None
    if len(ends) > 1 and (reading.plural or one_walk(paths)):
        return ", ".join(ends[:-1]) + " and " + ends[-1]
    return ends[0]


class OfflineAnswer:
    def __init__(self, text: str, stream: bool) -> None:
        self.text = text
        self.stream = stream
        self.usage: Usage | None = None

    def __iter__(self) -> Iterator[str]:
        if not self.stream:
            yield self.text
            return
        pieces = self.text.split(" ")
        for i in range(0, len(pieces), 4):
            chunk = " ".join(pieces[i : i + 4])
            yield chunk if i + 4 >= len(pieces) else chunk + " "
