"""A session as its page shows it: the answer cut into passages at the sentences it cites, the
selected edges with their evidence highlighted in their chunks, the picture, the edges retrieved
but not selected, and (on the server's page) whether the record conforms to the shapes.
`page.py` renders it as HTML."""

from __future__ import annotations

from dataclasses import dataclass

from tgsparql.asking.sources import ChunkSource
from tgsparql.rdf.vocab import Collection
from tgsparql.rdf.iris import SessionIds
from tgsparql.record.conformance import Conformance
from tgsparql.record.explain import explain_session
from tgsparql.record.picture import Picture, picture
from tgsparql.record.readback import AnswerCitation, Explanation, RecordedEdge
from tgsparql.stores.store import Store

UNSELECTED_SHOWN = 200
"""How many retrieved-but-not-selected edges the page lists; the saved query lists them all."""


@dataclass(frozen=True)
class Highlighted:
    """A chunk's text cut around its evidence sentence, so the page can mark it."""

    before: str
    evidence: str
    after: str


@dataclass(frozen=True)
class Passage:
    """A run of the answer's text: plain, or a sentence that cites edges (`citations`)."""

    text: str
    citations: tuple[AnswerCitation, ...] = ()


@dataclass
class SessionView:
    explanation: Explanation
    picture: Picture
    conformance: Conformance | None = None
    """None where the page does not validate (`explain --format html`)."""
    unselected_query: str = ""
    """The saved query that lists every retrieved edge not selected, for this session."""

    @property
    def uuid(self) -> str:
        return SessionIds.from_session_iri(self.explanation.session).uuid

    @property
    def edges(self) -> list[RecordedEdge]:
        return self.explanation.selected

    @property
    def answer(self) -> list[Passage]:
        return passages(self.explanation.answer or "", self.explanation.citations)

    @property
    def unplaced_citations(self) -> list[AnswerCitation]:
        """Citations whose sentence is nowhere in the answer text (a record edited since)."""
        placed = {c.iri for p in self.answer for c in p.citations}
        return [c for c in self.explanation.citations if c.iri not in placed]


def session_view(store: Store, collection: Collection, session: str,
                 conformance: Conformance | None = None) -> SessionView:
    """Everything the session page shows, read as `explain_session` reads it; raises
    SessionNotFound for an unknown session."""
    explanation = explain_session(store, collection, session, UNSELECTED_SHOWN)
    unselected_query = store.templates.render(
        "_trace/session_unselected", graph=collection.graph,
        session=SessionIds.from_session_iri(session).session)
    return SessionView(explanation, picture(explanation.question or "", explanation.selected),
                       conformance, unselected_query)


def passages(answer: str, citations: list[AnswerCitation]) -> list[Passage]:
    """The answer cut into plain runs and cited sentences. A citation is placed at its recorded
    offset when its sentence stands there, else where the sentence first occurs; citations of
    one sentence share its passage; one overlapping a placed sentence is left unplaced."""
    spans: dict[tuple[int, int], list[AnswerCitation]] = {}
    for citation in citations:
        start = citation.offset
        sentence = citation.sentence
        if not sentence:
            continue
        if start is None or answer[start : start + len(sentence)] != sentence:
            start = answer.find(sentence)
        if start >= 0:
            spans.setdefault((start, start + len(sentence)), []).append(citation)
    out: list[Passage] = []
    at = 0
    for (start, end), group in sorted(spans.items()):
        if start < at:
            continue  # overlaps the sentence before it
        if start > at:
            out.append(Passage(answer[at:start]))
        out.append(Passage(answer[start:end], tuple(sorted(group, key=lambda c: c.edge_index))))
        at = end
    if at < len(answer):
        out.append(Passage(answer[at:]))
    return out


def highlight(source: ChunkSource) -> Highlighted | None:
    """The chunk text split at its evidence: at the recorded offset when it matches there,
    else where the evidence first occurs; None when there is no chunk text to show."""
    text = source.chunk_text
    if text is None:
        return None
    evidence = source.evidence
    if not evidence:
        return Highlighted(text, "", "")
    start = source.evidence_offset
    if start is None or text[start : start + len(evidence)] != evidence:
        start = text.find(evidence)
    if start < 0:
        return Highlighted(text, "", "")
    end = start + len(evidence)
    return Highlighted(text[:start], text[start:end], text[end:])
