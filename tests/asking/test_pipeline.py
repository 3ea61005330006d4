"""The streamed messages of a query, and what every failure leaves behind (docs/spec.md §5, §6)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator, Sequence

import pyoxigraph as ox
import pytest

from tgsparql.asking.citations import NOTHING_SELECTED
from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import LLMError, SelectionOutput, SelectionRequest
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.messages import GraphRagResponse
from tgsparql.asking.pipeline import GraphRag, OutputLimits
from tgsparql.stores.store import DataGraph, EmbeddedStore, StoreError, WithTemplates
from tgsparql.testing import assert_conforms

QUESTION = "Where was the scientist who discovered polonium born?"
UNKNOWN_QUESTION = "What is the airspeed velocity of an unladen swallow?"

TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"
ENT = "https://example.org/demo/entity/"
REL = "https://example.org/demo/rel/"
XSD = "http://www.w3.org/2001/XMLSchema#"
EXPLAINABILITY = ox.NamedNode("urn:graph:explainability")
LIBRARY = ox.NamedNode("urn:graph:library")

BORN_IN_WARSAW = ox.Triple(
    ox.NamedNode(ENT + "Marie_Curie"), ox.NamedNode(REL + "bornIn"), ox.NamedNode(ENT + "Warsaw")
)
DISCOVERED_POLONIUM = ox.Triple(
    ox.NamedNode(ENT + "Marie_Curie"),
    ox.NamedNode(REL + "discovered"),
    ox.NamedNode(ENT + "Polonium"),
)


class ScriptedAnswer:
    def __init__(self, chunks: Sequence[str], fail_after: int | None = None) -> None:
        self.chunks = list(chunks)
        self.fail_after = fail_after
        self.usage = None

    def __iter__(self) -> Iterator[str]:
        for i, chunk in enumerate(self.chunks):
            if self.fail_after is not None and i == self.fail_after:
                raise LLMError("the answer stream broke")
            yield chunk


class ScriptedBackend:
    """Selects the edges whose labels it is given, answers with fixed chunks."""

    name = "scripted"

    def __init__(
        self,
        pick: Sequence[tuple[str, str, str]] = (),
        chunks: Sequence[str] = ("Warsaw", "."),
        *,
        extra_lines: Sequence[str] = (),
        select_error: Exception | None = None,
        answer_error: Exception | None = None,
        fail_after: int | None = None,
    ) -> None:
        self.pick = list(pick)
        self.chunks = chunks
        self.extra_lines = list(extra_lines)
        self.select_error = select_error
        self.answer_error = answer_error
        self.fail_after = fail_after
        self.select_calls = 0
        self.answer_facts: list[Sequence[LabeledEdge]] = []

    def select(self, request: SelectionRequest) -> SelectionOutput:
        self.select_calls += 1
        if self.select_error is not None:
            raise self.select_error
        by_labels = {edge.labels: edge.id for edge in request.edges}
        lines = [
            json.dumps({"id": by_labels[labels], "reasoning": f"picked {' '.join(labels)}"})
            for labels in self.pick
        ]
        return SelectionOutput("\n".join(lines + self.extra_lines), None)

    def answer(
        self, question: str, facts: Sequence[LabeledEdge], *, stream: bool
) -> ScriptedAnswer:
        self.answer_facts.append(facts)
        if self.answer_error is not None:
            raise self.answer_error
        chunks = self.chunks if stream else ["".join(self.chunks)]
        return ScriptedAnswer(chunks, self.fail_after)


class FaultyStore(WithTemplates):
    """An embedded store whose update fails on chosen calls, or whose retrieval read fails."""

    def __init__(
        self,
        inner: EmbeddedStore,
        *,
        fail_update: int | None = None,
        fail_from: int | None = None,
        fail_retrieval: bool = False,
    ) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.round_trips = inner.round_trips
        self.fail_update = fail_update
        self.fail_from = fail_from
        self.fail_retrieval = fail_retrieval
        self.updates = 0
        self.reads: list[str] = []
        """The opening comment line of each query read, e.g. '# Grounding, in one request:'."""

    def select(self, query: str, *, default_graph: DataGraph = None):
        self.reads.append(query.partition("\n")[0])
        if self.fail_retrieval and query.startswith("# Retrieval"):
            raise StoreError("injected read failure")
        return self.inner.select(query, default_graph=default_graph)

    def ask(self, query: str, *, default_graph: DataGraph = None) -> bool:
        self.reads.append(query.partition("\n")[0])
        return self.inner.ask(query, default_graph=default_graph)

    def construct(self, query: str):
        self.reads.append(query.partition("\n")[0])
        return self.inner.construct(query)

    def update(self, update: str) -> None:
        self.updates += 1
        if self.updates == self.fail_update or (
            self.fail_from is not None and self.updates >= self.fail_from
        ):
            raise StoreError(f"injected write failure on update {self.updates}")
        self.inner.update(update)

    def bulk_load(self, source, format, *, graph=None) -> None:
        self.inner.bulk_load(source, format, graph=graph)

    def close(self) -> None:
        self.inner.close()


def faulty_rag(
    demo_store: EmbeddedStore, backend=None, *, write_retrieval_early: bool | None = None, **faults
) -> GraphRag:
    store = FaultyStore(demo_store)
    rag = GraphRag(store, backend or OfflineBackend(), write_retrieval_early=write_retrieval_early)
    store.updates = 0
    for name, value in faults.items():
        setattr(store, name, value)
    return rag


def kinds(messages: list[GraphRagResponse]) -> list[str]:
    return [m.message_type for m in messages]


def sessions(store: EmbeddedStore) -> dict[str, dict[str, list[str]]]:
    """Each session IRI in the explainability graph with its status, error and end time."""
    found: dict[str, dict[str, list[str]]] = {
        row["s"].value: {"status": [], "error": [], "ended": []}
        for row in store.select(
            f"""PREFIX prov: <{PROV}>
            SELECT ?s WHERE {{ GRAPH <urn:graph:explainability> {{ ?s a prov:Activity }} }}"""
        )
    }
    names = {TG + "status": "status", TG + "error": "error", PROV + "endedAtTime": "ended"}
    for row in store.select(
        f"""PREFIX tg: <{TG}> PREFIX prov: <{PROV}>
        SELECT ?s ?p ?o WHERE {{
          GRAPH <urn:graph:explainability> {{
            ?s a prov:Activity ; ?p ?o .
            VALUES ?p {{ tg:status tg:error prov:endedAtTime }}
          }}
        }}"""
    ):
        found[row["s"].value][names[row["p"].value]].append(row["o"].value)
    return found


def subjects(store: EmbeddedStore, graph: ox.NamedNode) -> set[str]:
    """The subjects of the graph but seed cuts, which come and go with their Retrieval, the
    day the session started on, which it shares with that day's other sessions
    (tests/asking/test_provenance.py checks both), and the graph itself, which says the format
    of the collection's records (tests/record/test_migrate.py checks it)."""
    return {
        q.subject.value
        for q in store.oxigraph.quads_for_pattern(None, None, None, graph)
        if not q.subject.value.startswith(("urn:trustgraph:prov:seed:", "urn:trustgraph:day:"))
        and q.subject != graph
    }


