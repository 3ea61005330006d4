"""What changed: a recorded session read as a golden question checks it, frozen into an entry,
and compared with one; each change names the edge and the document it concerns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pyoxigraph as ox
import pytest

from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.record.golden import AnswerRule, ExpectedEdge, GoldenQuestion, SourceMark
from tgsparql.record.regression import (
    FreezeError, Known, Observed, compare, freeze, known, newest_session, observe,
    sessions_to_freeze,
)
from tgsparql.stores.store import Store
from tgsparql.testing.fakes import Script

QUESTION = "Where was the scientist who discovered polonium born?"
EX = "https://example.org/demo/"
CURIE_DOC = EX + "doc/marie-curie"
BORN = ox.Triple(ox.NamedNode(EX + "entity/Marie_Curie"), ox.NamedNode(EX + "rel/bornIn"),
                 ox.NamedNode(EX + "entity/Warsaw"))
DISCOVERED = ox.Triple(ox.NamedNode(EX + "entity/Marie_Curie"),
                       ox.NamedNode(EX + "rel/discovered"), ox.NamedNode(EX + "entity/Polonium"))
WORKED = ox.Triple(ox.NamedNode(EX + "entity/Marie_Curie"), ox.NamedNode(EX + "rel/workedAt"),
                   ox.NamedNode(EX + "entity/University_of_Paris"))


def asked(rag: GraphRag, question: str = QUESTION) -> str:
    _, messages = rag.ask(question)
    return messages[0].explain_id or ""


@pytest.fixture
def observed(tgsparql_demo_pipeline: GraphRag) -> Observed:
    session = asked(tgsparql_demo_pipeline)
    return observe(tgsparql_demo_pipeline.store, vocab.DEFAULT_COLLECTION, session, validate=True)


def test_a_session_is_observed_as_its_record_and_the_provenance_show_it(
    observed: Observed,
) -> None:
    assert observed.status == "complete"
    assert observed.question == QUESTION
    assert observed.seeds == (EX + "entity/Polonium",)
    assert [edge.edge for edge in observed.edges] == [DISCOVERED, BORN]
    born = observed.edges[1]
    assert born.labels == ("Marie Curie", "born in", "Warsaw")
    assert born.sources == (SourceMark(CURIE_DOC, 1, 0,
                                       "Marie Curie was born Maria Skłodowska in Warsaw in 1867."),)
    assert born.documents == (CURIE_DOC,)
    assert born.cited
    assert observed.answer is not None and observed.answer.startswith("Warsaw.")
    assert observed.unselected_hops == 0
    assert observed.validation == "conforms"
    assert observed.validation_line.startswith("conforms: ")
    assert observed.cited_places == (SourceMark(CURIE_DOC, 1, 0), SourceMark(CURIE_DOC, 1, 1))


def test_a_session_is_validated_only_when_asked(tgsparql_demo_pipeline: GraphRag) -> None:
    session = asked(tgsparql_demo_pipeline)
    plain = observe(tgsparql_demo_pipeline.store, vocab.DEFAULT_COLLECTION, session)
    assert plain.validation is None and plain.validation_line == ""


def test_a_frozen_session_holds_everything_it_shows_and_compares_clean(
    observed: Observed,
) -> None:
    entry = freeze(observed)
    assert entry.question == entry.name == QUESTION
    assert entry.select_only
    assert [(e.edge, e.cited) for e in entry.select] == [(DISCOVERED, True), (BORN, True)]
    assert entry.select[1].sources == observed.edges[1].sources
    assert entry.cite == (SourceMark(CURIE_DOC),)
    assert entry.answer == AnswerRule("exact", observed.answer or "")
    assert entry.seeds == observed.seeds
    assert entry.max_unselected_hops == 0
    assert entry.validation == "conforms"
    assert compare(entry, observed) == []


def without(observed: Observed, edge: ox.Triple) -> Observed:
    return replace(observed, edges=tuple(e for e in observed.edges if e.edge != edge))


def messages(entry: GoldenQuestion, observed: Observed, known_now: Known = Known()) -> list[str]:
    return [change.message for change in compare(entry, observed, known_now)]


def test_an_edge_no_longer_selected_is_named_with_the_document_that_states_it(
    observed: Observed,
) -> None:
    """Named by its terms' local names, unless the store's labels are known."""
    entry = freeze(observed)
    (change, *_) = compare(entry, without(observed, BORN))
    assert change.check == "edges" and change.failing
    assert change.message == (
        f"no longer selected: <{EX}entity/Marie_Curie> <{EX}rel/bornIn> <{EX}entity/Warsaw> "
        f"(Marie_Curie — bornIn — Warsaw); stated in {CURIE_DOC}, page 1, chunk 0: "
        '"Marie Curie was born Maria Skłodowska in Warsaw in 1867."')


def test_what_the_store_says_now_tells_a_fact_gone_from_the_kg_and_where_it_is_stated(
    tgsparql_demo_store: Store, observed: Observed,
) -> None:
    entry = GoldenQuestion(QUESTION, QUESTION, select=(ExpectedEdge(BORN),))
    tgsparql_demo_store.update(f"DELETE DATA {{ {BORN.subject} {BORN.predicate} {BORN.object} }}")
    now = known(tgsparql_demo_store, [entry])
    assert now.facts == frozenset()
    assert now.labels[BORN.predicate] == "born in"
    (change,) = [c for c in compare(entry, without(observed, BORN), now) if c.failing]
    assert change.message.endswith(
        "(Marie Curie — born in — Warsaw); no longer a fact of the KG; stated in "
        f"{CURIE_DOC}, page 1, chunk 0: \"Marie Curie was born Maria Skłodowska in Warsaw in "
        "1867.\"")


def test_a_new_edge_fails_only_an_entry_that_selects_only_its_own(observed: Observed) -> None:
    fewer = GoldenQuestion(QUESTION, QUESTION, select=(ExpectedEdge(DISCOVERED),))
    (note,) = compare(fewer, observed)
    assert note.check == "edges" and not note.failing and not note.fails
    assert note.message.startswith(f"newly selected: <{EX}entity/Marie_Curie> <{EX}rel/bornIn>")
    assert note.message.endswith(f"stated in {CURIE_DOC}, page 1, chunk 0: \"Marie Curie was born "
                                 "Maria Skłodowska in Warsaw in 1867.\"")
    (change,) = compare(replace(fewer, select_only=True), observed)
    assert change.fails
    assert compare(GoldenQuestion(QUESTION, QUESTION), observed) == [], "no select: no opinion"


def test_an_edge_that_must_not_be_selected_fails_when_it_is(observed: Observed) -> None:
    entry = GoldenQuestion(QUESTION, QUESTION, not_select=(BORN, WORKED))
    assert messages(entry, observed) == [
        f"selected, though it must not be: <{EX}entity/Marie_Curie> <{EX}rel/bornIn> "
        f"<{EX}entity/Warsaw> (Marie Curie — born in — Warsaw)"]


def test_sources_changed_say_which_place_was_lost_and_which_is_new(observed: Observed) -> None:
    entry = freeze(observed)
    moved = SourceMark(CURIE_DOC, 1, 3, "Born in Warsaw.")
    edges = tuple(replace(e, sources=(moved,)) if e.edge == BORN else e for e in observed.edges)
    (change,) = compare(entry, replace(observed, edges=edges))
    assert change.check == "sources" and change.fails
    assert change.message == (
        f"sources of <{EX}entity/Marie_Curie> <{EX}rel/bornIn> <{EX}entity/Warsaw> (Marie Curie — "
        f"born in — Warsaw) changed; no longer stated in {CURIE_DOC}, page 1, chunk 0: \"Marie "
        "Curie was born Maria Skłodowska in Warsaw in 1867.\"; now stated in "
        f"{CURIE_DOC}, page 1, chunk 3: \"Born in Warsaw.\"")


def test_a_source_mark_compares_only_the_fields_it_gives() -> None:
    place = SourceMark(CURIE_DOC, 1, 0, "Marie Curie was born in Warsaw.")
    assert SourceMark(CURIE_DOC).covers(place)
    assert SourceMark(CURIE_DOC, page=1).covers(place)
    assert not SourceMark(CURIE_DOC, chunk=2).covers(place)
    assert not SourceMark(EX + "doc/other").covers(place)


def test_citations_changed_name_the_edge_or_document_no_longer_cited(observed: Observed) -> None:
    entry = replace(freeze(observed), cite=(SourceMark(CURIE_DOC, page=1),
                                            SourceMark(EX + "doc/pierre-curie")))
    edges = tuple(replace(e, cited=False) if e.edge == BORN else e for e in observed.edges)
    assert messages(entry, replace(observed, edges=edges)) == [
        f"the answer no longer cites <{EX}entity/Marie_Curie> <{EX}rel/bornIn> "
        f"<{EX}entity/Warsaw> (Marie Curie — born in — Warsaw)",
        f"the answer no longer cites {EX}doc/pierre-curie",
    ]
    newly = replace(freeze(observed), cite=(SourceMark(EX + "doc/pierre-curie"),))
    notes = [c for c in compare(newly, observed) if not c.failing]
    assert [c.message for c in notes] == [f"the answer now also cites {CURIE_DOC}"]


def test_an_answer_that_breaks_its_rule_is_quoted_beside_the_rule(observed: Observed) -> None:
    for rule, holds in ((AnswerRule("contains", "Warsaw"), True),
                        (AnswerRule("pattern", r"^Warsaw\b"), True),
                        (AnswerRule("contains", "Paris"), False)):
        changes = compare(GoldenQuestion(QUESTION, QUESTION, answer=rule), observed)
        assert (changes == []) is holds
    (change,) = compare(GoldenQuestion(QUESTION, QUESTION, answer=AnswerRule("exact", "Paris.")),
                        observed)
    assert change.check == "answer"
    assert change.message == f'answer changed: expected exactly "Paris.", got "{observed.answer}"'
    long = replace(observed, answer="x" * 1000)
    (cut,) = compare(GoldenQuestion(QUESTION, QUESTION, answer=AnswerRule("exact", "y")), long)
    assert len(cut.message) < 400 and cut.message.endswith('…"')


def test_grounding_changed_names_the_seeds_lost_and_found(observed: Observed) -> None:
    entry = replace(freeze(observed), seeds=(EX + "entity/Radium",))
    assert messages(entry, observed) == [f"grounding no longer finds {EX}entity/Radium",
                                         f"grounding now also finds {EX}entity/Polonium"]


def test_only_a_complete_session_is_frozen(observed: Observed) -> None:
    failed = replace(observed, status="failed", error="selection failed: timeout")
    with pytest.raises(FreezeError, match=rf"session {observed.session} did not complete \(failed: "
                                          r"selection failed: timeout\); only a complete session "
                                          "can be frozen"):
        freeze(failed)


def test_a_failed_session_and_a_changed_verdict_fail(observed: Observed) -> None:
    entry = freeze(observed)
    failed = replace(observed, status="failed", error="selection failed: timeout",
                     validation="violates", validation_line="does not conform: 1 violations")
    changes = compare(entry, failed)
    assert [(c.check, c.message) for c in changes] == [
        ("session", "the session did not complete (failed): selection failed: timeout"),
        ("validation", "the record does not conform: 1 violations; expected it to conform"),
    ]


def test_tolerated_changes_are_reported_without_failing(observed: Observed) -> None:
    entry = replace(freeze(observed), answer=AnswerRule("exact", "Paris."))
    (change,) = compare(entry, observed, tolerate=["answer"])
    assert change.failing and change.tolerated and not change.fails
    assert change.to_json() == {"check": "answer", "against": "golden", "failing": True,
                                "tolerated": True, "message": change.message}


def test_unselected_hops_count_the_retrieved_edges_between_a_seed_and_the_selection(
    tgsparql_demo_store: Store, tgsparql_pipeline: Callable[..., GraphRag],
) -> None:
    """Born-in alone is one unselected edge (discovered) away from the seed, polonium."""
    born_only = Script(select=[(("Marie Curie", "born in", "Warsaw"), "the birthplace")],
                       answer="Warsaw [x].")
    rag = tgsparql_pipeline({QUESTION: born_only}, store=tgsparql_demo_store)
    gap = observe(tgsparql_demo_store, vocab.DEFAULT_COLLECTION, asked(rag))
    assert gap.unselected_hops == 1
    entry = GoldenQuestion(QUESTION, QUESTION, max_unselected_hops=0)
    assert messages(entry, gap) == [
        "1 unselected hops between the question's entities and a selected edge; at most 0 "
        "allowed"]
    assert compare(replace(entry, max_unselected_hops=1), gap) == []
    unreached = replace(gap, unselected_hops=None)
    assert messages(entry, unreached) == [
        "a selected edge is not connected to the question's entities through the retrieved "
        "edges (at most 0 unselected hops allowed)"]


def test_an_earlier_run_is_compared_on_the_documents_its_record_names(
    observed: Observed,
) -> None:
    recorded = observed.as_recorded()
    assert [e.sources for e in recorded.edges] == [(SourceMark(CURIE_DOC),)] * 2
    assert compare(freeze(recorded), recorded) == []


def test_sessions_to_freeze_are_the_newest_complete_one_per_question(
    tgsparql_demo_pipeline: GraphRag,
) -> None:
    store = tgsparql_demo_pipeline.store
    first = asked(tgsparql_demo_pipeline)
    radium = asked(tgsparql_demo_pipeline, "Who discovered radium?")
    again = asked(tgsparql_demo_pipeline)
    assert sessions_to_freeze(store, vocab.DEFAULT_COLLECTION) == [radium, again]
    assert sessions_to_freeze(store, vocab.DEFAULT_COLLECTION, [first, first]) == [first]
    assert newest_session(store, vocab.DEFAULT_COLLECTION, QUESTION) == again
    assert newest_session(store, vocab.DEFAULT_COLLECTION, "discovered polonium") is None
