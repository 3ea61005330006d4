"""`tgsparql rollup`: the BI figures of the days that are over. The saved BI queries answer the
same with a rollup as without one, the shapes hold a rollup to what it sums, and it catches up
after `sessions delete` and after sessions of its days come back."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from benchmarks.serve_bench import current_text, generate
from tgsparql.cli import main
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import ROLLUP
from tgsparql.record.conformance import bundled_validator
from tgsparql.record.migrate import migrate, pending
from tgsparql.record.rollup import RollupError, has_rollup, roll_up, settled
from tgsparql.serve.saved import saved_queries
from tgsparql.stores.store import EmbeddedStore

COLLECTION = vocab.DEFAULT_COLLECTION
GRAPH = COLLECTION.graph
TG = vocab.TG
LATER = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
"""A moment when every generated day is over."""
DAYS = 4
"""The generated sessions start on 2024-01-01 and the three days after it."""
PARAMS: dict[str, list[dict[str, str]]] = {
    "sessions_per_day": [{}, {"since": "2024-01-02", "until": "2024-01-03"}],
    "edges_per_session": [{}, {"limit": "1"}, {"limit": "7"}],
    "failed_sessions": [{}, {"limit": "1"}, {"error_contains": "timed out (run 19"}],
    "most_cited_documents": [{}, {"limit": "2"}],
    "most_selected_facts": [{"limit": "1000"}, {"limit": "3"}],
    "answers_citing_nothing": [{}, {"limit": "2"}],
    "stale_sessions": [{}, {"limit": "3"}],
}


def recorded(path: Path | None = None, sessions: int = 40, seed: int = 7) -> EmbeddedStore:
    """A store of generated sessions over DAYS days, as the templates write them, migrated so
    that each day says it holds sessions."""
    store = EmbeddedStore(path)
    with tempfile.TemporaryDirectory() as directory:
        info = generate(Path(directory) / "records.trig", sessions, seed, documents=5, days=DAYS,
                        current=True)
        for file in info["files"]:
            store.oxigraph.load(path=file, format=ox.RdfFormat.TRIG)
    migrate(store, pending(store))
    return store


def answers(store: EmbeddedStore) -> dict[tuple[str, str], list[dict[str, ox.Term]]]:
    """Every saved query's rows, for each set of parameters tried."""
    return {(name, repr(params)): store.select(current_text(name, params))
            for name in saved_queries() for params in PARAMS.get(name, [{}])}


def rollup_violations(store: EmbeddedStore) -> list[str]:
    report = bundled_validator(store.dialect).validate(store, default_graph="union")
    return sorted(str(result.source_constraint.value) for result in report.results
                  if "Rollup" in str(result.source_shape) or "Day" in str(result.source_shape))


def test_the_saved_queries_answer_alike_without_a_rollup_and_with_one_of_any_days() -> None:
    store = recorded()
    without = answers(store)
    assert all(rows for (name, _), rows in without.items() if name != "documents_never_cited")
    for through in ("2023-12-31", "2024-01-01", "2024-01-03", "2024-01-04"):
        rolled = roll_up(store, COLLECTION, at=LATER, through=dt.date.fromisoformat(through))
        assert answers(store) == without, through
    assert rolled.days == DAYS and rolled.sessions == 40
    assert rolled.models == 6 and rolled.documents > 0 and rolled.facts > 0


EVERY_ANSWER_CITING_NOTHING = """PREFIX tg: <https://trustgraph.ai/ns/>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?session ?answer WHERE { GRAPH <urn:graph:explainability> {
  ?retrieval prov:wasGeneratedBy ?session .
  ?selection prov:wasDerivedFrom ?retrieval ; tg:selectedEdgeCount ?selected .
  ?answer prov:wasDerivedFrom ?selection ; tg:citedEdgeCount 0 .
  FILTER(?selected > 0)
  ?session prov:startedAtTime ?started } }
ORDER BY DESC(?started) DESC(STR(?session))"""
"""Every session walked to its answer: what answers_citing_nothing lists, without the marks."""