def recorded_stages(store: EmbeddedStore, uuid: str) -> set[str]:
    """The session's stage entities in the explainability graph, by stage name; any other
    subject but an edge selection by its IRI."""
    iris = {
        f"urn:trustgraph:session:{uuid}": "session",
        f"urn:trustgraph:prov:retrieval:{uuid}": "retrieval",
        f"urn:trustgraph:prov:selection:{uuid}": "selection",
        f"urn:trustgraph:prov:answer:{uuid}": "answer",
    }
    return {iris.get(s, s) for s in subjects(store, EXPLAINABILITY) if ":edge:" not in s}


def all_quads(store: EmbeddedStore) -> set[ox.Quad]:
    return set(store.oxigraph)


def expected_order(uuid: str, chunks: int) -> list[tuple[str, str | None]]:
    return (
        [
            ("explain", f"urn:trustgraph:session:{uuid}"),
            ("explain", f"urn:trustgraph:prov:retrieval:{uuid}"),
            ("explain", f"urn:trustgraph:prov:selection:{uuid}"),
        ]
        + [("chunk", None)] * chunks
        + [("explain", f"urn:trustgraph:prov:answer:{uuid}"), ("chunk", None)]
    )


def uuid_of(messages: list[GraphRagResponse]) -> str:
    return messages[0].explain_id.rsplit(":", 1)[1]


def anonymous(triples: Sequence[ox.Triple], uuid: str) -> list[str]:
    """The triples as N-Triples lines, sorted, with the session's UUID and times blanked, so
    two sessions that did the same compare equal."""
    times = re.compile(r'"[^"]*"\^\^<' + re.escape(XSD) + r'dateTime>')
    return sorted(times.sub("TIME", str(t).replace(uuid, "UUID")) for t in triples)


