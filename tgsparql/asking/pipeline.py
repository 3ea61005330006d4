"""The GraphRAG query: session → retrieval → selection → answer, each stage recorded (docs/spec.md §5)."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import (
    AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping, Sequence,
)
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import pyoxigraph as ox

from tgsparql.asking.citations import NOTHING_SELECTED, AnswerCheck, Citations, find_citations
from tgsparql.asking.grounding import Grounding, ground, update_label_index
from tgsparql.asking.labels import LabelGraph, get_labelgraph, local_name
from tgsparql.asking.librarian import Librarian, StoreLibrarian
from tgsparql.asking.llm.base import AnswerStream, Backend, SelectionOutput, SelectionRequest
from tgsparql.asking.llm.usage import Usage
from tgsparql.asking.messages import Error, GraphRagResponse, GroundedName, Source
from tgsparql.asking.provenance import Record, Recorder, now
from tgsparql.asking.retrieval import RetrievalLimits, Retrieved, retrieve
from tgsparql.asking.roles import role_reader
from tgsparql.asking.selection import ParsedSelection, SelectedEdge, parse_selection
from tgsparql.asking.sources import ChunkSource, facts_sources
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.rdf.templates import InsertData, TemplateError
from tgsparql.rdf.terms import check_text
from tgsparql.stores.locking import stepping_aside
from tgsparql.stores.store import Store

MAX_QUESTION_CHARS = 10_000
T = TypeVar("T")
_Explains = list[tuple[ox.NamedNode, Record | None]]
"""Records written but not yet announced, each with the IRI its explain message names."""
_Answering = Future[tuple[AnswerStream, Iterator[str]]]
"""The answer under way: its stream, and its chunks with the first already asked for."""
_Found = Mapping[ox.Triple, Sequence[ChunkSource]]
"""The chunks each selected fact was extracted from, read by one query over the provenance."""


@dataclass(frozen=True)
class OutputLimits:
    """How much of what the LLM writes is kept, shown and stored: a reply of megabytes (a
    model that rambles, a hostile server) becomes its beginning, flagged `tg:truncated`, and
    the session still completes. An answer the model itself stopped at its token limit is
    flagged the same way."""

    reason_chars: int = 2_000
    """Characters kept of each edge's reason."""
    answer_chars: int = 20_000
    """Characters kept of the answer; the rest is not read."""


class QuestionError(ValueError):
    """A question that cannot be asked: empty, too long, or not storable text."""


class StageError(RuntimeError):
    """A failure inside one stage; the message names the stage."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"{stage} failed: {error}")
        self.stage = stage
        self.error = error


class GraphRag:
    """Answers questions from the KG of a store and records how, per docs/spec.md §2."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        *,
        collection: vocab.Collection = vocab.DEFAULT_COLLECTION,
        limits: RetrievalLimits | None = None,
        librarian: Librarian | None = None,
        record: bool = True,
        record_retrieved_edges: bool = True,
        index_labels: bool = True,
        write_retrieval_early: bool | None = None,
        output_limits: OutputLimits | None = None,
    ) -> None:
        """`write_retrieval_early`: write (and announce) the session and its retrieval while
        the LLM selects, rather than with the selection. Earlier explain messages and a write
        hidden behind the LLM, for one more request: the default where writes cost no round
        trip (the embedded store), not on a remote endpoint."""
        self.store = store
        self.backend = backend
        self.templates = store.templates
        self.collection = collection
        self.recorder = Recorder(
            store, collection, record_retrieved_edges=record_retrieved_edges, mark_format=record
        )
        self.limits = limits or RetrievalLimits()
        self.librarian = librarian or StoreLibrarian(store)
        self.record = record
        self.output_limits = output_limits or OutputLimits()
        self.write_retrieval_early = (
            not store.round_trips if write_retrieval_early is None else write_retrieval_early
        )
        if index_labels:
            update_label_index(store)

    def query(self, question: str, *, stream: bool = False) -> Iterator[GraphRagResponse]:
        """The messages of one session, in the order of docs/spec.md §6; never raises for bad input."""
        try:
            check_question(question)
        except QuestionError as error:
            yield _error("invalid-question", str(error))
            return
        yield from _Session(self, question, stream).run()

    async def aquery(self, question: str, *, stream: bool = False) -> AsyncIterator[GraphRagResponse]:
        """`query` for asyncio: each step runs in a worker thread, so the loop is never blocked."""
        messages = self.query(question, stream=stream)
        done = object()
        try:
            while True:
                message = await asyncio.to_thread(next, messages, done)
                if message is done:
                    return
                yield message  # type: ignore[misc]
        finally:
            # A consumer that stops early still gets its session closed as failed.
            await asyncio.to_thread(messages.close)

    def ask(self, question: str) -> tuple[str, list[GraphRagResponse]]:
        """The whole answer and every message, for callers that do not stream."""
        messages = list(self.query(question))
        return "".join(m.response for m in messages if m.message_type == "chunk"), messages


