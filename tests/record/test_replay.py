"""Golden questions asked again: recorded in a collection of their own (a throwaway one unless
named), compared with the golden file and an earlier run, reported as text, JSON and JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

import pyoxigraph as ox
import pytest

from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.record.explain import list_sessions
from tgsparql.record.golden import GoldenQuestion
from tgsparql.record.regression import freeze, observe
from tgsparql.record.replay import CheckReport, ReplayError, replaying
from tgsparql.stores.store import EmbeddedStore, Store
from tgsparql.testing import assert_conforms
from tgsparql.testing.fakes import Script, ScriptedBackend

QUESTIONS = ["Where was the scientist who discovered polonium born?", "Who discovered radium?",
             "Which prize did the daughter of Pierre Curie win?"]
EX = "https://example.org/demo/"
BORN = f"<{EX}entity/Marie_Curie> <{EX}rel/bornIn> <{EX}entity/Warsaw>"
KEPT = vocab.Collection("golden-run")


@pytest.fixture
def golden(tgsparql_demo_pipeline: GraphRag) -> list[GoldenQuestion]:
    """The demo's answers to three questions, frozen."""
    store = tgsparql_demo_pipeline.store
    frozen = []
    for question in QUESTIONS:
        _, messages = tgsparql_demo_pipeline.ask(question)
        session = messages[0].explain_id or ""
        frozen.append(freeze(observe(store, vocab.DEFAULT_COLLECTION, session, validate=True)))
    return frozen


def quads(store: EmbeddedStore) -> set[ox.Quad]:
    return set(store.oxigraph.quads_for_pattern(None, None, None, None))


def check(store: Store, golden: list[GoldenQuestion], backend: object = None, **options: object
          ) -> CheckReport:
    asking = backend or OfflineBackend()
    with replaying(store, asking, **options) as replay:  # type: ignore[arg-type]
        return replay.check(golden, origin="golden.yaml")


def test_an_unchanged_store_holds_and_the_throwaway_record_leaves_it_as_it_was(
    tgsparql_demo_store: EmbeddedStore, golden: list[GoldenQuestion],
) -> None:
    before = quads(tgsparql_demo_store)
    report = check(tgsparql_demo_store, golden)
    assert report.failing == 0
    assert [r.changes for r in report.results] == [(), (), ()]
    assert report.collection.startswith("golden-check-") and not report.kept
    assert quads(tgsparql_demo_store) == before
    assert report.to_text() == (
        "check golden.yaml: all 3 questions hold (offline backend; recorded in a throwaway "
        "collection, deleted)\n" + "".join(f"ok    {q}\n" for q in QUESTIONS))


def delete_born(store: Store) -> None:
    store.update(f"DELETE DATA {{ {BORN} }}")


