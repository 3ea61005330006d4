"""The read-only SPARQL 1.1 Protocol endpoint, with SPARQLWrapper and urllib as clients."""

from __future__ import annotations

import csv
import io
import json
import time
import urllib.parse

import pyoxigraph as ox
import pytest
from SPARQLWrapper import JSON, TURTLE, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

from tgsparql.serve import routes
from tgsparql.serve.routes import ROUTES

from .conftest import QUESTIONS, Served, fetch

COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
SESSIONS = ("PREFIX tg: <https://trustgraph.ai/ns/> SELECT ?s ?q WHERE { GRAPH "
            "<urn:graph:explainability> { ?s tg:query ?q } } ORDER BY ?q")
CONSTRUCT = ("PREFIX tg: <https://trustgraph.ai/ns/> CONSTRUCT { ?e tg:edge ?t } WHERE { GRAPH "
             "<urn:graph:explainability> { ?e tg:edge ?t } }")
UPDATE = "INSERT DATA { GRAPH <urn:graph:explainability> { <urn:x:s> <urn:x:p> <urn:x:o> } }"


def quad_count(served: Served) -> int:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": COUNT}),
                       {"Accept": "text/csv"})
    return int(reply.text.split()[1])


def test_sparqlwrapper_select_ask_and_construct(served: Served) -> None:
    client = SPARQLWrapper(served.url + "/sparql")
    client.setQuery(SESSIONS)
    client.setReturnFormat(JSON)
    rows = client.query().convert()["results"]["bindings"]
    assert sorted(row["q"]["value"] for row in rows)[1:] == sorted(QUESTIONS)
    client.setQuery("ASK { GRAPH <urn:graph:explainability> { ?s a ?o } }")
    assert client.query().convert()["boolean"] is True
    client.setQuery(CONSTRUCT)
    client.setReturnFormat(TURTLE)
    triples = list(ox.parse(client.query().convert(), format=ox.RdfFormat.TURTLE))
    assert triples and all(isinstance(t.object, ox.Triple) for t in triples)


def test_sparqlwrapper_sees_an_update_refused(served: Served) -> None:
    client = SPARQLWrapper(served.url + "/sparql")
    client.setQuery(UPDATE)
    client.setMethod("POST")
    with pytest.raises(QueryBadFormed, match="read-only"):
        client.query()


@pytest.mark.parametrize(("accept", "media"), [
    ("application/sparql-results+json", "application/sparql-results+json"),
    ("application/json", "application/sparql-results+json"),
    ("application/sparql-results+xml", "application/sparql-results+xml"),
    ("text/csv", "text/csv"),
    ("text/tab-separated-values", "text/tab-separated-values"),
    ("", "application/sparql-results+json"),
    ("text/html,application/xhtml+xml;q=0.9,*/*;q=0.8", "application/sparql-results+json"),
    ("text/csv;q=0.5, application/sparql-results+xml", "application/sparql-results+xml"),
])
def test_select_results_in_every_format(served: Served, accept: str, media: str) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": SESSIONS}),
                       {"Accept": accept})
    assert reply.status == 200 and reply.headers["Content-Type"].startswith(media)
    if media == "text/csv":  # lossy by design: pyoxigraph does not read it back
        assert len(list(csv.reader(io.StringIO(reply.text)))) == 1 + 3
        return
    fmt = ox.QueryResultsFormat.from_media_type(media)
    assert len(list(ox.parse_query_results(reply.body, format=fmt))) == 3


@pytest.mark.parametrize(("accept", "fmt"), [
    ("text/turtle", ox.RdfFormat.TURTLE),
    ("application/n-triples", ox.RdfFormat.N_TRIPLES),
    ("application/n-quads", ox.RdfFormat.N_QUADS),
    ("application/trig", ox.RdfFormat.TRIG),
    ("", ox.RdfFormat.TURTLE),
])
def test_graph_results_in_every_format(served: Served, accept: str, fmt: ox.RdfFormat) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": CONSTRUCT}),
                       {"Accept": accept})
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith(fmt.media_type.split(";")[0])
    assert len(list(ox.parse(reply.body, format=fmt))) == 11  # 6 + 5 selected edges


def test_format_parameter_and_ask_in_csv(served: Served) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode(
        {"query": CONSTRUCT, "format": "ntriples"}))
    assert reply.headers["Content-Type"].startswith("application/n-triples")
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": "ASK {}"}),
                       {"Accept": "text/csv"})
    assert reply.status == 200 and reply.text.strip() == "true"


def test_unavailable_format_is_406(served: Served) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": SESSIONS}),
                       {"Accept": "text/turtle"})
    assert reply.status == 406 and "application/sparql-results+json" in reply.text


def test_post_form_and_direct_post(served: Served) -> None:
    form = served.post("/sparql", urllib.parse.urlencode({"query": COUNT}).encode(),
                       "application/x-www-form-urlencoded", {"Accept": "text/csv"})
    direct = served.post("/sparql", COUNT.encode(), "application/sparql-query",
                         {"Accept": "text/csv"})
    assert form.status == direct.status == 200 and form.body == direct.body


def test_default_graph_uri_sets_the_dataset(served: Served) -> None:
    query = "SELECT (COUNT(*) AS ?n) WHERE { ?s a <http://www.w3.org/ns/prov#Activity> }"
    reply = served.get("/sparql?" + urllib.parse.urlencode(
        {"query": query, "default-graph-uri": "urn:graph:explainability"}),
        {"Accept": "text/csv"})
    assert reply.text.split()[1] == "3"