def test_answers_citing_nothing_lists_what_walking_every_session_to_its_answer_finds() -> None:
    """The saved query reads only the marked sessions (tg:uncitedDay, here added by `migrate`)
    of the newest days that hold them: it lists the answers, spread over days, that a walk of
    every session to its answer finds, newest first, cut at any limit, with any rollup."""
    store = recorded(sessions=120)
    store.update("DELETE WHERE { GRAPH ?g { ?session <https://trustgraph.ai/ns/uncitedDay> ?d } }")
    migrate(store, pending(store))
    every = [(row["session"], row["answer"]) for row in store.select(EVERY_ANSWER_CITING_NOTHING)]
    assert len(every) == 12
    for through in (None, "2024-01-02", "2024-01-04"):
        if through is not None:
            roll_up(store, COLLECTION, at=LATER, through=dt.date.fromisoformat(through))
        for limit in (1, 5, 12, 100):
            rows = store.select(current_text("answers_citing_nothing", {"limit": str(limit)}))
            assert [(row["session"], row["answer"]) for row in rows] == every[:limit], (through,
                                                                                     limit)
    assert rollup_violations(store) == []


def test_a_rollup_is_replaced_whole_and_holds_only_the_days_up_to_its_last() -> None:
    store = recorded()
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 4))
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 2))
    days = sorted(q.object.value for q in store.oxigraph.quads_for_pattern(
        None, ox.NamedNode(TG + "rollupDay"), None, GRAPH))
    assert days == ["2024-01-01", "2024-01-02"]
    assert [q.object.value for q in store.oxigraph.quads_for_pattern(
        ROLLUP, ox.NamedNode(TG + "throughDay"), None, GRAPH)] == ["2024-01-02"]
    assert rollup_violations(store) == []


def test_a_day_whose_sessions_are_all_deleted_is_forgotten_by_the_next_rollup() -> None:
    store = recorded()
    first_day = ox.Literal("2024-01-01", datatype=vocab.XSD_DATE)
    store.update("DELETE WHERE { GRAPH ?g { ?session <https://trustgraph.ai/ns/day> "
                 '"2024-01-01"^^<http://www.w3.org/2001/XMLSchema#date> } }')
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 4))
    dates = {q.object for q in store.oxigraph.quads_for_pattern(
        None, ox.NamedNode(TG + "date"), None, GRAPH)}
    assert first_day not in dates and len(dates) == DAYS - 1


def test_a_day_not_over_for_an_hour_is_not_rolled_up() -> None:
    at = dt.datetime(2024, 5, 2, 0, 30, tzinfo=dt.timezone.utc)
    assert settled(at) == dt.date(2024, 4, 30)
    assert settled(at + dt.timedelta(hours=1)) == dt.date(2024, 5, 1)
    with pytest.raises(RollupError, match="2024-05-01 is not settled yet"):
        roll_up(recorded(sessions=3), COLLECTION, at=at, through=dt.date(2024, 5, 1))


def test_the_shapes_report_a_rollup_that_no_longer_sums_the_record_and_a_rerun_repairs_it(
) -> None:
    store = recorded()
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 4))
    assert rollup_violations(store) == []
    # sessions of rolled days come back beside the rollup: a partial restore
    restored = recorded(sessions=60, seed=8)
    store.oxigraph.extend(list(restored.oxigraph))
    found = rollup_violations(store)
    assert "https://trustgraph.ai/shapes/RollupDayCountsItsSessions" in found
    assert "https://trustgraph.ai/shapes/RollupUsageSumsTheRecord" in found
    assert "https://trustgraph.ai/shapes/RollupDocumentSumsTheRecord" in found
    assert "https://trustgraph.ai/shapes/RollupFactSumsTheRecord" in found
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 4))
    assert rollup_violations(store) == []


