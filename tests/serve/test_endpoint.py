"""The read-only SPARQL 1.1 Protocol endpoint, with the clients people use as they come
(SPARQLWrapper, rdflib's SPARQLStore, Comunica when node and the package are there) and the
W3C SPARQL 1.1 Protocol's query cases, written from the specification."""

from __future__ import annotations

import csv
import http.client
import io
import json
import shutil
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyoxigraph as ox
import pytest
from click.testing import CliRunner
from rdflib import Graph
from rdflib.plugins.stores.sparqlstore import SPARQLStore
from SPARQLWrapper import JSON, JSONLD, TSV, TURTLE, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

from tgsparql.cli import main
from tgsparql.serve import ServerConfig, routes
from tgsparql.serve.routes import ROUTES
from tgsparql.serve.sparql import FORMAT_IRIS, SD

from .conftest import QUESTIONS, Response, Served, fetch, running, serve_process

COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
SESSIONS = ("PREFIX tg: <https://trustgraph.ai/ns/> SELECT ?s ?q WHERE { GRAPH "
            "<urn:graph:explainability> { ?s tg:query ?q } } ORDER BY ?q")
CONSTRUCT = ("PREFIX tg: <https://trustgraph.ai/ns/> CONSTRUCT { ?e tg:edge ?t } WHERE { GRAPH "
             "<urn:graph:explainability> { ?e tg:edge ?t } }")
EDGES_COUNTED = ("PREFIX tg: <https://trustgraph.ai/ns/> SELECT (COUNT(*) AS ?n) WHERE { GRAPH "
                 "<urn:graph:explainability> { ?e tg:edge ?t } }")
RECORD = "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <urn:graph:explainability> { ?s ?p ?o } }"
QUESTIONS_GRAPH = ("PREFIX tg: <https://trustgraph.ai/ns/> CONSTRUCT { ?s tg:query ?q } WHERE "
                   "{ GRAPH <urn:graph:explainability> { ?s tg:query ?q } }")
"""A graph of plain triples, which every RDF syntax can carry (CONSTRUCT's has triple terms)."""
UPDATE = "INSERT DATA { GRAPH <urn:graph:explainability> { <urn:x:s> <urn:x:p> <urn:x:o> } }"
COMUNICA_ACCEPT = ("application/n-quads,application/trig;q=0.95,application/ld+json;q=0.9,"
                   "application/n-triples;q=0.8,text/turtle;q=0.6,application/rdf+xml;q=0.5,"
                   "text/n3;q=0.35,application/xml;q=0.3,image/svg+xml;q=0.3,text/xml;q=0.3,"
                   "text/html;q=0.2,application/xhtml+xml;q=0.18")
"""What Comunica sends first, to learn what kind of source a URL is."""
COMUNICA = Path(__file__).parents[2] / ".cache/comunica/node_modules/.bin/comunica-sparql"


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
    ("application/xml", "application/sparql-results+xml"),  # what clients send for "XML"
    ("text/xml", "application/sparql-results+xml"),
    ("application/xml;q=0.9, */*;q=0.8", "application/sparql-results+xml"),
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
    ("application/rdf+xml", ox.RdfFormat.RDF_XML),
    ("application/xml", ox.RdfFormat.RDF_XML),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", ox.RdfFormat.TURTLE),
    ("", ox.RdfFormat.TURTLE),
])
def test_graph_results_in_every_format(served: Served, accept: str, fmt: ox.RdfFormat) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": CONSTRUCT}),
                       {"Accept": accept})
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith(fmt.media_type.split(";")[0])
    counted = served.get("/sparql?" + urllib.parse.urlencode({"query": EDGES_COUNTED}),
                         {"Accept": "text/csv"})
    edges = int(counted.text.splitlines()[1])  # the sessions' selected edges, however many
    assert edges > 1 and len(list(ox.parse(reply.body, format=fmt))) == edges


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


def test_union_default_graph_merges_every_graph(served: Served) -> None:
    """The Oxigraph server's extension, which a remote store sends to validate the union."""
    query = "SELECT (COUNT(*) AS ?n) WHERE { ?s a <http://www.w3.org/ns/prov#Activity> }"
    counts = [served.get("/sparql?" + urllib.parse.urlencode({"query": query, **extra}),
                         {"Accept": "text/csv"}).text.split()[1]
              for extra in ({}, {"union-default-graph": "true"})]
    assert counts == ["0", "7"]  # none in the KG alone


