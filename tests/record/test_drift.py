"""Drift: recorded sessions whose explanation no longer holds once the KG, the source graph or
the librarian changed (docs/spec.md §2.1)."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import pyoxigraph as ox
import pytest

from benchmarks.growth_drift import make_realistic
from benchmarks.serve_bench import generate
from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.cli.ask import DEMO_QUESTION
from tgsparql.data.loader import load_files
from tgsparql.rdf import vocab
from tgsparql.record.drift import Drift, SourceDrift, find_drift
from tgsparql.record.explain import explain_session, render_text
from tgsparql.record.migrate import migrate, pending
from tgsparql.record.page import render_session
from tgsparql.record.rollup import roll_up
from tgsparql.record.session_view import session_view
from tgsparql.serve.saved import saved_queries
from tgsparql.stores.store import EmbeddedStore, Store, open_store

DEMO = "https://example.org/demo/"
BORN_IN_WARSAW = ox.Triple(ox.NamedNode(DEMO + "entity/Marie_Curie"),
                           ox.NamedNode(DEMO + "rel/bornIn"), ox.NamedNode(DEMO + "entity/Warsaw"))
MARIE_CURIE_DOC = ox.NamedNode(DEMO + "doc/marie-curie")
COLLECTION = vocab.DEFAULT_COLLECTION
GENERATED_DAYS = 4
LAST_GENERATED_DAY = dt.date(2024, 1, 1) + dt.timedelta(days=GENERATED_DAYS - 1)


@pytest.fixture(params=["rdf12", "reification"])
def store(request: pytest.FixtureRequest, tgsparql_demo_file: Path) -> Store:
    """The demo sample in a store of each way of writing edge references. (Its extraction
    provenance refers to facts by triple terms, so only the rdf12 store records the documents
    of the facts selected: the tests of sources use `demo`.)"""
    opened = open_store()
    opened.dialect = request.param  # type: ignore[misc]
    load_files(opened, [tgsparql_demo_file])
    return opened


@pytest.fixture
def demo(tgsparql_demo_store: Store) -> Store:
    """The demo sample in an rdf12 store: each selection records its facts' documents."""
    return tgsparql_demo_store


def ask(store: Store, question: str = DEMO_QUESTION) -> str:
    """The session IRI of `question` answered offline and recorded."""
    return GraphRag(store, OfflineBackend()).ask(question)[1][0].explain_id


def delete_fact(store: Store, fact: ox.Triple) -> None:
    store.update(f"DELETE DATA {{ {fact.subject} {fact.predicate} {fact.object} }}")


def remove_document(store: Store, document: ox.NamedNode) -> None:
    store.update(f"DELETE WHERE {{ GRAPH <{vocab.GRAPH_SOURCE.value}> {{ {document} ?p ?o }} }}")


def selected_edges(store: Store, session: str) -> dict[ox.Triple, str]:
    explained = explain_session(store, COLLECTION, session)
    return {edge.edge: edge.edge_selection for edge in explained.selected}


def stale_sessions(store: Store, limit: int = 100) -> dict[str, tuple[int, int]]:
    """The saved query stale_sessions, as {session: (stale edges, stale sources)} in its order."""
    saved = saved_queries()["stale_sessions"]
    return {row["session"].value: (int(row["staleEdges"].value), int(row["staleSources"].value))
            for row in store.run(saved.template, **saved.bind({"limit": [str(limit)]})).rows}


def test_nothing_drifts_while_the_kg_and_its_sources_are_as_they_were(store: Store) -> None:
    ask(store)
    drift = find_drift(store, COLLECTION)
    assert drift == Drift(COLLECTION.name, [], [])
    assert not drift.drifted
    assert drift.summary() == \
        "no drift: every recorded explanation of 'explainability' still holds"
    assert stale_sessions(store) == {}


def test_deleting_the_fact_the_demo_answer_stands_on_lists_the_demo_session_naming_it(
    store: Store,
) -> None:
    session = ask(store)
    ask(store, "Who discovered radium?")
    edges = selected_edges(store, session)
    assert BORN_IN_WARSAW in edges
    delete_fact(store, BORN_IN_WARSAW)

    drift = find_drift(store, COLLECTION)
    [drifted] = drift.sessions
    assert drifted.session == session and drifted.question == DEMO_QUESTION
    [stale] = drifted.edges
    assert (stale.edge, stale.edge_selection) == (BORN_IN_WARSAW, edges[BORN_IN_WARSAW])
    assert stale.labels == ("Marie Curie", "born in", "Warsaw")
    assert drifted.sources == [] and drift.documents == []
    assert drift.drifted and drift.stale_edges == 1
    assert "[%d] Marie Curie — born in — Warsaw: no longer a KG fact" % stale.index \
        in drift.to_text()
    assert stale_sessions(store) == {session: (1, 0)}


