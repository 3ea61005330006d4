"""A deterministic selector and answer writer that needs no model.

It ranks edges by how much of the question they cover, alone or as a two-edge path through a
shared node, and says so in each reason: the terms that matched and the score. An edge is a
candidate only when it says something the question asks beyond naming a seed: a question word
in its predicate or in a label of an end that is not a seed, or it links two seeds. A hub's
edges all carry its name, and naming it is no evidence that an edge answers anything; so
edges added around the seeds that share no other word with the question are never chosen and
never change what is. Its answer is
composed from the selected edges only. It is honest plumbing for offline use and tests, not a
substitute for an LLM's reading of the question.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyoxigraph as ox

from tgsparql.asking.citations import NOTHING_SELECTED
from tgsparql.asking.grounding import name_runs, names_label, stems
from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import (
    ExtractionOutput, ExtractionRequest, ExtractionUnsupported, SelectionOutput, SelectionRequest,
)
from tgsparql.asking.llm.usage import Usage
from tgsparql.rdf.text import words

MAX_SELECTED = 6
CHAIN_DISCOUNT = 0.9
"""A path through a node the question does not name: the multi-hop pattern."""
STAR_DISCOUNT = 0.8
"""Two facts about an entity the question names."""
SEED_BONUS = 0.05
KEEP_RATIO = 0.75
ANSWER_KIND_BONUS = 0.1
"""For an edge whose object is of the kind the question asks for (a value, or an entity)."""
ASKS_FOR_VALUE = frozenset({"when", "year", "date", "old", "many", "much", "long"})
ASKS_FOR_ENTITY = frozenset({"where", "who", "whom"})

@dataclass
class _Scored:
    edge: LabeledEdge
    matched: set[str]
    telling: bool
    """It matches the question beyond the seeds' names, or links two seeds (`_tells`)."""
    score: float = 0.0
    partner: LabeledEdge | None = None
    via: set[str] = field(default_factory=set)


EXTRACTION_REFUSED = (
    "ingesting needs an LLM to read the text, and the offline backend does not invent facts: "
    "set OPENAI_BASE_URL (or pass --llm openai --base-url URL)"
)


class OfflineBackend:
    name = "offline"

    def select(self, request: SelectionRequest) -> SelectionOutput:
        question = stems(request.question)
        if not question or not request.edges:
            return SelectionOutput(text="", usage=None)
        seeds = set(request.seeds)
        asked = set(question) - _seed_names(request.edges, seeds)
        scored = {
            edge.id: _Scored(
                edge,
                set(question) & set(stems(" ".join(edge.labels))),
                _tells(edge, asked, seeds),
            )
            for edge in request.edges
        }
        scored = {key: item for key, item in scored.items() if item.telling}
        by_node: dict[ox.NamedNode | ox.Literal, list[_Scored]] = {}
        for item in scored.values():
            for node in (item.edge.triple.subject, item.edge.triple.object):
                by_node.setdefault(node, []).append(item)
        total = len(question)
        for item in scored.values():
            item.score = len(item.matched) / total
            item.via = set(item.matched)
            for node in (item.edge.triple.subject, item.edge.triple.object):
                discount = STAR_DISCOUNT if node in seeds else CHAIN_DISCOUNT
                for other in by_node.get(node, []):
                    if other is item or not (other.matched - item.matched):
                        continue
                    if not (item.matched - other.matched):
                        continue  # this edge would add nothing to the path
                    union = item.matched | other.matched
                    path_score = discount * len(union) / total
                    if path_score > item.score:
                        item.score, item.partner, item.via = path_score, other.edge, union
            if seeds & {item.edge.triple.subject, item.edge.triple.object}:
                item.score += SEED_BONUS
            item.score += _answer_kind(request.question, item.edge)
        ranked = sorted(
            (item for item in scored.values() if item.matched or item.partner),
            key=lambda item: (-item.score, item.edge.id),
        )
        if not ranked:
            return SelectionOutput(text="", usage=None)
        best = ranked[0].score
        chosen = [item for item in ranked if item.score >= KEEP_RATIO * best][:MAX_SELECTED]
        lines = [
            json.dumps({"id": item.edge.id, "reasoning": _reason(item, question, seeds)},
                       ensure_ascii=False)
            for item in chosen
        ]
        return SelectionOutput(text="\n".join(lines) + "\n", usage=None)

    def answer(
        self, question: str, facts: Sequence[LabeledEdge], *, stream: bool
    ) -> OfflineAnswer:
        return OfflineAnswer(compose_answer(question, facts), stream)

    def extract(self, request: ExtractionRequest) -> ExtractionOutput:
        """Refuses: without a model, any facts it gave would be invented."""
        raise ExtractionUnsupported(EXTRACTION_REFUSED)