def check_question(question: object) -> str:
    if not isinstance(question, str):
        raise QuestionError(f"the question must be text, not {type(question).__name__}")
    try:
        check_text(question, "the question")
    except TemplateError as error:
        raise QuestionError(str(error)) from None
    if not question.strip():
        raise QuestionError("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}"
        )
    return question


class _Session:
    """One run of the pipeline; knows whether its record is open, for the failure path."""

    def __init__(self, rag: GraphRag, question: str, stream: bool) -> None:
        self.rag = rag
        self.question = question
        self.stream = stream
        self.ids = SessionIds.new()
        self.started = now()
        self.session: Record | None = None
        self.held: list[Record] = []
        """Records built but not yet written; a failure writes them with itself."""
        self.writing: Future[None] | None = None
        """The write under way in a worker, if any."""
        self.finished = False
        self.names: list[GroundedName] = []
        """The names that grounded as part of a seed's label, for the final message."""

    def run(self) -> Iterator[GraphRagResponse]:
        try:
            yield from self._stages()
        except StageError as error:
            yield self._fail(str(error))
        except GeneratorExit:
            self._fail("the client stopped reading before the session ended")
            raise
        except Exception as error:  # a defect must still close the session and say why
            yield self._fail(f"unexpected {type(error).__name__}: {error}")

    def _stages(self) -> Iterator[GraphRagResponse]:
        explains, labelgraph, selecting = self._retrieval()
        if self.rag.write_retrieval_early:
            _stage("retrieval", self._written)
            yield from self._explains(explains)
            explains = []
        parsed, found, answering = yield from self._selection(explains, labelgraph, selecting)
        yield from self._answer(parsed, found, answering)

    def _retrieval(self) -> tuple[_Explains, LabelGraph, Future[SelectionOutput | None]]:
        """The session and its retrieval recorded (and held for writing), the retrieved edges'
        labels read, and the LLM's selection started; the explain messages still to send."""
        rag, ids, question = self.rag, self.ids, self.question
        recorder = rag.recorder
        self.session = self._hold(
            _stage("session", lambda: self._build(lambda: recorder.session(ids, question, self.started)))
        )
        grounding, retrieved = _stage("retrieval", self._retrieve)
        subgraph = retrieved.edges
        retrieval = self._hold(_stage("retrieval", lambda: self._build(
            lambda: recorder.retrieval(ids, grounding, subgraph, retrieved))))
        # Each write overlaps the next steps that do not need it (the store releases the GIL
        # while it writes): the labels are read and the LLM selects while the retrieval is
        # recorded, and the answer starts while the selection's sources are read and it is
        # written. Every explain message still follows its write, and a write that
        # fails still ends the session. The session is written with its retrieval, so no
        # session sits in the store that never got past its start; on a store where each
        # write is a round trip, both wait for the selection and go with it, one request fewer.
        if rag.write_retrieval_early:
            self._write_held_in_background()
        labelgraph = _stage("retrieval",
                            lambda: get_labelgraph(rag.store, subgraph))
        self.names = _grounded_names(grounding, labelgraph)
        request = SelectionRequest(question, labelgraph.labeled_edges, grounding.seeds,
                                   role_reader(rag.store))
        selecting = _background(lambda: rag.backend.select(request) if request.edges else None)
        return [(ids.session, self.session), (ids.retrieval, retrieval)], labelgraph, selecting

    def _selection(
        self, explains: _Explains, labelgraph: LabelGraph,
        selecting: Future[SelectionOutput | None],
    ) -> Generator[GraphRagResponse, None, tuple[ParsedSelection, _Found, _Answering]]:
        """The LLM's selection read, its facts' sources found and recorded with it, the answer
        started; the explain messages of every record written so far."""
        rag, ids = self.rag, self.ids
        # While the LLM thinks, other writer processes may have the store (TurnTakingStore).
        with stepping_aside(rag.store):
            output = _stage("selection", selecting.result)
        parsed = _stage(
            "selection",
            lambda: parse_selection(output.text if output else "", labelgraph.uri_map,
                                    max_reason_chars=rag.output_limits.reason_chars),
        )
        usage = output.usage if output else None
        by_id = labelgraph.by_id()
        facts = [by_id[edge.id] for edge in parsed.edges]
        # Nothing selected, nothing to write from: the answer says so, with no LLM call.
        answering = _background(
            lambda: _started(
                rag.backend.answer(self.question, facts, stream=self.stream)
                if facts else _Fixed(NOTHING_SELECTED)
            )
        )
        # Where the selected facts came from: the selection's record names their documents, and
        # the last message lists these sources.
        found = _stage("trace", lambda: facts_sources(
            rag.store, [edge.triple for edge in parsed.edges]))
        selection = _stage("selection", lambda: self._build(
            lambda: rag.recorder.selection(ids, parsed.edges, len(parsed.invalid_ids), usage,
                                           found)))
        self._hold(selection)
        _stage("selection", self._write_held)
        yield from self._explains([*explains, (ids.selection, selection)])
        return parsed, found, answering

    def _answer(
        self, parsed: ParsedSelection, found: _Found, answering: _Answering,
    ) -> Iterator[GraphRagResponse]:
        """The answer streamed as it comes, recorded with its citations, then its sources."""
        rag = self.rag
        with stepping_aside(rag.store):
            answer, chunks = _stage("answer", answering.result)
            kept = _Capped(_guarded("answer", chunks), rag.output_limits.answer_chars)
            text: list[str] = []
            for chunk, last in _with_last(kept):
                text.append(chunk)
                yield GraphRagResponse(response=chunk, end_of_stream=last, message_type="chunk")
        full = "".join(text)
        citations = find_citations(full, [edge.id for edge in parsed.edges])
        cut = kept.cut or getattr(answer, "cut", False)
        recorded = _stage("answer",
                          lambda: self._record_answer(full, answer.usage, citations, cut,
                                                      len(parsed.edges)))
        yield self._explain(self.ids.answer, recorded)
        sources = self._sources(parsed.edges, found, citations)
        check = AnswerCheck(len(parsed.edges), len(citations.cited), len(citations.invalid_ids),
                            citations.uncited_sentences, cut)
        yield GraphRagResponse(message_type="chunk", end_of_session=True, sources=sources,
                               names=self.names, warnings=check.warnings())

    def _retrieve(self) -> tuple[Grounding, Retrieved]:
        rag = self.rag
        grounding = ground(rag.store, self.question, rag.limits.entity_limit)
        retrieved = retrieve(
            rag.store, grounding.seeds, rag.limits, grounding.schema_predicates,
            grounding.stems, grounding.relations, grounding.kinds,
        )
        return grounding, retrieved

    def _build(self, build: Callable[[], Record]) -> Record | None:
        """A stage's record, or None when recording is off (which then costs nothing)."""
        return build() if self.rag.record else None

    def _hold(self, record: Record | None) -> Record | None:
        """Keep a stage's record for the next write (or the failure's, if none comes first)."""
        if record is not None:
            self.held.append(record)
        return record

    def _write_held(self) -> None:
        self._written()
        self._write(*self.held)
        self.held = []

    def _write_held_in_background(self) -> None:
        """Write the held records in a worker; they are held again if the write fails."""
        parts, self.held = self.held, []
        if not parts:
            return

        def write() -> None:
            try:
                self._write(*parts)
            except BaseException:
                self.held[:0] = parts
                raise

        self.writing = _background(write)

    def _written(self) -> None:
        """Wait for the write in the background, if any; raise what it raised."""
        writing, self.writing = self.writing, None
        if writing is not None:
            writing.result()

    def _write(self, *parts: Record | InsertData | None) -> None:
        written = [part for part in parts if part is not None]
        if written:
            self.rag.recorder.write(*written)

    def _record_answer(
        self, text: str, usage: Usage | None, citations: Citations, truncated: bool,
        selected: int,
    ) -> Record | None:
        """The answer's text and its record, in one update when the librarian shares the store,
        so an answer is never recorded without its text; else the text goes first."""
        rag, ids = self.rag, self.ids
        if not rag.record:
            return None
        title = f"GraphRAG answer {ids.uuid}"
        librarian = rag.librarian
        record = rag.recorder.answer(ids, usage, now(), citations, truncated=truncated,
                                     started=self.started, selected=selected)
        if isinstance(librarian, StoreLibrarian) and librarian.store is rag.store:
            self._write(librarian.record(ids.answer_document, text, title=title), record)
        else:
            librarian.put(ids.answer_document, text, title=title)
            self._write(record)
        self.finished = True
        return record

    def _sources(self, edges: Sequence[SelectedEdge],
                 found: _Found,
                 citations: Citations) -> list[Source]:
        """Where each selected edge came from (`found`, read by one query over the provenance
        graph), with the sentences of the answer that cite it.

        Sources belong to the answer, not to its record, so they come from the edges
        themselves and are there with recording off too (then without edge-selection IRIs).
        """
        recorded = self.rag.record
        cited_in: dict[int, list[str]] = {}
        for citation in citations.citations:
            cited_in.setdefault(citation.edge, []).append(citation.sentence)
        return [
            source.as_source(self.ids.edge_selection(i).value if recorded else None,
                             edge.triple, tuple(cited_in.get(i, ())))
            for i, edge in enumerate(edges)
            for source in found.get(edge.triple, [])
        ]

    def _explains(
        self, recorded: Sequence[tuple[ox.NamedNode, Record | None]]
    ) -> Iterator[GraphRagResponse]:
        return (self._explain(iri, record) for iri, record in recorded)

    def _explain(self, iri: ox.NamedNode, record: Record | None) -> GraphRagResponse:
        return GraphRagResponse(
            explain_id=iri.value if record is not None else None,
            explain_collection=self.rag.collection.name if record is not None else None,
            message_type="explain",
            explain_triples=record.triples if record is not None else [],
        )

    def _fail(self, message: str) -> GraphRagResponse:
        """Close the session as failed (writing its start too if that was not yet written);
        if even that fails, say so on the stream."""
        if self.session is not None and not self.finished:
            self.finished = True
            try:
                self._written()
            except Exception:  # its records are held again, and go with the failure
                pass
            try:
                failure = self.rag.recorder.failure(self.ids, message, now(),
                                                    started=self.started)
                self._write(*self.held, failure)
            except Exception as error:  # the store is what failed: report both
                message = f"{message}; recording the failure also failed: {error}"
        return _error("graph-rag-error", message)