def test_a_fact_selected_by_many_sessions_drifts_each_of_them_once(store: Store) -> None:
    sessions = {ask(store) for _ in range(3)}
    delete_fact(store, BORN_IN_WARSAW)
    drift = find_drift(store, COLLECTION)
    assert {s.session for s in drift.sessions} == sessions
    assert all(len(s.edges) == 1 for s in drift.sessions)
    assert [s.started for s in drift.sessions] == sorted(s.started for s in drift.sessions)


def test_a_removed_source_document_drifts_the_sessions_that_cite_it(demo: Store) -> None:
    session = ask(demo)
    remove_document(demo, MARIE_CURIE_DOC)
    drift = find_drift(demo, COLLECTION)
    [drifted] = drift.sessions
    assert drifted.session == session and drifted.edges == []
    cited = {edge for edge, _ in drifted_sources(drift)}
    assert cited and cited <= set(selected_edges(demo, session))
    assert {source.reason for source in drifted.sources} == {SourceDrift.REMOVED}
    [document] = drift.documents
    assert (document.document, document.reason) == (MARIE_CURIE_DOC.value, SourceDrift.REMOVED)
    assert (document.sessions, document.edge_selections) == (1, len(drifted.sources))
    assert stale_sessions(demo) == {session: (0, len(drifted.sources))}


def test_a_source_text_changed_in_the_librarian_drifts_the_sessions_that_cite_it(
    demo: Store,
) -> None:
    session = ask(demo)
    stored, another = (f"GRAPH <{vocab.GRAPH_LIBRARY.value}> {{ {MARIE_CURIE_DOC} "
                       f"<{vocab.TG}content> {text} }}" for text in ("?text", '"Another text."'))
    demo.update(f"DELETE {{ {stored} }} INSERT {{ {another} }} WHERE {{ {stored} }}")
    drift = find_drift(demo, COLLECTION)
    assert [s.session for s in drift.sessions] == [session]
    assert [(d.document, d.reason) for d in drift.documents] == \
        [(MARIE_CURIE_DOC.value, SourceDrift.TEXT_CHANGED)]


def test_a_source_re_ingested_after_a_session_drifts_it_and_not_the_sessions_after(
    demo: Store,
) -> None:
    before, after = ask(demo), ask(demo)
    reingested = explain_session(demo, COLLECTION, after).started  # the later one's start
    assert reingested is not None
    demo.update(f"""
        PREFIX prov: <http://www.w3.org/ns/prov#>
        DELETE {{ GRAPH <{vocab.GRAPH_SOURCE.value}> {{ ?activity prov:startedAtTime ?time }} }}
        INSERT {{ GRAPH <{vocab.GRAPH_SOURCE.value}> {{
            ?activity prov:startedAtTime "{reingested}"^^<{vocab.XSD}dateTime> }} }}
        WHERE {{ GRAPH <{vocab.GRAPH_SOURCE.value}> {{
            ?activity prov:used {MARIE_CURIE_DOC} ; prov:startedAtTime ?time }} }}""")
    drift = find_drift(demo, COLLECTION)
    assert [s.session for s in drift.sessions] == [before]
    [document] = drift.documents
    assert (document.reason, document.since, document.sessions) == \
        (SourceDrift.REINGESTED, reingested, 1)
    assert set(stale_sessions(demo)) == {before}