def test_union_default_graph_beside_default_graph_uri_is_refused(served: Served) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode(
        {"query": "ASK {}", "union-default-graph": "", "default-graph-uri": "urn:x:g"}))
    assert reply.status == 400 and "not both" in reply.text


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
    assert reply.status == 405 and reply.headers["Allow"] == "GET, HEAD, POST, OPTIONS"


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
    reply = strict.get("/sparql?" + urllib.parse.urlencode({"query": RECORD}),
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


# --- clients with their default settings ------------------------------------------------------

def test_sparqlwrapper_construct_without_a_return_format_gets_rdf_xml(served: Served) -> None:
    client = SPARQLWrapper(served.url + "/sparql")  # Accept: application/rdf+xml, format=xml
    client.setQuery(QUESTIONS_GRAPH)
    graph = client.query().convert()
    assert sorted(str(o) for o in graph.objects())[1:] == sorted(QUESTIONS)


def test_sparqlwrapper_json_ld_and_tsv(served: Served) -> None:
    client = SPARQLWrapper(served.url + "/sparql")  # format=json-ld&format=application/ld+json,…
    client.setQuery(QUESTIONS_GRAPH)
    client.setReturnFormat(JSONLD)
    assert len(client.query().convert()) == 3
    client.setQuery(SESSIONS)  # format=tsv&format=text/tab-separated-values
    client.setReturnFormat(TSV)
    lines = client.query().convert().decode("utf-8").splitlines()
    assert lines[0] == "?s\t?q" and len(lines) == 1 + 3


def test_rdflib_sparqlstore_with_its_defaults(served: Served) -> None:
    graph = Graph(store=SPARQLStore(served.url + "/sparql"))  # Accept: …results+xml, rdf+xml
    assert len(graph.query(QUESTIONS_GRAPH).graph) == 3
    assert sorted(str(row.q) for row in graph.query(SESSIONS))[1:] == sorted(QUESTIONS)


@pytest.mark.parametrize(("query", "formats", "media"), [
    (SESSIONS, ["tsv", "text/tab-separated-values"], "text/tab-separated-values"),
    (SESSIONS, ["application/sparql-results+json"], "application/sparql-results+json"),
    (SESSIONS, ["srx"], "application/sparql-results+xml"),
    (SESSIONS, ["html5", "csv"], "text/csv"),
    (QUESTIONS_GRAPH, ["xml"], "application/rdf+xml"),
    (QUESTIONS_GRAPH, ["rdf+xml", "application/rdf+xml"], "application/rdf+xml"),
    (QUESTIONS_GRAPH, ["json-ld", "application/ld+json,application/x-json+ld"],
     "application/ld+json"),
    (QUESTIONS_GRAPH, ["json"], "application/ld+json"),
    (QUESTIONS_GRAPH, ["n3"], "text/turtle"),
])
def test_format_takes_names_and_media_types_and_the_first_it_has_wins(
        served: Served, query: str, formats: list[str], media: str) -> None:
    params = [("query", query)] + [("format", value) for value in formats]
    reply = served.get("/sparql?" + urllib.parse.urlencode(params))
    assert reply.status == 200 and reply.headers["Content-Type"].startswith(media)


def test_a_graph_json_ld_cannot_carry_is_a_406_naming_the_others(served: Served) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": CONSTRUCT}),
                       {"Accept": "application/ld+json"})
    assert reply.status == 406 and "RDF 1.2" in reply.text and "turtle" in reply.text


def description(reply: Response, fmt: ox.RdfFormat) -> dict[str, set[str]]:
    """The service description's values by sd: property."""
    assert reply.status == 200 and reply.headers["Content-Type"].startswith(fmt.media_type)
    out: dict[str, set[str]] = {}
    for triple in ox.parse(reply.body, format=fmt):
        if triple.predicate.value.startswith(SD):
            out.setdefault(triple.predicate.value[len(SD):], set()).add(str(triple.object.value))
    return out