def _stage(name: str, step: Callable[[], T]) -> T:
    try:
        return step()
    except StageError:
        raise
    except Exception as error:  # every failure inside a stage ends the session, named
        raise StageError(name, error) from error


class _Workers:
    """The threads that run the steps a write overlaps, started when first needed.

    A forked child has none of its parent's threads, so it forgets the parent's pool and
    starts its own (else its steps would wait for workers that do not exist)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, step: Callable[[], T]) -> Future[T]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(thread_name_prefix="tgsparql-stage")
            return self._pool.submit(step)

    def forget(self) -> None:
        self._lock = threading.Lock()
        self._pool = None


_WORKERS = _Workers()
os.register_at_fork(after_in_child=_WORKERS.forget)


def _grounded_names(grounding: Grounding, labelgraph: LabelGraph) -> list[GroundedName]:
    """The grounding's names, each seed labelled as the retrieved edges label it."""
    labels: dict[ox.Term, str] = {}
    for edge in labelgraph.labeled_edges:
        labels.setdefault(edge.triple.subject, edge.labels[0])
        labels.setdefault(edge.triple.object, edge.labels[2])
    return [
        GroundedName(match.name, match.entity.value,
                     labels.get(match.entity) or local_name(match.entity.value),
                     match.rank, match.candidates)
        for match in grounding.names
    ]


