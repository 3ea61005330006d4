"""The scripted backend of `tgsparql.testing.fakes` answers what it is scripted to, and fails a
session, saying why, on anything else."""

from __future__ import annotations

import pytest

from tgsparql.asking.llm.base import ExtractionRequest
from tgsparql.asking.pipeline import GraphRag
from tgsparql.testing import assert_conforms
from tgsparql.testing.fakes import Script, ScriptedBackend, UnscriptedRequest

QUESTION = "Where was Marie Curie born?"


def test_an_unscripted_question_fails_its_session_saying_so(tgsparql_demo_store) -> None:
    rag = GraphRag(tgsparql_demo_store, ScriptedBackend({"Who won?": Script()}))
    answer, messages = rag.ask(QUESTION)
    assert answer == ""
    assert messages[-1].error.message == (
        f"selection failed: no script for the question {QUESTION!r}; "
        "scripted questions: 'Who won?'"
    )


def test_a_scripted_edge_that_was_not_retrieved_is_named(tgsparql_demo_store) -> None:
    missing = ("Marie Curie", "born in", "Atlantis")
    rag = GraphRag(tgsparql_demo_store,
                   ScriptedBackend({QUESTION: Script(select=[(missing, "why")])}))
    _, messages = rag.ask(QUESTION)
    error = messages[-1].error.message
    assert error.startswith(f"selection failed: the scripted edge {missing!r} is not among the ")
    assert "Marie Curie — born in — Warsaw" in error


def test_edges_are_scripted_by_labels_and_raw_output_is_passed_verbatim(
    tgsparql_demo_store
) -> None:
    born = ("Marie Curie", "born in", "Warsaw")
    rag = GraphRag(tgsparql_demo_store, ScriptedBackend({
        QUESTION: Script(select=[(born, "birthplace"), (born, "again")], answer="In Warsaw."),
        "Who discovered polonium?": Script(raw='```\n{"id": "ffffffff"}\nprose\n```'),
    }))
    answer, messages = rag.ask(QUESTION)
    assert answer == "In Warsaw."
    assert [t for t in messages[2].explain_triples
            if t.predicate.value.endswith("reasoning")][0].object.value == "birthplace"
    assert_conforms(tgsparql_demo_store, session=messages[0].explain_id)
    _, messages = rag.ask("Who discovered polonium?")
    counts = [t.object.value for t in messages[2].explain_triples
              if t.predicate.value.endswith("invalidIdCount")]
    assert counts == ["1"]


def test_scripted_extraction_and_unscripted_chunks() -> None:
    backend = ScriptedBackend({}, extractions={"Ada was born in London.": '{"s": "Ada"}'})
    assert backend.extract(ExtractionRequest("Ada was born in London.", "t")).text == '{"s": "Ada"}'
    with pytest.raises(UnscriptedRequest, match="no extraction scripted for the chunk 'Other.'"):
        backend.extract(ExtractionRequest("Other.", "t"))
    assert backend.calls == [("extract", "Ada was born in London."), ("extract", "Other.")]