def test_a_request_without_a_query_for_rdf_gets_the_service_description(served: Served) -> None:
    found = description(served.get("/sparql", {"Accept": COMUNICA_ACCEPT}), ox.RdfFormat.N_QUADS)
    assert found["endpoint"] == {served.url + "/sparql"}
    assert found["supportedLanguage"] == {SD + "SPARQL11Query"}
    assert found["resultFormat"] == {"http://www.w3.org/ns/formats/" + name
                                     for name in FORMAT_IRIS.values()}
    assert "feature" not in found  # no union default graph; SERVICE is refused
    assert len(found["defaultDataset"]) == 1
    rdfxml = served.get("/sparql?format=rdf%2Bxml")
    assert description(rdfxml, ox.RdfFormat.RDF_XML)["endpoint"] == found["endpoint"]


def test_the_service_description_names_the_host_the_client_used(served: Served) -> None:
    port = served.url.rsplit(":", 1)[1]
    reply = fetch(served.url + "/sparql", headers={"Host": f"localhost:{port}"})
    assert description(reply, ox.RdfFormat.TURTLE)["endpoint"] == {
        f"http://localhost:{port}/sparql"}


def test_head_is_get_without_the_body(served: Served) -> None:
    for path in ("/sparql?" + urllib.parse.urlencode({"query": SESSIONS}), "/sparql", "/queries"):
        got = served.get(path)
        head = fetch(served.url + path, method="HEAD")
        assert head.status == got.status == 200 and head.body == b""
        assert head.headers["Content-Type"] == got.headers["Content-Type"]
        assert head.headers["Content-Length"] == str(len(got.body)), path


def test_options_lists_the_methods_and_answers_vary_on_accept(served: Served) -> None:
    reply = fetch(served.url + "/sparql", method="OPTIONS")
    assert reply.status == 204 and reply.headers["Allow"] == "GET, HEAD, POST, OPTIONS"
    assert "Access-Control-Allow-Origin" not in reply.headers
    assert fetch(served.url + "/nowhere", method="OPTIONS").status == 404
    reply = served.get("/sparql?query=ASK%7B%7D", {"Origin": "https://yasgui.example"})
    assert reply.headers["Vary"] == "Accept" and "Access-Control-Allow-Origin" not in reply.headers


def test_relative_iris_resolve_against_the_endpoint(served: Served) -> None:
    query = "SELECT ?x WHERE { BIND(<data/x> AS ?x) }"
    reply = served.get("/sparql?" + urllib.parse.urlencode({"query": query}),
                       {"Accept": "text/csv"})
    assert reply.text.splitlines()[1] == served.url + "/data/x"
    own = served.get("/sparql?" + urllib.parse.urlencode(
        {"query": "BASE <http://example.org/a/> " + query}), {"Accept": "text/csv"})
    assert own.text.splitlines()[1] == "http://example.org/a/data/x"


def test_a_malformed_iri_is_named_in_words_at_the_clients_line(served: Served) -> None:
    reply = served.get("/sparql?" + urllib.parse.urlencode(
        {"query": "SELECT * WHERE {\n  <http://example.org/a b> ?p ?o }"}))
    assert reply.status == 400
    assert reply.text.startswith("not a SPARQL query: error at 2:"), reply.text
    assert "expected a valid IRI" in reply.text and "parsing failed" not in reply.text


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


# --- the W3C SPARQL 1.1 Protocol, query operation ---------------------------------------------
# https://www.w3.org/TR/sparql11-protocol/#query-operation and the protocol test suite's query
# cases. The dataset cases that load remote graphs do not apply: nothing is fetched from outside.

def send(served: Served, method: str, path: str, body: bytes | None = None,
         headers: Mapping[str, str] | None = None) -> Response:
    """A request with exactly these headers (urllib would add a Content-Type)."""
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(served.url).netloc,
                                            timeout=30)
    try:
        connection.request(method, path, body=body, headers=dict(headers or {}))
        reply = connection.getresponse()
        return Response(reply.status, dict(reply.headers), reply.read())
    finally:
        connection.close()


FORM = "application/x-www-form-urlencoded"
DIRECT = "application/sparql-query"
ASK_FORM = urllib.parse.urlencode({"query": "ASK {}"}).encode()