def test_the_session_page_and_explain_mark_the_edges_that_no_longer_hold(store: Store) -> None:
    session = ask(store)
    index = int(selected_edges(store, session)[BORN_IN_WARSAW].rsplit(":", 1)[1])
    assert "no longer" not in render_session(session_view(store, COLLECTION, session))
    delete_fact(store, BORN_IN_WARSAW)

    explained = explain_session(store, COLLECTION, session)
    assert {edge.edge: edge.holds for edge in explained.selected}[BORN_IN_WARSAW] is False
    assert [edge.edge for edge in explained.selected if edge.holds is False] == [BORN_IN_WARSAW]
    lines = [line for line in render_text(explained).splitlines() if "no longer" in line]
    assert len(lines) == 1 and "Marie Curie — born in — Warsaw" in lines[0]
    page = render_session(session_view(store, COLLECTION, session))
    assert f'<a href="#edge-{index}">[{index}]</a>' in page.split('id="drift"')[1].split("</p>")[0]
    assert page.count("no longer a fact of the knowledge graph") == 2  # the summary and the edge


def test_json_and_csv_name_every_finding(demo: Store) -> None:
    session = ask(demo)
    delete_fact(demo, BORN_IN_WARSAW)
    remove_document(demo, MARIE_CURIE_DOC)
    drift = find_drift(demo, COLLECTION)
    data = drift.to_json()
    [entry] = data["sessions"]
    assert entry["session"] == session and entry["stale_edges"] == 1
    assert entry["stale_sources"] == len(entry["sources"]) > 0
    assert entry["edges"][0]["edge"] == f"<<( {BORN_IN_WARSAW} )>>"
    assert data["documents"][0]["reason"] == "removed"
    rows = drift.to_csv().splitlines()
    assert rows[0] == "session,started,question,kind,edge_selection,subject,predicate,object," \
                      "document,reason"
    kinds = [row.split(",")[3] for row in rows[1:]]
    assert kinds.count("edge") == 1 and kinds.count("source") == entry["stale_sources"]


def drifted_sources(drift: Drift) -> list[tuple[ox.Triple | None, str]]:
    return [(source.edge, source.document) for s in drift.sessions for source in s.sources]


def test_stale_sessions_lists_the_drifted_among_the_newest_sessions_of_several_days() -> None:
    """Sessions over four days, drift in the first day and in the last: the saved query walks
    only the newest `limit` sessions (the newest days that hold them), newest first, and counts
    what `tgsparql drift` finds in each; with a `limit` of every session it lists all of them,
    and a rollup of the first days changes nothing."""
    store = EmbeddedStore()
    with tempfile.TemporaryDirectory() as directory:
        info = generate(Path(directory) / "records.trig", 60, 7, days=GENERATED_DAYS,
                        current=True)
        for file in info["files"]:
            store.oxigraph.load(path=file, format=ox.RdfFormat.TRIG)
    migrate(store, pending(store))
    make_realistic(store.oxigraph, LAST_GENERATED_DAY)
    started = {quad.subject.value: quad.object.value for quad in store.oxigraph.quads_for_pattern(
        None, ox.NamedNode(vocab.PROV + "startedAtTime"), None, COLLECTION.graph)}
    newest_first = sorted(started, key=lambda session: (started[session], session), reverse=True)
    answered = [session for session in newest_first if first_selected_edge(store, session)]
    for session in (answered[0], answered[-1]):
        delete_fact(store, first_selected_edge(store, session))

    drifted = {s.session: (len(s.edges), len(s.sources))
               for s in find_drift(store, COLLECTION).sessions}
    assert {answered[0], answered[-1]} <= set(drifted)
    assert {started[s][:10] for s in drifted} >= {"2024-01-01", LAST_GENERATED_DAY.isoformat()}
    everything = stale_sessions(store, limit=len(started))
    assert list(everything) == [s for s in newest_first if s in drifted]
    assert everything == drifted
    newest = stale_sessions(store, limit=12)
    assert list(newest) == [s for s in newest_first[:12] if s in drifted]
    assert 0 < len(newest) < len(drifted)
    assert all(newest[s] == drifted[s] for s in newest)

    roll_up(store, COLLECTION, at=dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc),
            through=LAST_GENERATED_DAY - dt.timedelta(days=1))
    assert stale_sessions(store, limit=12) == newest
    assert stale_sessions(store, limit=len(started)) == everything


def first_selected_edge(store: EmbeddedStore, session: str) -> ox.Triple | None:
    """The fact a generated session selected first, None when it failed before selecting."""
    selection = ox.NamedNode(session.replace("session:", "prov:edge:") + ":0")
    for quad in store.oxigraph.quads_for_pattern(selection, ox.NamedNode(vocab.TG + "edge"),
                                                 None, COLLECTION.graph):
        assert isinstance(quad.object, ox.Triple)
        return quad.object
    return None
