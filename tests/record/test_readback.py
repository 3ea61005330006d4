"""The outputs people and BI tools read a session back by, pinned byte for byte: `explain` as
text and JSON, `trace` of a session, an edge selection and a document as text and JSON, and the
session page with its picture. The session's UUID and times differ per run, so they are
replaced by placeholders; everything else must equal the files in tests/fixtures/readback/.
Run with TGSPARQL_WRITE_READBACK=1 to write the files anew (and read the diff)."""

from __future__ import annotations

import json
import os
import re

from conftest import FIXTURES

from tests.record.test_trace import CountingStore
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.record.explain import explain_session, render_text
from tgsparql.record.page import render_session
from tgsparql.record.session_view import session_view
from tgsparql.record.trace import render_text as trace_text
from tgsparql.record.trace import trace, trace_json

GOLDEN = FIXTURES / "readback"
QUESTIONS = ("Where was the scientist who discovered polonium born?",
             "When was Marie Curie born?")
DOCUMENT = "https://example.org/demo/doc/marie-curie"
STYLE = re.compile(r"<style>.*?</style>", re.DOTALL)
"""The pages' one stylesheet, pinned in base.html itself."""
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def outputs(rag: GraphRag, session: str) -> dict[str, str]:
    """Every read-back output of `session`, by file name."""
    store = rag.store
    explanation = explain_session(store, vocab.DEFAULT_COLLECTION, session)
    view = session_view(store, vocab.DEFAULT_COLLECTION, session)
    found = {
        "explain.txt": render_text(explanation),
        "explain.json": json.dumps(explanation.to_json(), ensure_ascii=False, indent=2),
        "page.html": STYLE.sub("<style>(base.html's)</style>",
                               render_session(view)),
        "picture.dot": view.picture.dot(),
        "picture.mmd": view.picture.mermaid(),
    }
    edges = [edge.iri for edge in explanation.selected]
    for name, iri in (("session", session), ("edge", edges[0] if edges else session),
                      ("document", DOCUMENT)):
        traced = trace(store, vocab.DEFAULT_COLLECTION, iri)
        found[f"trace-{name}.txt"] = trace_text(traced)
        found[f"trace-{name}.json"] = json.dumps(trace_json(traced), ensure_ascii=False, indent=2)
    return found


def test_read_back_outputs_are_as_pinned(tgsparql_demo_pipeline: GraphRag) -> None:
    asked = [list(tgsparql_demo_pipeline.query(question, stream=True)) for question in QUESTIONS]
    assert all(messages[-1].error is None for messages in asked)
    sessions = [messages[0].explain_id for messages in asked]
    for number, session in enumerate(sessions):
        found = outputs(tgsparql_demo_pipeline, session)
        for other, iri in enumerate(sessions):
            uuid = iri.rsplit(":", 1)[1]
            found = {name: text.replace(uuid, f"<uuid{other}>") for name, text in found.items()}
        found = {name: TIME.sub("<time>", text) for name, text in found.items()}
        if number:  # the page's markup is the first session's again
            found.pop("page.html")
        folder = GOLDEN / f"session{number}"
        if os.environ.get("TGSPARQL_WRITE_READBACK"):
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in found.items():
                (folder / name).write_text(text, encoding="utf-8")
        for name, text in found.items():
            assert text == (folder / name).read_text(encoding="utf-8"), f"session{number}/{name}"


def test_the_session_page_reads_the_session_in_one_request(
    tgsparql_demo_pipeline: GraphRag
) -> None:
    """The record's triples, the labels, the sources and the answer's text, four graphs: one
    query (explain_session.rq), and no trace query beside it."""
    session = list(tgsparql_demo_pipeline.query(QUESTIONS[0], stream=True))[0].explain_id
    counting = CountingStore(tgsparql_demo_pipeline.store)
    session_view(counting, vocab.DEFAULT_COLLECTION, session)
    ids = SessionIds.from_session_iri(session)
    assert counting.requests == [tgsparql_demo_pipeline.templates.render(
        "explain_session", graph=vocab.DEFAULT_COLLECTION.graph, session=ids.session,
        retrieval=ids.retrieval, selection=ids.selection, answer=ids.answer, unselected=True)]