@pytest.mark.parametrize(("method", "path", "body", "headers", "status", "media"), [
    ("GET", "/sparql?query=ASK%20%7B%7D", None, {}, 200, "application/sparql-results+json"),
    ("POST", "/sparql", ASK_FORM, {"Content-Type": FORM}, 200, "application/sparql-results"),
    ("POST", "/sparql", b"ASK {}", {"Content-Type": DIRECT}, 200, "application/sparql-results"),
    ("POST", "/sparql", b"ASK {}", {"Content-Type": DIRECT + "; charset=UTF-8"}, 200,
     "application/sparql-results"),
    ("GET", "/sparql?" + urllib.parse.urlencode({"query": SESSIONS}), None,
     {"Accept": "application/sparql-results+xml"}, 200, "application/sparql-results+xml"),
    ("GET", "/sparql?query=ASK%20%7B%7D", None, {"Accept": "application/sparql-results+json"},
     200, "application/sparql-results+json"),
    ("GET", "/sparql?" + urllib.parse.urlencode({"query": "DESCRIBE <urn:x>"}), None,
     {"Accept": "application/rdf+xml, text/turtle"}, 200, "application/rdf+xml"),
    ("GET", "/sparql?" + urllib.parse.urlencode({"query": QUESTIONS_GRAPH}), None,
     {"Accept": "text/turtle, application/rdf+xml"}, 200, "text/turtle"),
    ("GET", "/sparql?" + urllib.parse.urlencode({"query": "ASK {}", "default-graph-uri":
     "urn:graph:explainability", "named-graph-uri": "urn:graph:kg"}), None, {}, 200,
     "application/sparql-results"),
    ("PUT", "/sparql?query=ASK%20%7B%7D", None, {}, 405, "text/plain"),
    ("GET", "/sparql?query=ASK%20%7B%7D&query=ASK%20%7B%7D", None, {}, 400, "text/plain"),
    ("POST", "/sparql", b"ASK {}", {"Content-Type": "text/plain"}, 415, "text/plain"),
    ("POST", "/sparql", ASK_FORM, {}, 415, "text/plain"),
    ("POST", "/sparql", b"ASK {}", {}, 415, "text/plain"),
    ("POST", "/sparql", "ASK {}".encode("utf-16"), {"Content-Type": DIRECT + "; charset=UTF-16"},
     415, "text/plain"),
    ("POST", "/sparql", ASK_FORM, {"Content-Type": FORM + "; charset=ISO-8859-1"}, 415,
     "text/plain"),
    ("GET", "/sparql?query=ASK%20%7B", None, {}, 400, "text/plain"),
], ids=["query-get", "query-post-form", "query-post-direct", "query-post-direct-utf8",
        "content-type-select", "content-type-ask", "content-type-describe",
        "content-type-construct", "multiple-dataset", "bad-query-method", "bad-multiple-queries",
        "bad-query-wrong-media-type", "bad-query-missing-form-type",
        "bad-query-missing-direct-type", "bad-query-non-utf8", "bad-form-non-utf8",
        "bad-query-syntax"])
def test_w3c_protocol_query_cases(served: Served, method: str, path: str, body: bytes | None,
                                  headers: dict[str, str], status: int, media: str) -> None:
    reply = send(served, method, path, body, headers)
    assert reply.status == status, reply.body
    assert reply.headers["Content-Type"].startswith(media)
    if status == 415 and "charset" in headers.get("Content-Type", ""):
        assert b"UTF-8" in reply.body


# --- CORS ------------------------------------------------------------------------------------

YASGUI = "https://yasgui.example"


@pytest.fixture(scope="module")
def cors(built: tuple[Path, list[str], str]) -> Iterator[Served]:
    """The store behind a token, readable by pages from YASGUI's origin."""
    path, sessions, failed = built
    with running(ServerConfig(store=path, port=0, token="s3cret", cors=(YASGUI,),
                              workers=1)) as server:
        yield Served(server.url, path, sessions, failed)