def _seed_names(edges: Sequence[LabeledEdge], seeds: set[ox.NamedNode]) -> set[str]:
    """The stems of the seeds' labels: the words the question names its entities with."""
    names: set[str] = set()
    for edge in edges:
        for label, end in ((edge.labels[0], edge.triple.subject),
                           (edge.labels[2], edge.triple.object)):
            if end in seeds:
                names |= set(stems(label))
    return names


def _tells(edge: LabeledEdge, asked: set[str], seeds: set[ox.NamedNode]) -> bool:
    """Whether the edge holds a question word (`asked`: none of the seeds' names) in its
    predicate or a label of an end that is not a seed, or links two seeds."""
    triple = edge.triple
    if triple.subject in seeds and triple.object in seeds and triple.subject != triple.object:
        return True
    told = [edge.labels[1]]
    told += [label for label, end in ((edge.labels[0], triple.subject),
                                      (edge.labels[2], triple.object)) if end not in seeds]
    return bool(asked & set(stems(" ".join(told))))


def _answer_kind(question: str, edge: LabeledEdge) -> float:
    """± ANSWER_KIND_BONUS when the edge's object is, or is not, what the question asks for."""
    asked = set(words(question))
    is_value = isinstance(edge.triple.object, ox.Literal)
    if asked & ASKS_FOR_VALUE:
        return ANSWER_KIND_BONUS if is_value else 0.0
    if asked & ASKS_FOR_ENTITY:
        return -ANSWER_KIND_BONUS if is_value else 0.0
    return 0.0


def _reason(item: _Scored, question: dict[str, str], seeds: set[ox.NamedNode]) -> str:
    own = ", ".join(repr(question[stem]) for stem in sorted(item.matched)) or "no question term"
    parts = [f"offline selector: this edge matches {own}"]
    if item.partner is not None:
        path = ", ".join(repr(question[stem]) for stem in sorted(item.via))
        parts.append(
            f"it shares a node with ({' '.join(item.partner.labels)}), the two together "
            f"matching {path}"
        )
    if seeds & {item.edge.triple.subject, item.edge.triple.object}:
        parts.append("it touches a seed entity of the question")
    return "; ".join(parts) + f"; score {item.score:.2f}"


def compose_answer(question: str, facts: Sequence[LabeledEdge]) -> str:
    """The entity the facts lead to, then the facts themselves, each citing its edge id.

    The lead entity is one the question does not already name, in full or by a name that is
    part of its label ("Vermeer" for "Johannes Vermeer"), preferring the end of a fact whose
    predicate the question asks about, a value or an entity as the question asks ("when" or
    "where"), an end rather than a node the facts share, and an object rather than a subject.
    """
    if not facts:
        return NOTHING_SELECTED
    asked = set(stems(question))
    statements = "; ".join(f"{' '.join(fact.labels)} [{fact.id}]" for fact in facts)
    uses = Counter(label for fact in facts for label in (fact.labels[0], fact.labels[2]))
    candidates = []
    runs = name_runs(question)
    question_words = set(words(question))
    wants_value = bool(question_words & ASKS_FOR_VALUE)
    wants_entity = not wants_value and bool(question_words & ASKS_FOR_ENTITY)
    for index, fact in enumerate(facts):
        asks_predicate = bool(set(stems(fact.labels[1])) & asked)
        ends = ((0, fact.labels[2], fact.triple.object), (1, fact.labels[0], fact.triple.subject))
        for position, label, term in ends:
            label_stems = set(stems(label))
            named = (label_stems and label_stems <= asked) or names_label(runs, label)
            if label and not named:
                is_value = isinstance(term, ox.Literal)
                wrong_kind = (wants_value and not is_value) or (wants_entity and is_value)
                rank = (not asks_predicate, wrong_kind, uses[label] > 1, index, position)
                candidates.append((rank, label))
    if not candidates:
        return f"From the knowledge graph: {statements}."
    lead = min(candidates)[1]
    return f"{lead}. From the knowledge graph: {statements}."


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
