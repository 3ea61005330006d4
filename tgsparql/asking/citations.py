"""Citations: the inline edge-id markers of an answer, each tied to the sentence that carries it.

The answer prompt gives every fact its edge id and asks for markers such as `[1a2b3c4d]` (or
`[1a2b3c4d, 5e6f7a8b]`) after what each fact supports. A marker is a bracket holding only
edge-id-shaped tokens; an id the selection did not choose (an edge retrieved but not selected,
or one that does not exist) is invalid and counted, never cited. Each citation keeps its
sentence — the part of the answer up to a sentence end or a semicolon, with the markers that
follow it — by exact offsets into the answer text as stored.

What an answer fails to cite is counted too (`AnswerCheck`), recorded on the Answer, and said
as warnings by every face that shows an answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

NOTHING_SELECTED: Final = "The knowledge graph holds no facts that answer this question."
"""The whole answer when no edge was selected: nothing for an LLM to write from."""

_MARKER: Final = re.compile(r"\[([^\[\]\n]{1,400})\]")
_EDGE_ID: Final = re.compile(r"[0-9a-f]{8}(?:-[1-9][0-9]*)?")
_ID_SEPARATORS: Final = re.compile(r"[\s,;]+")
_SENTENCE_END: Final = re.compile(r"[.!?;]+[\"'”’)]*(?=\s|$)|\n+")
_FOLLOWING_MARKER: Final = re.compile(r"[ \t]*" + _MARKER.pattern)
_WORD: Final = re.compile(r"\w+")
VERDICT_WORDS: Final = frozenset({"yes", "no", "and"})
"""Words a sentence may add to what the citing sentences hold and still claim nothing of its
own: the verdict drawn from them ("No.") and the word that lists what they give ("Marie Curie
and Pierre Curie.")."""


@dataclass(frozen=True)
class Citation:
    edge: int
    """The cited edge's index among the selected edges."""
    sentence: str
    offset: int
    """Of the sentence in the answer text, in characters."""
    length: int


@dataclass
class Citations:
    citations: list[Citation] = field(default_factory=list)
    invalid_ids: list[str] = field(default_factory=list)
    """Marker ids that name no selected edge, in the order written."""
    uncited_sentences: int = 0
    """Sentences that cite no selected edge and say more than the citing ones: a sentence all
    of whose words a citing sentence holds (a lead such as "Warsaw." before the facts that
    give it), but for VERDICT_WORDS ("No.", "Polonium and radium."), claims nothing uncited."""

    @property
    def cited(self) -> list[int]:
        """The cited edges' indexes, each once, in order of first citation."""
        return list(dict.fromkeys(citation.edge for citation in self.citations))


def find_citations(text: str, selected_ids: Sequence[str]) -> Citations:
    """The citations the answer `text` makes of the selected edges (ids in selection order)."""
    index = {edge_id: i for i, edge_id in enumerate(selected_ids)}
    spans = _sentences(text)
    found = Citations()
    seen: set[tuple[int, int]] = set()
    for marker in _MARKER.finditer(text):
        tokens = [token for token in _ID_SEPARATORS.split(marker.group(1)) if token]
        if not tokens or not all(_EDGE_ID.fullmatch(token) for token in tokens):
            continue  # a bracket of prose, not a marker
        start, end = next(span for span in spans if span[0] <= marker.start() < span[1])
        for token in tokens:
            if token not in index:
                found.invalid_ids.append(token)
            elif (start, index[token]) not in seen:
                seen.add((start, index[token]))
                found.citations.append(Citation(index[token], text[start:end], start, end - start))
    found.uncited_sentences = uncited_sentences(
        text, [(citation.offset, citation.sentence) for citation in found.citations], spans)
    return found


def uncited_sentences(text: str, citing: Iterable[tuple[int, str]],
                      spans: Sequence[tuple[int, int]] | None = None) -> int:
    """The sentences of the answer `text` that cite nothing and say more than the citing ones
    (`citing`: each citation's sentence offset and sentence, as recorded); an answer recorded
    before they were counted is counted from its citations so."""
    citing = list(citing)
    offsets = {offset for offset, _ in citing}
    cited_words = VERDICT_WORDS | {word for _, sentence in citing for word in _words(sentence)}
    return sum(1 for start, end in (_sentences(text) if spans is None else spans)
               if start not in offsets and not _words(text[start:end]) <= cited_words)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


@dataclass(frozen=True)
class AnswerCheck:
    """What an answer's text did with its selected edges, as recorded on the Answer."""

    selected: int
    cited: int
    """Selected edges the answer cites, each once."""
    invalid: int
    """Markers naming no selected edge."""
    uncited_sentences: int
    cut: bool = False
    """The answer ends early: the model hit its token limit or the text its character limit."""

    def warnings(self) -> list[str]:
        """What a reader should know before trusting the answer; none for a sound one. An
        answer with nothing selected says so itself and has nothing to cite."""
        said: list[str] = []
        if self.selected and not self.cited:
            said.append(f"the answer cites none of its {_count(self.selected, 'selected edge')}")
        elif self.selected and self.uncited_sentences:
            said.append(f"{_count(self.uncited_sentences, 'sentence')} of the answer "
                        f"{'cites' if self.uncited_sentences == 1 else 'cite'} no edge")
        if self.invalid:
            said.append(f"the answer cites {_count(self.invalid, 'id')} that "
                        f"{'names' if self.invalid == 1 else 'name'} no selected edge")
        if self.cut:
            said.append("the answer is cut short: it reached the model's token limit "
                        "(--max-tokens) or the kept characters (--max-answer-chars)")
        return said


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, leading space left out; markers right after a sentence's
    end (`… Warsaw. [1a2b3c4d]`) belong to it, not to the next one."""
    markers = [(m.start(), m.end()) for m in _MARKER.finditer(text)]
    spans: list[tuple[int, int]] = []
    start = 0
    for end_match in _SENTENCE_END.finditer(text):
        if any(a <= end_match.start() < b for a, b in markers):
            continue  # a separator inside a marker ends nothing
        end = end_match.end()
        while (following := _FOLLOWING_MARKER.match(text, end)) is not None:
            end = following.end()
        if end > start:
            spans.append((start, end))
            start = end
    if start < len(text) or not spans:
        spans.append((start, len(text)))
    return [(start + len(text[start:end]) - len(text[start:end].lstrip()), end)
            for start, end in spans]