def test_streaming_messages_come_in_spec_order(tgsparql_demo_pipeline: GraphRag) -> None:
    messages = list(tgsparql_demo_pipeline.query(QUESTION, stream=True))
    chunks = messages[3:-2]
    assert len(chunks) > 1
    assert [(m.message_type, m.explain_id) for m in messages] == expected_order(
        uuid_of(messages), len(chunks)
    )
    assert [m.end_of_stream for m in chunks] == [False] * (len(chunks) - 1) + [True]
    assert [m.end_of_session for m in messages] == [False] * (len(messages) - 1) + [True]
    assert all(m.error is None for m in messages)
    assert all(m.explain_collection == "explainability" for m in messages if m.message_type == "explain")
    assert all(m.response == "" for m in messages if m.message_type == "explain")
    assert messages[-1].response == "" and not messages[-1].end_of_stream
    text = "".join(m.response for m in chunks)
    stored = tgsparql_demo_pipeline.store.select(
        f"SELECT ?t WHERE {{ GRAPH <urn:graph:library> {{ "
        f"<urn:trustgraph:answer:{uuid_of(messages)}> <{TG}content> ?t }} }}"
    )
    assert [row["t"].value for row in stored] == [text]


def test_without_streaming_the_answer_is_exactly_one_chunk(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    streamed = "".join(m.response for m in tgsparql_demo_pipeline.query(QUESTION, stream=True))
    messages = list(tgsparql_demo_pipeline.query(QUESTION, stream=False))
    assert [(m.message_type, m.explain_id) for m in messages] == expected_order(uuid_of(messages), 1)
    answer = messages[3]
    assert answer.end_of_stream is True and answer.end_of_session is False
    assert answer.response == streamed
    assert messages[-1].end_of_session is True
    assert [m.end_of_session for m in messages].count(True) == 1


def test_the_final_message_carries_the_sources_of_the_selected_edges(tgsparql_demo_store) -> None:
    backend = ScriptedBackend(
        pick=[("Marie Curie", "born in", "Warsaw"), ("Marie Curie", "discovered", "polonium")]
    )
    messages = list(GraphRag(tgsparql_demo_store, backend).query(QUESTION))
    uuid = uuid_of(messages)
    final = messages[-1]
    assert final.end_of_session and final.error is None
    got = [
        (s.edge_selection, s.edge, s.document, s.title, s.page_number, s.chunk, s.chunk_index,
         s.char_offset, s.char_length, s.text)
        for s in final.sources
    ]
    assert got == [
        (
            f"urn:trustgraph:prov:edge:{uuid}:0",
            BORN_IN_WARSAW,
            "https://example.org/demo/doc/marie-curie",
            "Marie Curie: From Warsaw to Paris",
            1,
            "urn:chunk:73279646-822c-4a72-96b1-9c31356333ba",
            0,
            0,
            301,
            "Marie Curie was born Maria Skłodowska in Warsaw in 1867.",
        ),
        (
            f"urn:trustgraph:prov:edge:{uuid}:1",
            DISCOVERED_POLONIUM,
            "https://example.org/demo/doc/marie-curie",
            "Marie Curie: From Warsaw to Paris",
            1,
            "urn:chunk:c109fd02-e445-4c61-82d6-10161a2a9191",
            1,
            302,
            303,
            "Working with Pierre in a draughty converted shed, Marie discovered polonium in 1898, "
            "and a few months later the couple also discovered radium.",
        ),
    ]
    assert all(m.sources == [] for m in messages[:-1])


def test_sources_come_with_the_answer_when_recording_is_off(tgsparql_demo_store) -> None:
    pick = [("Marie Curie", "born in", "Warsaw"), ("Marie Curie", "discovered", "polonium")]
    recorded = list(GraphRag(tgsparql_demo_store, ScriptedBackend(pick=pick)).query(QUESTION))[-1]
    before = len(tgsparql_demo_store.oxigraph)
    unrecorded = list(
        GraphRag(tgsparql_demo_store, ScriptedBackend(pick=pick), record=False).query(QUESTION)
    )[-1]
    assert len(tgsparql_demo_store.oxigraph) == before
    assert [s.edge_selection for s in unrecorded.sources] == [None, None]
    assert [(s.edge, s.chunk, s.text) for s in unrecorded.sources] == [
        (s.edge, s.chunk, s.text) for s in recorded.sources
    ]


def test_the_answer_is_written_from_the_selected_edges_only(tgsparql_demo_store) -> None:
    backend = ScriptedBackend(pick=[("Marie Curie", "born in", "Warsaw")])
    list(GraphRag(tgsparql_demo_store, backend).query(QUESTION))
    assert [[fact.triple for fact in facts] for facts in backend.answer_facts] == [[BORN_IN_WARSAW]]


def assert_failed(store: EmbeddedStore, messages: list[GraphRagResponse], stage: str) -> str:
    """One failed session, closed, with the stage named in the record and on the stream."""
    last = messages[-1]
    assert last.error is not None and last.end_of_session is True
    assert last.message_type == "error"
    assert [m.end_of_session for m in messages].count(True) == 1
    assert all(m.error is None for m in messages[:-1])
    recorded = sessions(store)
    assert len(recorded) == 1
    iri, record = next(iter(recorded.items()))
    assert messages[0].explain_id in (iri, None)
    assert record["status"] == ["failed"]
    assert len(record["error"]) == 1 and record["error"][0].startswith(f"{stage} failed: ")
    assert len(record["ended"]) == 1
    assert last.error.message == record["error"][0]
    return iri.rsplit(":", 1)[1]


def test_a_selector_error_fails_the_session_at_selection(tgsparql_demo_store) -> None:
    backend = ScriptedBackend(select_error=LLMError("model unreachable"))
    messages = list(GraphRag(tgsparql_demo_store, backend).query(QUESTION))
    uuid = assert_failed(tgsparql_demo_store, messages, "selection")
    assert "model unreachable" in messages[-1].error.message
    assert kinds(messages) == ["explain", "explain", "error"]
    assert subjects(tgsparql_demo_store, EXPLAINABILITY) == {
        f"urn:trustgraph:session:{uuid}", f"urn:trustgraph:prov:retrieval:{uuid}"
    }


def test_an_answer_error_before_the_first_chunk_fails_the_session_at_answer(
    tgsparql_demo_store
) -> None:
    backend = ScriptedBackend(
        pick=[("Marie Curie", "born in", "Warsaw")], answer_error=LLMError("no reply")
    )
    messages = list(GraphRag(tgsparql_demo_store, backend).query(QUESTION, stream=True))
    uuid = assert_failed(tgsparql_demo_store, messages, "answer")
    assert kinds(messages) == ["explain", "explain", "explain", "error"]
    assert f"urn:trustgraph:prov:selection:{uuid}" in subjects(tgsparql_demo_store, EXPLAINABILITY)
    assert f"urn:trustgraph:prov:answer:{uuid}" not in subjects(tgsparql_demo_store, EXPLAINABILITY)
    assert subjects(tgsparql_demo_store, LIBRARY) & {f"urn:trustgraph:answer:{uuid}"} == set()


def test_an_answer_stream_breaking_midway_fails_the_session_at_answer(tgsparql_demo_store) -> None:
    backend = ScriptedBackend(
        pick=[("Marie Curie", "born in", "Warsaw")], chunks=["War", "saw", "."], fail_after=2
    )
    messages = list(GraphRag(tgsparql_demo_store, backend).query(QUESTION, stream=True))
    uuid = assert_failed(tgsparql_demo_store, messages, "answer")
    assert "the answer stream broke" in messages[-1].error.message
    assert kinds(messages) == ["explain", "explain", "explain", "chunk", "error"]
    assert messages[3].response == "War" and messages[3].end_of_stream is False
    assert f"urn:trustgraph:answer:{uuid}" not in subjects(tgsparql_demo_store, LIBRARY)


class EndlessAnswer:
    """An answer that never ends, and says whether its reader closed it."""

    usage = None
    closed = False

    def __iter__(self) -> Iterator[str]:
        try:
            while True:
                yield "Warsaw "
        finally:
            self.closed = True


def test_an_endless_answer_is_cut_at_the_limit_its_stream_closed_and_the_session_completes(
    tgsparql_demo_store,
) -> None:
    endless = EndlessAnswer()
    backend = ScriptedBackend(pick=[("Marie Curie", "born in", "Warsaw")])
    backend.answer = lambda question, facts, *, stream: endless  # type: ignore[method-assign]
    rag = GraphRag(tgsparql_demo_store, backend, output_limits=OutputLimits(answer_chars=50))
    messages = list(rag.query(QUESTION, stream=True))
    chunks = [m for m in messages if m.message_type == "chunk" and not m.end_of_session]
    assert "".join(m.response for m in chunks) == ("Warsaw " * 8)[:50]
    assert [m.end_of_stream for m in chunks] == [False] * (len(chunks) - 1) + [True]
    assert endless.closed
    assert messages[-1].error is None and messages[-1].end_of_session
    uuid = uuid_of(messages)
    assert tgsparql_demo_store.ask(f"""ASK {{ GRAPH ?g {{
        <urn:trustgraph:session:{uuid}> <https://trustgraph.ai/ns/status> "complete" .
        <urn:trustgraph:prov:answer:{uuid}> <https://trustgraph.ai/ns/truncated> true }} }}""")
    assert_conforms(tgsparql_demo_store)


@pytest.mark.parametrize(
    ("n", "stage", "explains", "recorded"),
    [
        (1, "retrieval", 0, {"session", "retrieval"}),
        (2, "selection", 2, {"session", "retrieval", "selection"}),
        (3, "answer", 3, {"session", "retrieval", "selection"}),
    ],
)
def test_a_store_write_failure_fails_the_session_at_its_stage(
    tgsparql_demo_store, n, stage, explains, recorded
) -> None:
    rag = faulty_rag(tgsparql_demo_store, fail_update=n)
    messages = list(rag.query(QUESTION, stream=True))
    uuid = assert_failed(tgsparql_demo_store, messages, stage)
    assert f"injected write failure on update {n}" in messages[-1].error.message
    assert [m.message_type for m in messages if m.message_type != "chunk"] == (
        ["explain"] * explains + ["error"]
    )
    assert recorded_stages(tgsparql_demo_store, uuid) == recorded
    assert f"urn:trustgraph:answer:{uuid}" not in subjects(tgsparql_demo_store, LIBRARY)


def test_a_store_read_failure_in_retrieval_fails_the_session_at_retrieval(
    tgsparql_demo_store
) -> None:
    rag = faulty_rag(tgsparql_demo_store, fail_retrieval=True)
    messages = list(rag.query(QUESTION))
    uuid = assert_failed(tgsparql_demo_store, messages, "retrieval")
    assert "injected read failure" in messages[-1].error.message
    assert kinds(messages) == ["error"]
    assert subjects(tgsparql_demo_store, EXPLAINABILITY) == {f"urn:trustgraph:session:{uuid}"}


def test_a_session_is_recorded_in_three_updates(tgsparql_demo_store) -> None:
    rag = faulty_rag(tgsparql_demo_store)
    messages = list(rag.query(QUESTION))
    assert messages[-1].end_of_session and messages[-1].error is None
    assert rag.store.updates == 3


def test_a_session_reads_the_store_a_bounded_number_of_times(tgsparql_demo_store) -> None:
    """Grounding with the schema probe one read; retrieval on the first hop the seeds' edge
    counts with the question stems' holders and the seeds' edges, on the second the nodes'
    counts and the edges of those read whole (no demo node has more than 100 edges); the
    labels, the answer's sources one each — whatever the number of edges (the demo question
    walks two hops). The pipeline's first session also asks, as part of its recording, whether
    the collection holds a session yet (the first says the format of the collection's
    records)."""
    rag = faulty_rag(tgsparql_demo_store)
    for first in (True, False):
        rag.store.reads.clear()  # the label index was brought up to date when the pipeline began
        messages = list(rag.query(QUESTION))
        assert messages[-1].end_of_session and messages[-1].error is None
        stages = [line.removeprefix("# ").split(maxsplit=1)[0].rstrip(",:")
                  for line in rag.store.reads]
        assert stages == [*["Recording"] * first, "Grounding", *["Retrieval"] * 3, "Labels", "Trace"]


def test_the_llm_and_the_reads_go_on_while_the_store_writes(tgsparql_demo_store) -> None:
    """Each write overlaps the steps after it: the labels are read and the selection asked
    for while the session and retrieval are written, the answer while the selection is;
    their explain messages still come only once they are written."""
    started = {"labels": threading.Event(), "select": threading.Event(),
               "answer": threading.Event()}

    class Watched(OfflineBackend):
        def select(self, request):  # type: ignore[no-untyped-def]
            started["select"].set()
            return super().select(request)

        def answer(self, question, facts, *, stream):  # type: ignore[no-untyped-def]
            started["answer"].set()
            return super().answer(question, facts, stream=stream)

    class Waiting(FaultyStore):
        def select(self, query: str, **kwargs):  # type: ignore[no-untyped-def]
            if query.startswith("# Labels"):
                started["labels"].set()
            return super().select(query, **kwargs)

        def update(self, update: str) -> None:
            steps = {0: ("labels", "select"), 1: ("answer",)}.get(self.updates, ())
            for step in steps:
                assert started[step].wait(10), f"no {step} during write {self.updates}"
            super().update(update)

    store = Waiting(tgsparql_demo_store)
    rag = GraphRag(store, Watched(), index_labels=False)
    messages = list(rag.query(QUESTION))
    assert messages[-1].end_of_session and messages[-1].error is None
    assert kinds(messages)[:3] == ["explain", "explain", "explain"] and store.updates == 3


def test_a_label_fetch_failing_during_the_first_write_records_the_session_failed(
    tgsparql_demo_store,
) -> None:
    class FailingLabels(FaultyStore):
        def select(self, query: str, **kwargs):  # type: ignore[no-untyped-def]
            if query.startswith("# Labels"):
                raise StoreError("injected label failure")
            return super().select(query, **kwargs)

    store = FailingLabels(tgsparql_demo_store)
    messages = list(GraphRag(store, OfflineBackend(), index_labels=False).query(QUESTION))
    uuid = assert_failed(tgsparql_demo_store, messages, "retrieval")
    assert kinds(messages) == ["error"] and "injected label failure" in messages[0].error.message
    assert recorded_stages(tgsparql_demo_store, uuid) == {"session", "retrieval"}
    assert store.updates == 2


def test_a_session_whose_first_write_fails_is_recorded_failed_with_what_it_did(
    tgsparql_demo_store
) -> None:
    rag = faulty_rag(tgsparql_demo_store, fail_update=1)
    messages = list(rag.query(QUESTION))
    uuid = assert_failed(tgsparql_demo_store, messages, "retrieval")
    assert kinds(messages) == ["error"]
    assert "injected write failure on update 1" in messages[-1].error.message
    assert subjects(tgsparql_demo_store, EXPLAINABILITY) == {
        f"urn:trustgraph:session:{uuid}", f"urn:trustgraph:prov:retrieval:{uuid}"
    }


def test_where_each_write_is_a_round_trip_a_session_takes_two_updates(tgsparql_demo_store) -> None:
    """The session and its retrieval wait for the selection and go with it; the messages,
    their order and the record are those of three updates."""
    store = FaultyStore(tgsparql_demo_store)
    store.round_trips = True
    rag = GraphRag(store, OfflineBackend(), index_labels=False)
    assert rag.write_retrieval_early is False
    three = GraphRag(tgsparql_demo_store, OfflineBackend(), index_labels=False)
    assert three.write_retrieval_early is True
    coalesced, early = list(rag.query(QUESTION, stream=True)), list(three.query(QUESTION, stream=True))
    assert store.updates == 2
    for messages in (coalesced, early):
        chunks = len(messages) - 5
        assert [(m.message_type, m.explain_id) for m in messages] == expected_order(
            uuid_of(messages), chunks
        )
    assert [anonymous(m.explain_triples, uuid_of(coalesced)) for m in coalesced] == [
        anonymous(m.explain_triples, uuid_of(early)) for m in early
    ]
    assert_conforms(tgsparql_demo_store)


@pytest.mark.parametrize(
    ("fault", "stage", "explains", "recorded"),
    [
        ({"fail_update": 1}, "selection", 0, {"session", "retrieval", "selection"}),
        ({"fail_update": 2}, "answer", 3, {"session", "retrieval", "selection"}),
        ({"select_error": True}, "selection", 0, {"session", "retrieval"}),
    ],
)
def test_where_each_write_is_a_round_trip_a_failure_keeps_what_was_done(
    tgsparql_demo_store, fault, stage, explains, recorded
) -> None:
    backend = ScriptedBackend(
        [("Marie Curie", "born in", "Warsaw")],
        select_error=LLMError("model unreachable") if fault.pop("select_error", False) else None,
    )
    rag = faulty_rag(tgsparql_demo_store, backend, write_retrieval_early=False, **fault)
    messages = list(rag.query(QUESTION))
    uuid = assert_failed(tgsparql_demo_store, messages, stage)
    assert [m.message_type for m in messages if m.message_type != "chunk"] == (
        ["explain"] * explains + ["error"]
    )
    assert recorded_stages(tgsparql_demo_store, uuid) == recorded


def test_a_store_that_takes_no_writes_gives_an_error_and_records_nothing(
    tgsparql_demo_store
) -> None:
    before = all_quads(tgsparql_demo_store)
    rag = faulty_rag(tgsparql_demo_store, fail_from=1)
    messages = list(rag.query(QUESTION))
    assert kinds(messages) == ["error"]
    assert messages[0].error.message == (
        "retrieval failed: injected write failure on update 1; "
        "recording the failure also failed: injected write failure on update 2"
    )
    assert all_quads(tgsparql_demo_store) == before


def test_when_recording_the_failure_also_fails_the_error_says_both(tgsparql_demo_store) -> None:
    rag = faulty_rag(tgsparql_demo_store, fail_from=2)
    messages = list(rag.query(QUESTION))
    last = messages[-1]
    assert last.error is not None and last.end_of_session is True
    assert last.error.message.startswith("selection failed: ")
    assert "injected write failure on update 2" in last.error.message
    assert "recording the failure also failed" in last.error.message
    assert "injected write failure on update 3" in last.error.message
    assert kinds(messages) == ["explain", "explain", "error"]


def test_a_client_that_stops_reading_leaves_the_session_failed(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    messages = tgsparql_demo_pipeline.query(QUESTION, stream=True)
    first = next(messages)
    messages.close()
    recorded = sessions(tgsparql_demo_pipeline.store)
    assert list(recorded) == [first.explain_id]
    record = recorded[first.explain_id]
    assert record["status"] == ["failed"]
    assert len(record["ended"]) == 1
    assert record["error"] == ["the client stopped reading before the session ended"]


def test_a_client_that_stops_after_the_answer_is_recorded_leaves_it_complete(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    messages = tgsparql_demo_pipeline.query(QUESTION, stream=False)
    seen = [next(messages) for _ in range(5)]
    assert seen[-1].explain_id.startswith("urn:trustgraph:prov:answer:")
    messages.close()
    record = sessions(tgsparql_demo_pipeline.store)[seen[0].explain_id]
    assert record["status"] == ["complete"] and record["error"] == []


@pytest.mark.parametrize(
    "question",
    ["", "   \n\t ", 42, None, b"bytes", "caf\ud800e", "x" * 10_001],
    ids=["empty", "whitespace", "int", "none", "bytes", "surrogate", "too-long"],
)
def test_an_invalid_question_gives_one_error_and_writes_nothing(
    tgsparql_demo_pipeline: GraphRag, question
) -> None:
    before = all_quads(tgsparql_demo_pipeline.store)
    messages = list(tgsparql_demo_pipeline.query(question))
    assert len(messages) == 1
    (message,) = messages
    assert message.error is not None and message.error.type == "invalid-question"
    assert message.end_of_session is True and message.explain_id is None
    assert all_quads(tgsparql_demo_pipeline.store) == before


def test_a_question_of_exactly_the_limit_is_accepted(tgsparql_demo_pipeline: GraphRag) -> None:
    messages = list(tgsparql_demo_pipeline.query("polonium " + "x" * (10_000 - len("polonium "))))
    assert messages[-1].error is None and messages[-1].end_of_session


@pytest.mark.parametrize("stream", [True, False])
def test_aquery_yields_the_same_messages_in_the_same_order(
    tgsparql_demo_pipeline: GraphRag, stream: bool
) -> None:
    async def collect() -> list[GraphRagResponse]:
        return [m async for m in tgsparql_demo_pipeline.aquery(QUESTION, stream=stream)]

    async_messages = asyncio.run(collect())
    sync_messages = list(tgsparql_demo_pipeline.query(QUESTION, stream=stream))

    def shape(messages: list[GraphRagResponse], uuid: str):
        return [
            (m.message_type, (m.explain_id or "").replace(uuid, "U"), m.response,
             m.end_of_stream, m.end_of_session, m.error)
            for m in messages
        ]

    assert shape(async_messages, uuid_of(async_messages)) == shape(
        sync_messages, uuid_of(sync_messages)
    )
    assert uuid_of(async_messages) != uuid_of(sync_messages)
    assert async_messages[-1].end_of_session and async_messages[-1].error is None


def test_aquery_reports_failure_like_query(tgsparql_demo_store) -> None:
    backend = ScriptedBackend(select_error=LLMError("model unreachable"))
    rag = GraphRag(tgsparql_demo_store, backend)

    async def collect() -> list[GraphRagResponse]:
        return [m async for m in rag.aquery(QUESTION)]

    messages = asyncio.run(collect())
    assert_failed(tgsparql_demo_store, messages, "selection")


def test_unknown_and_junk_selection_lines_are_counted_as_invalid_ids(tgsparql_demo_store) -> None:
    backend = ScriptedBackend(
        pick=[("Marie Curie", "born in", "Warsaw")],
        extra_lines=[
            '{"id": "deadbeef", "reasoning": "not in the prompt"}',
            "this line is prose",
            '{"id": "0000ffff"}',
            '{"reasoning": "no id"}',
            '{"id": 12345678}',
        ],
    )
    messages = list(GraphRag(tgsparql_demo_store, backend).query(QUESTION))
    uuid = uuid_of(messages)
    rows = tgsparql_demo_store.select(
        f"""PREFIX tg: <{TG}>
        SELECT ?count WHERE {{ GRAPH <urn:graph:explainability> {{
          <urn:trustgraph:prov:selection:{uuid}> tg:invalidIdCount ?count }} }}"""
    )
    assert [row["count"] for row in rows] == [
        ox.Literal("2", datatype=ox.NamedNode(XSD + "integer"))
    ]
    edges = tgsparql_demo_store.select(
        f"""PREFIX tg: <{TG}>
        SELECT ?edge WHERE {{ GRAPH <urn:graph:explainability> {{
          <urn:trustgraph:prov:selection:{uuid}> tg:selectedEdge/tg:edge ?edge }} }}"""
    )
    assert [row["edge"] for row in edges] == [BORN_IN_WARSAW]
    assert sessions(tgsparql_demo_store)[messages[0].explain_id]["status"] == ["complete"]


def test_zero_retrieved_edges_complete_without_calling_the_selector_or_the_writer(
    tgsparql_demo_store,
) -> None:
    backend = ScriptedBackend(chunks=["I do not know."])
    messages = list(GraphRag(tgsparql_demo_store, backend).query(UNKNOWN_QUESTION))
    uuid = uuid_of(messages)
    assert backend.select_calls == 0
    assert backend.answer_facts == []
    assert "".join(m.response for m in messages) == NOTHING_SELECTED
    assert [(m.message_type, m.explain_id) for m in messages] == expected_order(uuid, 1)
    assert messages[-1].error is None and messages[-1].sources == []
    assert sessions(tgsparql_demo_store)[messages[0].explain_id]["status"] == ["complete"]
    rows = tgsparql_demo_store.select(
        f"""PREFIX tg: <{TG}>
        SELECT ?p ?o WHERE {{ GRAPH <urn:graph:explainability> {{
          {{ <urn:trustgraph:prov:retrieval:{uuid}> ?p ?o }}
          UNION {{ <urn:trustgraph:prov:selection:{uuid}> ?p ?o }}
          FILTER(?p IN (tg:edgeCount, tg:selectedEdge, tg:retrievedEdge, tg:invalidIdCount))
        }} }}"""
    )
    integer = ox.NamedNode(XSD + "integer")
    assert sorted((row["p"].value, row["o"].value) for row in rows) == [
        (TG + "edgeCount", "0"),
        (TG + "invalidIdCount", "0"),
    ]
    assert all(row["o"].datatype == integer for row in rows)


def test_nothing_selected_means_no_synthesis_call_and_an_answer_saying_so(
    tgsparql_demo_store
) -> None:
    """A selector that chose nothing (here: only ids the prompt did not hold) leaves the
    writer nothing to write from; the answer says the KG holds nothing that answers."""
    backend = ScriptedBackend(extra_lines=['{"id": "ffffffff", "reasoning": "made up"}'],
                              chunks=["Marie Curie was born in the United States."])
    messages = list(GraphRag(tgsparql_demo_store, backend).query(QUESTION, stream=True))
    assert backend.select_calls == 1 and backend.answer_facts == []
    chunks = [m for m in messages if m.message_type == "chunk" and not m.end_of_session]
    assert [(m.response, m.end_of_stream) for m in chunks] == [(NOTHING_SELECTED, True)]
    assert messages[-1].error is None and messages[-1].sources == []
    uuid = uuid_of(messages)
    answer = ox.NamedNode(f"urn:trustgraph:prov:answer:{uuid}")
    assert not list(tgsparql_demo_store.oxigraph.quads_for_pattern(
        answer, ox.NamedNode(TG + "llmModel"), None, None))
    assert sessions(tgsparql_demo_store)[messages[0].explain_id]["status"] == ["complete"]


def test_zero_retrieved_edges_with_the_offline_backend_say_nothing_was_found(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    messages = list(tgsparql_demo_pipeline.query(UNKNOWN_QUESTION, stream=False))
    assert messages[3].response == NOTHING_SELECTED
    assert messages[-1].end_of_session and messages[-1].error is None


def test_a_forked_child_runs_sessions_too(tgsparql_demo_pipeline: GraphRag) -> None:
    """The worker threads of the parent do not exist in a forked child; it starts its own."""
    import multiprocessing

    assert tgsparql_demo_pipeline.ask(QUESTION)[0]  # the parent's workers are started
    results = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(
        target=lambda: results.put(tgsparql_demo_pipeline.ask(QUESTION)[1][-1].error is None)
    )
    child.start()
    child.join(timeout=30)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0 and results.get(timeout=5) is True
