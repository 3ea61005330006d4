"""`tgsparql serve --endpoint URL`: the same endpoint, saved queries and pages over a remote store
(Oxigraph server 0.5, `rdf12`, holding the quads of the served demo store), with the same answers,
caps, timeout and refusal of updates; failures of the endpoint are 502 with its reason.

A fault-injecting proxy sits between the server and Oxigraph, so the tests see what is sent."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from tests.remote.faulty_proxy import Fault, FaultyProxy
from tests.servers import Server, free_port
from tgsparql.cli import main
from tgsparql.serve import ServerConfig, TgsparqlServer
from tgsparql.stores.endpoint import Endpoint
from tgsparql.stores.store import StoreError

from .conftest import Served, fetch, running, serve_process

TG = "PREFIX tg: <https://trustgraph.ai/ns/>\n"
EDGES = TG + ("SELECT ?e ?t WHERE { GRAPH <urn:graph:explainability> { ?e tg:edge ?t } } "
              "ORDER BY ?e")
SESSIONS = TG + ("SELECT ?s ?q WHERE { GRAPH <urn:graph:explainability> { ?s tg:query ?q } } "
                 "ORDER BY ?q")
PER_GRAPH = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY ?g"
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
CONSTRUCT = TG + ("CONSTRUCT { ?e tg:edge ?t } WHERE { GRAPH <urn:graph:explainability> "
                  "{ ?e tg:edge ?t } }")
RECORD = "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <urn:graph:explainability> { ?s ?p ?o } }"
RECORD_ROWS = "SELECT * WHERE { GRAPH <urn:graph:explainability> { ?s ?p ?o } }"
UPDATE = "INSERT DATA { GRAPH <urn:graph:explainability> { <urn:x:s> <urn:x:p> <urn:x:o> } }"
UPSTREAM_TOKEN = "upstream-secret"
SERVE_TOKEN = "s3cret"


def sparql(query: str, **params: str) -> str:
    return "/sparql?" + urllib.parse.urlencode({"query": query, **params})


@pytest.fixture(scope="module")
def proxy(oxigraph: Server, built: tuple[Path, list[str], str]) -> Iterator[FaultyProxy]:
    """Oxigraph holding every quad of the served store, behind the proxy."""
    path, _, _ = built
    quads = ox.serialize(ox.Store.read_only(str(path)).quads_for_pattern(None, None, None, None),
                         format=ox.RdfFormat.N_QUADS)
    oxigraph.clear()
    oxigraph.store().bulk_load(io.BytesIO(quads), ox.RdfFormat.N_QUADS)
    front = FaultyProxy((oxigraph.host, oxigraph.port))
    try:
        yield front
    finally:
        front.stop()


@pytest.fixture
def clean(proxy: FaultyProxy) -> Iterator[FaultyProxy]:
    """The proxy with no fault and nothing seen yet."""
    proxy.inject(None)
    proxy.seen.clear()
    yield proxy
    proxy.inject(None)


def config(proxy: FaultyProxy, **options: Any) -> ServerConfig:
    return ServerConfig(
        endpoint=Endpoint(proxy.url + "/query", token=UPSTREAM_TOKEN, retries=1, backoff=0.01),
        port=0, **options,
    )


@pytest.fixture(scope="module")
def remote(proxy: FaultyProxy, built: tuple[Path, list[str], str]) -> Iterator[Served]:
    path, sessions, failed = built
    with running(config(proxy, timeout=20, max_results=10_000)) as server:
        yield Served(server.url, path, sessions, failed)


@pytest.fixture(scope="module")
def strict_remote(proxy: FaultyProxy, built: tuple[Path, list[str], str]) -> Iterator[Served]:
    """Behind a token of its own, with a 1 s timeout and 5 results at most."""
    path, sessions, failed = built
    with running(config(proxy, timeout=1.0, max_results=5, token=SERVE_TOKEN,
                        workers=1)) as server:
        yield Served(server.url, path, sessions, failed)


# --- the same answers as over the on-disk store ------------------------------------------------


@pytest.mark.parametrize(("query", "params", "accept"), [
    (EDGES, {}, "application/sparql-results+json"),
    (EDGES, {}, "application/sparql-results+xml"),
    (EDGES, {}, "text/csv"),
    (EDGES, {}, "text/tab-separated-values"),
    (SESSIONS, {}, ""),
    (PER_GRAPH, {}, "text/csv"),
    (COUNT, {"default-graph-uri": "urn:graph:explainability"}, "text/csv"),
    (PER_GRAPH, {"named-graph-uri": "urn:graph:library"}, "text/csv"),
    (COUNT, {"union-default-graph": "true"}, "text/csv"),
    ("ASK { GRAPH <urn:graph:explainability> { ?s a ?o } }", {}, "application/sparql-results+xml"),
    ("ASK { <urn:x:nothing> ?p ?o }", {}, "application/sparql-results+json"),
], ids=["select-json", "select-xml", "select-csv", "select-tsv", "select-default", "per-graph",
        "default-graph-uri", "named-graph-uri", "union-default-graph", "ask-true", "ask-false"])
def test_results_are_those_of_the_store_itself(
    remote: Served, served: Served, query: str, params: dict[str, str], accept: str
) -> None:
    theirs = served.get(sparql(query, **params), {"Accept": accept})
    ours = remote.get(sparql(query, **params), {"Accept": accept})
    assert ours.status == theirs.status == 200, ours.text
    assert ours.headers["Content-Type"] == theirs.headers["Content-Type"]
    assert ours.body == theirs.body


def test_triple_terms_survive_the_round_trip(remote: Served, served: Served) -> None:
    edges, embedded = (
        [row["t"] for row in ox.parse_query_results(s.get(sparql(EDGES)).body,
                                                    ox.QueryResultsFormat.JSON)]
        for s in (remote, served))
    assert len(edges) > 1 and all(isinstance(edge, ox.Triple) for edge in edges)
    assert edges == embedded


@pytest.mark.parametrize("fmt", [ox.RdfFormat.TURTLE, ox.RdfFormat.N_TRIPLES, ox.RdfFormat.N_QUADS])
def test_graph_results_are_those_of_the_store_itself(
    remote: Served, served: Served, fmt: ox.RdfFormat
) -> None:
    accept = {"Accept": fmt.media_type}
    theirs, ours = served.get(sparql(CONSTRUCT), accept), remote.get(sparql(CONSTRUCT), accept)
    assert ours.status == 200 and ours.headers["Content-Type"] == theirs.headers["Content-Type"]
    assert set(ox.parse(ours.body, format=fmt)) == set(ox.parse(theirs.body, format=fmt))
    assert len(set(ox.parse(ours.body, format=fmt))) > 1


@pytest.mark.parametrize("path", [
    "/queries/edges_per_session.csv", "/queries/sessions_per_day.json",
    "/queries/failed_sessions.tsv", "/queries/most_cited_documents.csv?limit=2",
    "/queries/documents_never_cited.csv",
])
def test_saved_queries_are_those_of_the_store_itself(
    remote: Served, served: Served, path: str
) -> None:
    ours, theirs = remote.get(path), served.get(path)
    assert ours.status == theirs.status == 200, ours.text
    assert ours.body == theirs.body


def test_trace_pages_are_those_of_the_store_itself(remote: Served, served: Served) -> None:
    uuid = remote.sessions[0].rsplit(":", 1)[1]
    for path in ("/sessions", "/sessions?q=born", f"/sessions/{uuid}"):
        ours, theirs = remote.get(path), served.get(path)
        assert ours.status == theirs.status == 200 and ours.body == theirs.body, path
    assert remote.get("/sessions/00000000-0000-4000-8000-000000000000").status == 404


def test_queries_go_to_the_endpoint_with_its_token(remote: Served, clean: FaultyProxy) -> None:
    assert remote.get(sparql(SESSIONS)).status == 200
    [seen] = clean.seen
    assert seen.path == "/query" and seen.headers["Authorization"] == f"Bearer {UPSTREAM_TOKEN}"
    assert "tg:query" in urllib.parse.unquote_plus(seen.body.decode())


# --- read-only, caps, timeout, failures ---------------------------------------------------------


@pytest.mark.parametrize("send", [
    lambda s: s.post("/sparql", urllib.parse.urlencode({"update": UPDATE}).encode(),
                     "application/x-www-form-urlencoded"),
    lambda s: s.post("/sparql", UPDATE.encode(), "application/sparql-update"),
    lambda s: s.get(sparql(UPDATE)),
    lambda s: s.post("/sparql", UPDATE.encode(), "application/sparql-query"),
    lambda s: s.get(sparql("SELECT * {} ; DROP ALL")),
], ids=["form-update", "sparql-update", "get-query-insert", "direct-insert", "select-then-drop"])
def test_updates_are_refused_before_anything_reaches_the_endpoint(
    remote: Served, clean: FaultyProxy, send
) -> None:
    reply = send(remote)
    assert reply.status == 400
    assert "read-only" in reply.text or "not a SPARQL query" in reply.text
    assert clean.seen == []


def test_the_serve_token_guards_the_server_and_is_not_forwarded(
    strict_remote: Served, clean: FaultyProxy
) -> None:
    assert strict_remote.get(sparql("ASK {}")).status == 401
    assert clean.seen == []
    reply = strict_remote.get(sparql("ASK {}"), {"Authorization": f"Bearer {SERVE_TOKEN}"})
    assert reply.status == 200
    assert [s.headers["Authorization"] for s in clean.seen] == [f"Bearer {UPSTREAM_TOKEN}"]


def test_the_result_cap_applies(strict_remote: Served, clean: FaultyProxy) -> None:
    auth = {"Authorization": f"Bearer {SERVE_TOKEN}"}
    reply = strict_remote.get(sparql(RECORD), auth)
    assert reply.status == 503 and "more than 5 triples" in reply.text
    reply = strict_remote.get(sparql(RECORD_ROWS), auth)
    assert reply.status == 503 and "more than 5 results" in reply.text


def test_a_slow_endpoint_hits_the_timeout_and_the_server_recovers(
    strict_remote: Served, clean: FaultyProxy
) -> None:
    auth = {"Authorization": f"Bearer {SERVE_TOKEN}", "Accept": "text/csv"}
    clean.inject(Fault("delay", delay=60.0, times=1))  # far past the timeout, however loaded
    reply = strict_remote.get(sparql(COUNT), auth)
    assert reply.status == 503 and "1 s timeout" in reply.text
    # a fresh worker takes the killed one's place
    assert strict_remote.recovered(auth).text.strip() == "true"


def test_pages_and_saved_queries_answer_while_slow_queries_fill_every_sparql_worker(
    built: tuple[Path, list[str], str], clean: FaultyProxy
) -> None:
    """The starvation attack: slow /sparql queries (here held by the endpoint until the test
    lets them go, so the test knows they fill every worker) must not stop the pages."""
    clean.inject(Fault("hold", marker="# slow"))
    slow = sparql(SESSIONS + "\n# slow")
    with serve_process(built, "--workers", "2", "--timeout", "120",
                       endpoint=clean.url + "/query") as served, ThreadPoolExecutor(3) as pool:
        held = [pool.submit(served.get, slow) for _ in range(3)]
        for _ in range(2):  # both /sparql workers are waiting on the endpoint; a third query waits
            assert clean.held.acquire(timeout=60)
        uuid = served.sessions[0].rsplit(":", 1)[1]
        for path in ("/sessions", f"/sessions/{uuid}", "/queries/edges_per_session.csv",
                     "/queries/failed_sessions.json", "/queries"):
            reply = served.get(path)
            assert reply.status == 200, (path, reply.text)
        assert not any(future.done() for future in held)
        clean.release()
        assert [future.result().status for future in held] == [200] * 3
    assert clean.count("/query") >= 3 + 4


@pytest.mark.parametrize(("fault", "reason"), [
    (Fault("status", status=500, body=b"the disk is full\n"),
     "HTTP 500 Internal Server Error: the disk is full (after 2 attempts)"),
    (Fault("status", status=401), "read refused: HTTP 401 Unauthorized"),
    (Fault("malformed", body=b'{"head": {"vars": ["s"]}, "results": {"bindings": [{"s": '),
     "malformed SPARQL JSON results: "),
])
def test_a_failing_endpoint_is_a_502_naming_it_and_what_failed(
    remote: Served, clean: FaultyProxy, fault: Fault, reason: str
) -> None:
    clean.inject(fault)
    for path in (sparql(SESSIONS), "/queries/edges_per_session.csv"):
        reply = remote.get(path)
        [line] = reply.text.splitlines()
        assert reply.status == 502, reply.text
        assert line.startswith(f"SPARQL endpoint {clean.url}/query: {reason}"), line
    clean.inject(None)
    assert remote.get(sparql(SESSIONS)).status == 200


def test_an_unreachable_endpoint_fails_at_startup() -> None:
    url = f"http://127.0.0.1:{free_port()}/query"
    with pytest.raises(StoreError, match=f"SPARQL endpoint {url}: unreachable"):
        TgsparqlServer(ServerConfig(endpoint=Endpoint(url, retries=0), port=0))


# --- the command line ---------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    ([], "give --store PATH or --endpoint URL to serve"),
    (["--store", "{store}", "--endpoint", "http://127.0.0.1:1/query"],
     "--store and --endpoint are mutually exclusive"),
    (["--store", "{store}", "--token", "t"], "--token needs --endpoint URL"),
])
def test_serve_needs_exactly_one_store(built: tuple[Path, list[str], str], args: list[str],
                                       message: str) -> None:
    args = [arg.replace("{store}", str(built[0])) for arg in args]
    result = CliRunner().invoke(main, ["serve", *args],
                                env={"TGSPARQL_STORE": None, "TGSPARQL_ENDPOINT": None})
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_serve_with_an_unreachable_endpoint_exits_1_with_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}/query"
    result = CliRunner().invoke(main, ["serve", "--endpoint", url, "--port", "0"],
                                env={"TGSPARQL_STORE": None})
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: SPARQL endpoint {url}: unreachable"), line


def test_the_command_serves_an_endpoint_behind_its_own_token(clean: FaultyProxy) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tgsparql.cli", "serve", "--endpoint", clean.url + "/query",
         "--token", UPSTREAM_TOKEN, "--port", "0", "--workers", "1"],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("TGSPARQL_")},
             "TGSPARQL_SERVE_TOKEN": SERVE_TOKEN},
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert process.stderr is not None
        started = json.loads(process.stderr.readline())
        assert started["endpoint"] == clean.url + "/query" and started["token"] is True
        assert started["dialect"] == "rdf12" and "store" not in started
        url = started["url"] + sparql("ASK {}")
        assert fetch(url).status == 401
        reply = fetch(url, headers={"Authorization": f"Bearer {SERVE_TOKEN}"})
        assert reply.status == 200 and json.loads(reply.body)["boolean"] is True
        assert clean.seen[-1].headers["Authorization"] == f"Bearer {UPSTREAM_TOKEN}"
    finally:
        process.send_signal(signal.SIGTERM)  # as a service manager: workers stop, exit 0
        assert process.wait(timeout=30) == 0