def preflight(served: Served, origin: str, host: str | None = None) -> Response:
    headers = {"Origin": origin, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization, content-type"}
    return send(served, "OPTIONS", "/sparql", headers={**headers, **({"Host": host} if host
                                                                      else {})})


def test_a_preflight_needs_no_token_and_allows_only_the_configured_origin(cors: Served) -> None:
    allowed = preflight(cors, YASGUI)
    assert allowed.status == 204 and allowed.headers["Access-Control-Allow-Origin"] == YASGUI
    assert "POST" in allowed.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in allowed.headers["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in allowed.headers
    other = preflight(cors, "https://attacker.example")
    assert other.status == 204 and "Access-Control-Allow-Origin" not in other.headers
    assert preflight(cors, YASGUI, host="attacker.example").status == 400  # DNS rebinding


def test_answers_name_the_configured_origin_only(cors: Served) -> None:
    auth = {"Authorization": "Bearer s3cret"}
    reply = cors.get("/sparql?query=ASK%7B%7D", {**auth, "Origin": YASGUI})
    assert reply.status == 200 and reply.headers["Access-Control-Allow-Origin"] == YASGUI
    assert reply.headers["Vary"] == "Accept, Origin"
    refused = cors.get("/sparql?query=ASK%7B%7D", {"Origin": YASGUI})
    assert refused.status == 401 and refused.headers["Access-Control-Allow-Origin"] == YASGUI
    other = cors.get("/sparql?query=ASK%7B%7D", {**auth, "Origin": "https://attacker.example"})
    assert other.status == 200 and "Access-Control-Allow-Origin" not in other.headers


def test_cors_for_any_origin_is_never_with_credentials(built: tuple[Path, list[str], str]
                                                      ) -> None:
    path, sessions, failed = built
    with running(ServerConfig(store=path, port=0, cors=("*",), workers=1)) as server:
        served = Served(server.url, path, sessions, failed)
        reply = served.get("/sparql?query=ASK%7B%7D", {"Origin": "https://anywhere.example"})
        assert reply.headers["Access-Control-Allow-Origin"] == "*"
        assert "Access-Control-Allow-Credentials" not in reply.headers
        assert preflight(served, "https://anywhere.example").headers[
            "Access-Control-Allow-Origin"] == "*"


def test_serve_takes_cors_origins_as_browsers_send_them(built: tuple[Path, list[str], str]
                                                       ) -> None:
    with serve_process(built, "--cors", "HTTPS://YASGUI.example/", "--cors",
                       "http://localhost:3000", "--csv-raw") as served:
        assert served.started["cors"] == [YASGUI, "http://localhost:3000"]
        assert served.started["csv_raw"] is True
    refused = CliRunner().invoke(main, ["serve", "--store", str(built[0]), "--cors", "yasgui"])
    assert refused.exit_code == 2 and "is not an origin" in refused.output


@pytest.mark.parametrize("origin", ["yasgui.example", "https://yasgui.example/path",
                                    "ftp://yasgui.example", "https://user@yasgui.example"])
def test_a_cors_value_that_is_no_origin_is_refused(built: tuple[Path, list[str], str],
                                                   origin: str) -> None:
    with pytest.raises(Exception, match="is not an origin"):
        ServerConfig(store=built[0], cors=(origin,))


# --- Comunica -------------------------------------------------------------------------------

def comunica(*args: str) -> subprocess.CompletedProcess[str]:
    """comunica-sparql ARGS, from the copy .ci/run installs; skipped where there is none."""
    if shutil.which("node") is None:
        pytest.skip("Comunica needs node, which is not installed")
    if not COMUNICA.exists():
        pytest.skip("Comunica is not installed in .cache/comunica (.ci/run installs it: npm "
                    "install --prefix .cache/comunica @comunica/query-sparql@4)")
    return subprocess.run([str(COMUNICA), *args], capture_output=True, text=True, timeout=120,
                          check=False)


class PathProxy:
    """A reverse proxy on loopback that serves the endpoint at /kg/query and passes every other
    path through unchanged, with the client's Host, as a proxy in front of a server does."""

    def __init__(self, upstream: str) -> None:
        netloc = urllib.parse.urlsplit(upstream).netloc

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.replace("/kg/query", "/sparql", 1)
                connection = http.client.HTTPConnection(netloc, timeout=30)
                connection.request("GET", path, headers=dict(self.headers.items()))
                reply = connection.getresponse()
                body = reply.read()
                self.send_response(reply.status)
                for name in ("Content-Type", "Vary"):
                    self.send_header(name, reply.getheader(name) or "")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                connection.close()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_comunica_queries_the_endpoint(served: Served) -> None:
    done = comunica(served.url + "/sparql", SESSIONS)
    assert done.returncode == 0, done.stderr
    assert sorted(row["q"].strip('"') for row in json.loads(done.stdout))[1:] == \
        sorted(QUESTIONS)


def test_comunica_behind_a_proxy_path_finds_the_endpoint_by_its_description(
        served: Served) -> None:
    proxy = PathProxy(served.url)
    try:
        done = comunica(proxy.url + "/kg/query", QUESTIONS_GRAPH)
    finally:
        proxy.stop()
    assert done.returncode == 0, done.stderr
    assert sum(1 for line in done.stdout.splitlines() if "trustgraph.ai/ns/query" in line) == 3