def test_a_deleted_fact_fails_its_question_naming_the_edge_and_its_document(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    delete_born(tgsparql_demo_store)
    report = check(tgsparql_demo_store, golden)
    assert report.failing == 1
    polonium, radium, prize = report.results
    assert polonium.fails and not radium.fails and not prize.fails
    first = polonium.lines()[0]
    assert first == (
        f"no longer selected: {BORN} (Marie Curie — born in — Warsaw); no longer a fact of the "
        f"KG; stated in {EX}doc/marie-curie, page 1, chunk 0: \"Marie Curie was born Maria "
        "Skłodowska in Warsaw in 1867.\"")
    assert any(line.startswith('answer changed: expected exactly "Warsaw.') for line in
               polonium.lines())
    text = report.to_text()
    assert text.startswith("check golden.yaml: 1 of 3 questions changed")
    assert f"FAIL  {QUESTIONS[0]}\n      {first}\n" in text


def test_json_and_junit_carry_the_same_verdict_and_diff(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    delete_born(tgsparql_demo_store)
    report = check(tgsparql_demo_store, golden)
    data = json.loads(report.render("json"))
    assert (data["questions"], data["failing"], data["backend"]) == (3, 1, "offline")
    assert data["can_vary"] == [] and data["kept"] is False
    polonium = data["results"][0]
    assert polonium["passed"] is False and polonium["name"] == QUESTIONS[0]
    assert polonium["changes"][0]["check"] == "edges"
    assert polonium["changes"][0]["message"] == report.results[0].lines()[0]
    suites = ElementTree.fromstring(report.render("junit"))
    assert (suites.get("tests"), suites.get("failures")) == ("3", "1")
    cases = suites.findall("testsuite/testcase")
    assert [case.get("name") for case in cases] == QUESTIONS
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("message") == report.results[0].lines()[0]
    assert failure.text == "\n".join(report.results[0].lines())
    assert [case.find("failure") for case in cases[1:]] == [None, None]


def test_a_named_collection_keeps_the_sessions_for_a_later_run_against_it(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    first = check(tgsparql_demo_store, golden, collection=KEPT)
    assert first.kept and first.collection == KEPT.name
    kept = list_sessions(tgsparql_demo_store, KEPT, 10)
    assert sorted(s.session for s in kept) == sorted(r.session for r in first.results)
    for result in first.results:
        assert_conforms(tgsparql_demo_store, session=result.session)
    delete_born(tgsparql_demo_store)
    second = check(tgsparql_demo_store, golden, against=KEPT)
    polonium = second.results[0]
    assert polonium.earlier == first.results[0].session
    against = [c for c in polonium.changes if c.against == KEPT.name]
    failing = [c.check for c in against if c.failing]
    # the born edge goes; how many other edges the selector trades for it is its own business
    assert failing[-1] == "answer" and set(failing[:-1]) == {"edges"}, failing
    assert against[0].message.startswith(f"no longer selected: {BORN}")
    assert against[0].message.endswith(f"stated in {EX}doc/marie-curie")
    assert "compared with collection golden-run too" in second.headline()
    assert all(not r.changes for r in second.results[1:])


def test_a_question_the_earlier_run_never_asked_is_noted_not_failed(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    check(tgsparql_demo_store, golden[:1], collection=KEPT)
    report = check(tgsparql_demo_store, golden, against=KEPT)
    assert report.failing == 0
    assert report.results[1].lines() == ["(note) against golden-run: no earlier complete session "
                                         "of this question in collection golden-run"]


def test_an_earlier_run_without_sessions_cannot_be_compared_with(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    with pytest.raises(ReplayError, match="collection 'nothing-here' holds no session to "
                                          "compare with"):
        check(tgsparql_demo_store, golden, against=vocab.Collection("nothing-here"))


def test_questions_asked_in_parallel_give_what_one_at_a_time_gives_and_whole_records(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    delete_born(tgsparql_demo_store)
    many = golden * 3
    named = [GoldenQuestion(g.question, f"{g.name} #{i}", g.select, g.select_only, g.not_select,
                            g.cite, g.answer, g.max_unselected_hops, g.validation, g.seeds)
             for i, g in enumerate(many)]
    with replaying(tgsparql_demo_store, OfflineBackend(), collection=KEPT) as replay:
        parallel = replay.check(named, jobs=4)
    with replaying(tgsparql_demo_store, OfflineBackend()) as replay:
        serial = replay.check(named, jobs=1)
    assert [r.entry.name for r in parallel.results] == [g.name for g in named]
    assert [r.lines() for r in parallel.results] == [r.lines() for r in serial.results]
    assert len({r.session for r in parallel.results}) == len(named)
    for result in parallel.results:
        assert_conforms(tgsparql_demo_store, session=result.session)


def test_an_llm_that_fails_fails_its_question_with_the_error(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    report = check(tgsparql_demo_store, golden[:1], ScriptedBackend({}))
    (result,) = report.results
    assert result.fails
    assert result.lines()[0].startswith("the session did not complete (failed): selection "
                                        "failed: ")


def test_with_an_llm_the_report_says_what_can_vary_and_tolerates_the_answer(
    tgsparql_demo_store: Store, golden: list[GoldenQuestion],
) -> None:
    polonium = golden[0]
    script = Script(select=[(edge.edge, "scripted") for edge in polonium.select],
                    answer="Warsaw, in other words.")
    backend = ScriptedBackend({polonium.question: script})
    strict = check(tgsparql_demo_store, [polonium], backend)
    assert strict.failing == 1
    assert [c.check for c in strict.results[0].changes if c.fails] == ["citations", "citations",
                                                                       "citations", "answer"]
    lenient = check(tgsparql_demo_store, [polonium], backend, tolerate=("answer", "citations"))
    assert lenient.failing == 0
    text = lenient.to_text()
    assert "scripted backend" in text.splitlines()[0]
    assert text.splitlines()[1] == ("note: with an LLM, answer, citations, edges, hops can vary "
                                    "from run to run; --tolerate answer reports answer changes "
                                    "without failing (tolerated)")
    assert "(tolerated) answer changed: expected exactly" in text