@pytest.mark.parametrize("send", [
    lambda s: s.post("/sparql", urllib.parse.urlencode({"update": UPDATE}).encode(),
                     "application/x-www-form-urlencoded"),
    lambda s: s.post("/sparql", UPDATE.encode(), "application/sparql-update"),
    lambda s: s.get("/sparql?" + urllib.parse.urlencode({"query": UPDATE})),
    lambda s: s.get("/sparql?" + urllib.parse.urlencode({"update": UPDATE})),
    lambda s: s.post("/sparql", urllib.parse.urlencode({"query": UPDATE}).encode(),
                     "application/x-www-form-urlencoded"),
    lambda s: s.post("/sparql", UPDATE.encode(), "application/sparql-query"),
    lambda s: s.post("/sparql", b"# comment\nPREFIX x: <urn:x:>\nDELETE WHERE { ?s ?p ?o }",
                     "application/sparql-query"),
    lambda s: s.get("/sparql?" + urllib.parse.urlencode(
        {"query": "SELECT * {} ; DROP ALL"})),
    lambda s: s.get("/sparql?" + urllib.parse.urlencode({"query": "LOAD <http://example.org/x>"})),
], ids=["form-update", "sparql-update", "get-query-insert", "get-update", "form-query-insert",
        "direct-insert", "direct-delete-after-prologue", "select-then-drop", "load"])
def test_every_update_form_is_refused_and_changes_nothing(served: Served, send) -> None:
    before = quad_count(served)
    reply = send(served)
    assert reply.status == 400
    assert "read-only" in reply.text or "not a SPARQL query" in reply.text
    assert quad_count(served) == before


def test_graph_store_methods_are_405(served: Served) -> None:
    reply = fetch(served.url + "/sparql", b"<urn:a> <urn:b> <urn:c> .",
                  {"Content-Type": "application/n-triples"}, method="PUT")
    assert reply.status == 405 and reply.headers["Allow"] == "GET, POST"


def test_a_path_without_a_route_is_404_naming_every_route(served: Served) -> None:
    reply = served.get("/nothing")
    assert reply.status == 404
    assert reply.text.startswith("nothing at /nothing; there is /sparql, /, /queries")
    assert all(route.path in reply.text for route in ROUTES)
    assert all(route.path in routes.__doc__ for route in ROUTES)  # type: ignore[operator]


def test_a_method_a_route_does_not_answer_is_405(served: Served) -> None:
    reply = served.post("/queries", b"x=1", "application/x-www-form-urlencoded")
    assert reply.status == 405 and reply.text == "/queries answers GET only\n"


def test_malformed_query_is_400_with_the_parser_message(served: Served) -> None:
    reply = served.get("/sparql?query=SELEKT")
    assert reply.status == 400 and reply.text.startswith("not a SPARQL query: error at 1:7: expected one of")


def test_missing_and_wrong_token_are_401(strict: Served) -> None:
    query = "/sparql?" + urllib.parse.urlencode({"query": "ASK {}"})
    missing = strict.get(query)
    assert missing.status == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert strict.get(query, {"Authorization": "Bearer nope"}).status == 401
    assert strict.get("/sessions", {"Authorization": "Basic czNjcmV0"}).status == 401
    assert strict.get(query, {"Authorization": "Bearer s3cret"}).status == 200


def test_oversized_requests_are_413(strict: Served) -> None:
    auth = {"Authorization": "Bearer s3cret"}
    big = "SELECT * WHERE { ?s ?p ?o } # " + "x" * 5000
    assert strict.post("/sparql", big.encode(), "application/sparql-query", auth).status == 413
    assert strict.get("/sparql?" + urllib.parse.urlencode({"query": big}), auth).status == 413


def test_result_cap_is_a_clear_503(strict: Served) -> None:
    reply = strict.get("/sparql?" + urllib.parse.urlencode({"query": CONSTRUCT}),
                       {"Authorization": "Bearer s3cret"})
    assert reply.status == 503 and "more than 5 triples" in reply.text


def test_slow_query_hits_the_timeout_and_the_server_recovers(strict: Served) -> None:
    auth = {"Authorization": "Bearer s3cret", "Accept": "text/csv"}
    slow = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    started = time.monotonic()
    reply = strict.get("/sparql?" + urllib.parse.urlencode({"query": slow}), auth)
    assert reply.status == 503 and "1 s timeout" in reply.text
    assert time.monotonic() - started < 5
    assert strict.recovered(auth).text.strip() == "true"


def test_csv_results_read_back_with_the_csv_module(served: Served) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": SESSIONS}),
                       {"Accept": "text/csv"})
    rows = list(csv.DictReader(io.StringIO(reply.text)))
    assert [row["s"].startswith("urn:trustgraph:session:") for row in rows] == [True] * 3
    assert json.loads(served.get("/sparql?" + urllib.parse.urlencode(
        {"query": SESSIONS})).text)["head"]["vars"] == ["s", "q"]


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(served: Served) -> None:
    values = ['"=cmd|\' /C calc\'!A0"', '"+1+1"', '"-2+3+cmd"', '"@SUM(A1)"', '"\\tx"',
              '"a=b"', "-3", '"-3"', '"+1.5e3"', "2"]
    query = f"SELECT ?c WHERE {{ VALUES ?c {{ {' '.join(values)} }} }}"
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": query}),
                       {"Accept": "text/csv"})
    cells = [row[0] for row in csv.reader(io.StringIO(reply.text))][1:]
    assert cells == ["'=cmd|' /C calc'!A0", "'+1+1", "'-2+3+cmd", "'@SUM(A1)", "'\tx", "a=b",
                     "-3", "-3", "+1.5e3", "2"]
    tsv = served.get("/sparql?" + urllib.parse.urlencode({"query": query}),
                     {"Accept": "text/tab-separated-values"})
    assert tsv.text.splitlines()[1] == '"=cmd|\' /C calc\'!A0"'  # TSV is term syntax, as is
