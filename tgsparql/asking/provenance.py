"""Every write of the query-time record of docs/spec.md §2, in one place.

Each stage's record is one INSERT DATA template of `queries/`, rendered into a `Record`; the
Recorder writes one or more records in one update. The same template's quads, read back as TriG
(SPARQL's quad syntax is TriG's), are the `explain_triples` of the message that announces the
write, so what a client is told is exactly what the store was given, with no extra round trip.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from tgsparql.asking.citations import Citations
from tgsparql.asking.grounding import Grounding
from tgsparql.asking.llm.usage import Usage
from tgsparql.asking.retrieval import COUNT_UP_TO, Retrieved
from tgsparql.asking.selection import SelectedEdge
from tgsparql.asking.sources import ChunkSource
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds, llm_iri
from tgsparql.rdf.redact import redacted_text
from tgsparql.rdf.templates import InsertData, templates_for, to_literal
from tgsparql.stores.store import Store


@dataclass(frozen=True)
class SeedCut:
    """How many edges a seed had when retrieval cut them to its limit."""

    iri: ox.NamedNode
    seed: ox.NamedNode
    candidates: int
    more: bool
    """True when the seed had more than `candidates` edges (a hub, not counted further)."""


@dataclass(frozen=True)
class NameGrounding:
    """A name of the question that grounded as part of a label: the seed it grounded to, and
    where that seed ranked among the candidates carrying the name."""

    iri: ox.NamedNode
    name: str
    seed: ox.NamedNode
    rank: int
    candidates: int


@dataclass(frozen=True)
class CallUsage:
    """One LLM call's model and token counts as the session records them for BI (docs/spec.md
    §2): each number in one triple with the model, so tokens are summed by model from one scan
    of tg:selectionUsage or tg:answerUsage, with no join per call."""

    llm: ox.NamedNode
    """The model as an IRI (a triple term's subject cannot be a literal); tg:modelName names it."""
    model: str
    triples: tuple[ox.Triple, ...]
    """The input tokens with the model (or, when they were not reported, the model's name), so
    every call is counted once; then the output tokens, when reported."""


def call_usage(model: str | None, in_tokens: int | None, out_tokens: int | None) -> CallUsage | None:
    """What the session records of a call to `model`; None when no model was named."""
    if model is None:
        return None
    llm = llm_iri(model)
    first = (ox.Triple(llm, vocab.TG_IN_TOKEN, to_literal(in_tokens))
             if in_tokens is not None else
             ox.Triple(llm, vocab.TG_LLM_MODEL, to_literal(model)))
    rest = ([ox.Triple(llm, vocab.TG_OUT_TOKEN, to_literal(out_tokens))]
            if out_tokens is not None else [])
    return CallUsage(llm, model, (first, *rest))


@dataclass(frozen=True)
class EdgeSelectionRecord:
    iri: ox.NamedNode
    triple: ox.Triple
    reasoning: str
    truncated: bool = False
    documents: tuple[ox.NamedNode, ...] = ()
    """The documents that state the fact, through a chunk's subgraph (docs/spec.md §2)."""


@dataclass(frozen=True)
class CitationRecord:
    iri: ox.NamedNode
    edge_selection: ox.NamedNode
    sentence: str
    offset: int
    length: int


class RecordedTriples(Sequence[ox.Triple]):
    """The triples of one write, parsed from its TriG text only when first read.

    Most consumers never look at them, so recording does not pay for the parse.
    """

    def __init__(self, trig: str = "") -> None:
        self.trig = trig
        self._triples: list[ox.Triple] | None = None

    def _parsed(self) -> list[ox.Triple]:
        if self._triples is None:
            parsed = ox.parse(self.trig, ox.RdfFormat.TRIG) if self.trig else []
            self._triples = [quad.triple for quad in parsed]
        return self._triples

    def __getitem__(self, index: int) -> ox.Triple:  # type: ignore[override]
        return self._parsed()[index]

    def __len__(self) -> int:
        return len(self._parsed())

    def __iter__(self) -> Iterator[ox.Triple]:
        return iter(self._parsed())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return self._parsed() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RecordedTriples({len(self)} triples)"


@dataclass(frozen=True)
class Record:
    """One stage's record, rendered but not yet written: what INSERT DATA sends, and the
    triples to announce for it (in triple-term form, whatever the store's dialect)."""

    insert: InsertData
    triples: RecordedTriples

    @property
    def trig(self) -> str:
        return self.triples.trig


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Recorder:
    """Renders the stages of sessions for the explainability graph of one collection, and
    writes them: each `write` is one update, so records that must land together do."""

    def __init__(
        self,
        store: Store,
        collection: vocab.Collection = vocab.DEFAULT_COLLECTION,
        *,
        record_retrieved_edges: bool = True,
        mark_format: bool = False,
    ) -> None:
        """`mark_format`: look up, with the first session, whether the collection holds one yet,
        and if not write its record format with it (a recorder whose records are written to
        `store`; one that renders records for elsewhere reads nothing)."""
        self.store = store
        self.templates = store.templates
        self.collection = collection
        self.record_retrieved_edges = record_retrieved_edges
        self._format_settled = not mark_format

    def session(self, ids: SessionIds, question: str, started: dt.datetime) -> Record:
        record = self._render(
            "record_session", session=ids.session, question=question, started=started
        )
        record_format = self._format_to_mark()
        if record_format is None:
            return record
        mark = self.templates.insert_data("record_format", graph=self.collection.graph,
                                          format=record_format)
        return Record(InsertData(record.insert.prologue, record.insert.quads + mark.quads),
                      record.triples)

    def _format_to_mark(self) -> int | None:
        """The record format, with the first session of a collection this version starts, so
        that serving it reads one triple to know it needs no migration; one lookup per
        recorder, made with its first session."""
        if self._format_settled:
            return None
        self._format_settled = True
        started = self.store.run("migrate/collection_started", graph=self.collection.graph)
        return None if started.boolean else vocab.RECORD_FORMAT

    def retrieval(
        self,
        ids: SessionIds,
        grounding: Grounding,
        subgraph: Sequence[ox.Triple],
        retrieved: Retrieved | None = None,
    ) -> Record:
        """`retrieved` adds what the cut chose from: the ranking rule and, per seed, how many
        edges it had. Each seed found by a name that is part of its label records that name."""
        cuts = [
            SeedCut(ids.seed_cut(i), seed, min(count, COUNT_UP_TO), count > COUNT_UP_TO)
            for i, (seed, count) in enumerate(retrieved.candidates.items() if retrieved else ())
        ]
        return self._render(
            "record_retrieval",
            session=ids.session,
            retrieval=ids.retrieval,
            edge_count=len(subgraph),
            concepts=grounding.concepts,
            entities=grounding.seeds,
            retrieved_edges=list(subgraph) if self.record_retrieved_edges else [],
            ranking_rule=retrieved.rule if retrieved else None,
            seed_cuts=cuts,
            name_groundings=[
                NameGrounding(ids.name_grounding(i), m.name, m.entity, m.rank, m.candidates)
                for i, m in enumerate(grounding.names)
            ],
        )

    def selection(
        self,
        ids: SessionIds,
        edges: Sequence[SelectedEdge],
        invalid_ids: int,
        usage: Usage | None,
        sources: Mapping[ox.Triple, Sequence[ChunkSource]],
    ) -> Record:
        """`sources`: the chunks that state each selected fact
        (`tgsparql.asking.sources.facts_sources`), whose documents the record names, so that BI counts documents without walking the
        extraction provenance of every edge selection."""
        items = [
            EdgeSelectionRecord(ids.edge_selection(i), edge.triple, edge.reasoning,
                                edge.reasoning_truncated,
                                document_iris(s.document for s in sources.get(edge.triple, ())))
            for i, edge in enumerate(edges)
        ]
        return self._render(
            "record_selection",
            session=ids.session,
            retrieval=ids.retrieval,
            selection=ids.selection,
            items=items,
            documents=document_iris(d.value for item in items for d in item.documents),
            invalid_ids=invalid_ids,
            **_usage(usage),
        )

    def answer(
        self,
        ids: SessionIds,
        usage: Usage | None,
        ended: dt.datetime,
        citations: Citations | None = None,
        *,
        started: dt.datetime,
        selected: int,
        truncated: bool = False,
    ) -> Record:
        """The Answer, with the edge selections its text cites (and how many), each citation's
        sentence, how many of its markers named no selected edge and how many of its sentences
        cite none. `started`: the session's start, whose UTC day the closed session is counted
        under. `selected`: how many edges the Selection selected (an answer citing none of them
        marks its session for BI). `truncated`: the answer's text is cut (longer than the
        character limit, or the model stopped at its token limit)."""
        citations = citations or Citations()
        items = [
            CitationRecord(ids.citation(i), ids.edge_selection(c.edge), c.sentence, c.offset,
                           c.length)
            for i, c in enumerate(citations.citations)
        ]
        return self._render(
            "record_answer",
            session=ids.session,
            selection=ids.selection,
            answer=ids.answer,
            document=ids.answer_document,
            ended=ended,
            cited=[ids.edge_selection(i) for i in citations.cited],
            citations=items,
            invalid_citations=len(citations.invalid_ids),
            uncited_sentences=citations.uncited_sentences,
            started=started,
            selected=selected,
            truncated=truncated,
            **_usage(usage),
        )

    def failure(
        self, ids: SessionIds, error: str, ended: dt.datetime, *, started: dt.datetime
    ) -> Record:
        return self._render(
            "record_failure", session=ids.session, error=redacted_text(error), ended=ended,
            started=started
        )

    def write(self, *parts: Record | InsertData) -> None:
        """Every part in one INSERT DATA: one request and one transaction, all or nothing."""
        inserts = [part.insert if isinstance(part, Record) else part for part in parts]
        self.store.update(self.templates.insert_update(inserts))

    def _render(self, template: str, **params: Any) -> Record:
        """Render the template's blocks once; its triples are read back only when asked for."""
        params["graph"] = self.collection.graph
        insert = self.templates.insert_data(template, **params)
        quads = insert.quads
        if self.templates.dialect != "rdf12":
            quads = templates_for("rdf12").render_block(template, "quads", **params)
        return Record(insert, RecordedTriples(insert.prologue + quads))


def document_iris(iris: Iterable[str]) -> tuple[ox.NamedNode, ...]:
    """Each document once, in the order of their IRIs."""
    return tuple(ox.NamedNode(iri) for iri in sorted(set(iris)))


def _usage(usage: Usage | None) -> dict[str, Any]:
    usage = usage or Usage()
    return {"model": usage.model, "in_tokens": usage.in_tokens, "out_tokens": usage.out_tokens,
            "call": call_usage(usage.model, usage.in_tokens, usage.out_tokens)}
