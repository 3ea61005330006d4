"""Property tests: any text round-trips byte-exactly, and no input reaches outside its session."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence

import pyoxigraph as ox
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tgsparql.asking.labels import LabeledEdge
from tgsparql.asking.llm.base import SelectionOutput, SelectionRequest
from tgsparql.asking.messages import GraphRagResponse
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf.text import words
from tgsparql.stores.store import EmbeddedStore, open_store

TG = "https://trustgraph.ai/ns/"
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
XSD_STRING = ox.NamedNode("http://www.w3.org/2001/XMLSchema#string")
EXPLAINABILITY = ox.NamedNode("urn:graph:explainability")
LIBRARY = ox.NamedNode("urn:graph:library")

SUBJECT = ox.NamedNode("https://example.org/test/entity/subject")
TARGET = ox.NamedNode("https://example.org/test/entity/target")
RELATES = ox.NamedNode("https://example.org/test/rel/relatesTo")

NASTY = [
    '"', "'", '"""', "'''", "\\", "\\\\", '\\"', "\\u0022", "\\n", "\n", "\r", "\r\n", "\t",
    "}", "{", ">", "<", "<<(", ")>>", "<<", ">>", "#", "?x", "$x", ";", ".", "^^", "@en",
    '" } ; DROP ALL ; INSERT DATA { <urn:x> <urn:y> "', "> } DELETE WHERE { ?s ?p ?o } #",
    "{{ graph }}", "{% raw %}", "\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f",
    "\x85", "\u2028", "\u2029", "\ufeff", "\u200b", "\u202e", "😀", "👩‍🔬", "🇵🇱", "e\u0301",
    "ß", "İ", "ﬁ", "Ⅻ", "½", "㎒", "漢字", "עברית", "\U0010fffd",
]

fragments = st.one_of(st.text(max_size=6), st.sampled_from(NASTY))
nasty_text = st.lists(fragments, max_size=8).map("".join)
anchor = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=2, max_size=6).map(lambda s: "Zq" + s)
labels = st.tuples(anchor, st.lists(fragments, max_size=3).map("".join)).map("".join)

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class Answer:
    def __init__(self, chunks: Sequence[str]) -> None:
        self.chunks = chunks
        self.usage = None

    def __iter__(self) -> Iterator[str]:
        yield from self.chunks