def test_the_facts_are_ranked_as_most_selected_facts_orders_them_and_the_shapes_hold_it(
) -> None:
    store = recorded()
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 4))
    ranked = store.select(
        "SELECT ?figure ?rank ?selections WHERE { GRAPH <urn:graph:explainability> { "
        "?figure <https://trustgraph.ai/ns/factRank> ?rank ; "
        "<https://trustgraph.ai/ns/selectionCount> ?selections } } ORDER BY ?rank")
    assert [int(row["rank"].value) for row in ranked] == list(range(1, len(ranked) + 1))
    counts = [int(row["selections"].value) for row in ranked]
    assert counts == sorted(counts, reverse=True) and len(set(counts)) > 1
    top = store.select(current_text("most_selected_facts", {"limit": "1"}))
    assert int(top[0]["selections"].value) == counts[0]
    assert rollup_violations(store) == []
    rank = "<https://trustgraph.ai/ns/factRank>"
    first, second, third = (f"<{row['figure'].value}>" for row in ranked[:3])
    store.update(f"DELETE DATA {{ GRAPH <urn:graph:explainability> {{ {first} {rank} 1 . "
                 f"{second} {rank} 2 . {third} {rank} 3 }} }} ; "
                 f"INSERT DATA {{ GRAPH <urn:graph:explainability> {{ {first} {rank} 2 . "
                 f"{second} {rank} 1 }} }}")
    found = rollup_violations(store)
    assert found.count("https://trustgraph.ai/shapes/RollupFactRankFollowsItsCounts") >= 2
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 4))
    assert rollup_violations(store) == []


def test_a_session_whose_day_does_not_say_it_holds_sessions_is_reported_and_migrated() -> None:
    store = recorded(sessions=3)
    store.update("DELETE WHERE { GRAPH ?g { ?day <https://trustgraph.ai/ns/date> ?date } }")
    report = bundled_validator(store.dialect).validate(store, default_graph="union")
    assert "https://trustgraph.ai/shapes/SessionDayHoldsSessions" in {
        r.source_constraint.value for r in report.results if r.source_constraint is not None}
    todo = pending(store)
    assert len(todo) == len(todo.days) > 0
    migrate(store, todo)
    assert "https://trustgraph.ai/shapes/SessionDayHoldsSessions" not in {
        r.source_constraint.value for r in bundled_validator(store.dialect).validate(
            store, default_graph="union").results if r.source_constraint is not None}


def test_sessions_delete_drops_the_rollup_with_the_sessions_and_rolls_up_again(
    tmp_path: Path,
) -> None:
    store = recorded(tmp_path / "store")
    roll_up(store, COLLECTION, at=LATER, through=dt.date(2024, 1, 4))
    oldest = min(store.oxigraph.quads_for_pattern(
        None, vocab.PROV_STARTED_AT_TIME, None, GRAPH), key=lambda q: q.object.value).subject
    store.close()
    deleted = CliRunner().invoke(main, ["sessions", "delete", "--store", str(tmp_path / "store"),
                                        "--session", oldest.value])
    assert deleted.exit_code == 0, deleted.output
    assert "rolled up 39 sessions of 4 days through" in deleted.output
    after = EmbeddedStore(str(tmp_path / "store"))
    assert has_rollup(after, COLLECTION)
    assert rollup_violations(after) == []
    fresh = EmbeddedStore(None)
    fresh.oxigraph.extend(q for q in after.oxigraph if not q.subject.value.startswith(
        ROLLUP.value))
    assert answers(after) == answers(fresh)
    after.close()


def test_the_command_rolls_up_and_refuses_a_day_that_is_not_over(tmp_path: Path) -> None:
    recorded(tmp_path / "store").close()
    runner = CliRunner()
    done = runner.invoke(main, ["rollup", "--store", str(tmp_path / "store")])
    assert done.exit_code == 0, done.output
    assert done.output.startswith("rolled up 40 sessions of 4 days through ")
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    refused = runner.invoke(main, ["rollup", "--store", str(tmp_path / "store"),
                                   "--through", today])
    assert refused.exit_code == 2 and "is not settled yet" in refused.output
    wrong = runner.invoke(main, ["rollup", "--store", str(tmp_path / "store"),
                                 "--through", "May 1st"])
    assert wrong.exit_code == 2 and "'May 1st' is not a date (YYYY-MM-DD)" in wrong.output


def test_a_recorded_session_says_its_day_holds_sessions() -> None:
    store = EmbeddedStore(None)
    store.run("record_session", graph=GRAPH,
              session=ox.NamedNode("urn:trustgraph:session:aaaaaaaa-0000-4000-8000-000000000001"),
              question="q", started=dt.datetime(2024, 3, 1, 23, 30,
                                                tzinfo=dt.timezone(dt.timedelta(hours=-2))))
    assert [(q.subject.value, q.object.value) for q in store.oxigraph.quads_for_pattern(
        None, ox.NamedNode(TG + "date"), None, GRAPH)] == [
        ("urn:trustgraph:day:2024-03-02", "2024-03-02")]