def _background(step: Callable[[], T]) -> Future[T]:
    """Run `step` in a worker thread; its result (or its exception) comes with `.result()`."""
    return _WORKERS.submit(step)


class _Fixed:
    """An answer known without asking the LLM."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.usage: Usage | None = None

    def __iter__(self) -> Iterator[str]:
        yield self.text


def _started(answer: AnswerStream) -> tuple[AnswerStream, Iterator[str]]:
    """The answer with its first chunk already asked for, so the LLM call is under way (and its
    first token in) while the caller goes on; the chunks, that one included."""
    chunks = iter(answer)
    first = list(itertools.islice(chunks, 1))
    return answer, _chained(first, chunks)


def _chained(first: list[str], rest: Iterator[str]) -> Iterator[str]:
    """`first`, then `rest`; closing this closes `rest` (the LLM's stream) too."""
    try:
        yield from first
        yield from rest
    finally:
        close = getattr(rest, "close", None)
        if close is not None:
            close()


class _Capped:
    """The chunks up to `limit` characters in all; past it, the rest is neither read nor kept
    (the stream is closed), and `cut` says so."""

    def __init__(self, chunks: Iterator[str], limit: int) -> None:
        self.chunks = chunks
        self.limit = limit
        self.cut = False

    def __iter__(self) -> Iterator[str]:
        room = self.limit
        try:
            for chunk in self.chunks:
                if len(chunk) > room:
                    self.cut = True
                    if room:
                        yield chunk[:room]
                    return
                room -= len(chunk)
                yield chunk
        finally:
            close = getattr(self.chunks, "close", None)
            if close is not None:
                close()


def _with_last(chunks: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """Each chunk with whether it is the last; one empty chunk when there are none."""
    held: str | None = None
    for chunk in chunks:
        if held is not None:
            yield held, False
        held = chunk
    yield (held if held is not None else ""), True


def _guarded(stage: str, chunks: Iterable[str]) -> Iterator[str]:
    try:
        yield from chunks
    except Exception as error:
        raise StageError(stage, error) from error


def _error(kind: str, message: str) -> GraphRagResponse:
    return GraphRagResponse(error=Error(kind, message), end_of_session=True, message_type="error")