class ScriptedBackend:
    """Selects every edge with the given reasoning and answers with the given text."""

    name = "scripted"

    def __init__(self, reasoning: str, answer: str) -> None:
        self.reasoning = reasoning
        self.answer_text = answer
        self.requests: list[SelectionRequest] = []

    def select(self, request: SelectionRequest) -> SelectionOutput:
        self.requests.append(request)
        lines = [
            json.dumps({"id": edge.id, "reasoning": self.reasoning}, ensure_ascii=False)
            for edge in request.edges
        ]
        return SelectionOutput("\n".join(lines), None)

    def answer(self, question: str, facts: Sequence[LabeledEdge], *, stream: bool) -> Answer:
        text = self.answer_text
        if not stream:
            return Answer([text])
        third = max(1, len(text) // 3)
        return Answer([text[i : i + third] for i in range(0, len(text), third)])


def tiny_kg(label: str) -> EmbeddedStore:
    store = open_store()
    for quad in (
        ox.Quad(SUBJECT, RDFS_LABEL, ox.Literal(label)),
        ox.Quad(SUBJECT, RELATES, TARGET),
        ox.Quad(TARGET, RDFS_LABEL, ox.Literal("Target")),
        ox.Quad(RELATES, RDFS_LABEL, ox.Literal("relates to")),
    ):
        store.oxigraph.add(quad)
    return store


def mentions(question: str, label: str) -> bool:
    """Whether the label's words appear, in order and together, among the question's words."""
    key, said = words(label), words(question)
    if not key or len(key) > 6:
        return False
    return any(said[i : i + len(key)] == key for i in range(len(said) - len(key) + 1))


def one_value(store: EmbeddedStore, graph: ox.NamedNode, subject: str, predicate: str) -> ox.Literal:
    rows = store.select(
        f"SELECT ?o WHERE {{ GRAPH {graph} {{ <{subject}> <{TG}{predicate}> ?o }} }}"
    )
    assert len(rows) == 1, rows
    return rows[0]["o"]


def uuid_of(messages: list[GraphRagResponse]) -> str:
    assert messages[0].explain_id is not None, messages[-1].error
    return messages[0].explain_id.rsplit(":", 1)[1]


@SETTINGS
@given(
    label=labels,
    before=nasty_text,
    after=nasty_text,
    reasoning=nasty_text,
    answer=nasty_text,
    stream=st.booleans(),
)
def test_questions_labels_reasoning_and_answers_round_trip_byte_exactly(
    label, before, after, reasoning, answer, stream
) -> None:
    question = f"{before} {label} {after}"
    assume(mentions(question, label))
    store = tiny_kg(label)
    backend = ScriptedBackend(reasoning, answer)
    messages = list(GraphRag(store, backend).query(question, stream=stream))
    assert messages[-1].error is None, messages[-1].error
    uuid = uuid_of(messages)

    assert "".join(m.response for m in messages if m.message_type == "chunk") == answer
    (request,) = backend.requests
    assert [(e.labels, e.triple) for e in request.edges] == [
        ((label, "relates to", "Target"), ox.Triple(SUBJECT, RELATES, TARGET))
    ]

    query = one_value(store, EXPLAINABILITY, f"urn:trustgraph:session:{uuid}", "query")
    assert query.value == question and query.datatype == XSD_STRING
    assert query.value.encode("utf-8") == question.encode("utf-8")
    entity = store.select(
        f"SELECT ?e WHERE {{ GRAPH {EXPLAINABILITY} {{ "
        f"<urn:trustgraph:prov:retrieval:{uuid}> <{TG}entity> ?e }} }}"
    )
    assert [row["e"] for row in entity] == [SUBJECT]
    why = one_value(store, EXPLAINABILITY, f"urn:trustgraph:prov:edge:{uuid}:0", "reasoning")
    assert why.value == reasoning and why.datatype == XSD_STRING
    document = f"urn:trustgraph:answer:{uuid}"
    content = one_value(store, LIBRARY, document, "content")
    assert content.value == answer and content.datatype == XSD_STRING
    digest = one_value(store, LIBRARY, document, "contentSha256")
    assert digest.value == hashlib.sha256(answer.encode("utf-8")).hexdigest()
    label_back = store.select(f"SELECT ?l WHERE {{ {SUBJECT} {RDFS_LABEL} ?l }}")
    assert [row["l"].value for row in label_back] == [label]

    explained = {t for m in messages for t in m.explain_triples}
    assert ox.Triple(ox.NamedNode(f"urn:trustgraph:session:{uuid}"),
                     ox.NamedNode(TG + "query"), ox.Literal(question)) in explained
    assert ox.Triple(ox.NamedNode(f"urn:trustgraph:prov:edge:{uuid}:0"),
                     ox.NamedNode(TG + "reasoning"), ox.Literal(reasoning)) in explained


def session_subject(uuid: str) -> re.Pattern[str]:
    """The subjects a session owns in the explainability graph (docs/spec.md §2, as
    `queries/_session_owned.rq` lists them): its Session, Retrieval, Selection and Answer, its
    edge selections, seed cuts, name groundings and citations."""
    return re.compile(
        rf"urn:trustgraph:(session:{uuid}|prov:(retrieval|selection|answer):{uuid}"
        rf"|prov:(edge|seed|name|citation):{uuid}:(0|[1-9][0-9]*))"
    )


@SETTINGS
@given(
    label=labels,
    question=st.one_of(nasty_text, st.tuples(nasty_text, labels).map(" ".join)),
    reasoning=nasty_text,
    answer=nasty_text,
)
# a question that names the label by part of it: the Retrieval records a name grounding
@example(label="Zqbb:A0", question=" Zqbb:0:A0", reasoning="", answer="")
def test_no_input_changes_anything_outside_its_own_session(label, question, reasoning, answer) -> None:
    store = tiny_kg(label)
    earlier = GraphRag(store, ScriptedBackend("earlier reason", "earlier answer"))
    assert list(earlier.query(f"about {label}"))[-1].error is None
    rag = GraphRag(store, ScriptedBackend(reasoning, answer))
    before = set(store.oxigraph)

    messages = list(rag.query(question))

    after = set(store.oxigraph)
    assert before - after == set(), "nothing recorded before may change or disappear"
    added = after - before
    if messages[0].explain_id is None:
        assert messages == [messages[-1]] and messages[-1].error is not None
        assert added == set()
        return
    uuid = uuid_of(messages)
    own = session_subject(uuid)
    for quad in added:
        if quad.graph_name == EXPLAINABILITY:
            assert isinstance(quad.subject, ox.NamedNode) and own.fullmatch(quad.subject.value), quad
        else:
            assert quad.graph_name == LIBRARY, quad
            assert quad.subject == ox.NamedNode(f"urn:trustgraph:answer:{uuid}"), quad
    assert any(q.subject == ox.NamedNode(f"urn:trustgraph:session:{uuid}") for q in added)


@SETTINGS
@given(
    before=st.text(max_size=20),
    surrogate=st.characters(categories=["Cs"]),
    after=st.text(max_size=20),
)
def test_a_question_with_a_lone_surrogate_is_rejected_cleanly(before, surrogate, after) -> None:
    store = tiny_kg("Zqx")
    rag = GraphRag(store, ScriptedBackend("r", "a"))
    snapshot = set(store.oxigraph)
    question = f"{before}Zqx{surrogate}{after}"
    messages = list(rag.query(question))
    assert len(messages) == 1
    (message,) = messages
    assert message.error is not None and message.error.type == "invalid-question"
    assert "surrogate" in message.error.message
    assert f"U+{ord(surrogate):04X}" in message.error.message
    assert message.end_of_session is True and message.explain_id is None
    assert set(store.oxigraph) == snapshot


@settings(max_examples=20, deadline=None)
@given(surrogate=st.characters(categories=["Cs"]), where=st.sampled_from(["reasoning", "answer"]))
def test_a_lone_surrogate_from_the_llm_fails_its_stage_cleanly(surrogate, where) -> None:
    store = tiny_kg("Zqx")
    text = f"bad {surrogate} text"
    backend = ScriptedBackend(text if where == "reasoning" else "ok", text if where == "answer" else "ok")
    rag = GraphRag(store, backend)
    messages = list(rag.query("Tell me about Zqx"))
    last = messages[-1]
    assert last.error is not None and last.end_of_session is True
    stage = "selection" if where == "reasoning" else "answer"
    assert last.error.message.startswith(f"{stage} failed: ")
    uuid = uuid_of(messages)
    status = one_value(store, EXPLAINABILITY, f"urn:trustgraph:session:{uuid}", "status")
    assert status.value == "failed"
    edges = store.select(
        f"SELECT ?e WHERE {{ GRAPH {EXPLAINABILITY} {{ ?e a <{TG}EdgeSelection> }} }}"
    )
    assert (len(edges) == 1) is (where == "answer")
    library = list(store.oxigraph.quads_for_pattern(None, None, None, LIBRARY))
    assert library == []
